//go:build cgo

package conformance

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// needData ends the test when the backend test data or ONNX Runtime is
// missing (a skip, or a failure under CI: see package testenv).
func needData(t *testing.T) {
	t.Helper()
	testenv.Backend(t, "node")
	testenv.ORT(t, onnxrun.Init())
}

// copyCase copies a backend test case into a temporary folder "node".
func copyCase(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join(DefaultRoot, "node", name)
	dst := filepath.Join(t.TempDir(), "node", name)
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// corruptAbs copies node/test_abs and adds 0.5 to element [1 2 3] of its
// expected output.
func corruptAbs(t *testing.T) []Case {
	t.Helper()
	dir := copyCase(t, "test_abs")
	out := filepath.Join(dir, "test_data_set_0", "output_0.pb")
	tn, err := onnxfile.ReadTensorProto(out)
	if err != nil {
		t.Fatal(err)
	}
	i := 1*20 + 2*5 + 3
	v := math.Float32frombits(binary.LittleEndian.Uint32(tn.Raw[4*i:]))
	binary.LittleEndian.PutUint32(tn.Raw[4*i:], math.Float32bits(v+0.5))
	b, err := onnxfile.MarshalTensor(tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := Discover(filepath.Dir(dir))
	if err != nil || len(cases) != 1 || cases[0].Name != "node/test_abs" {
		t.Fatalf("Discover: %v %v", cases, err)
	}
	return cases
}

// list parses an expected-failure list written as lines.
func list(t *testing.T, lines ...string) *Expectations {
	t.Helper()
	x, err := ParseExpectations(strings.NewReader(strings.Join(lines, "\n")), "test list")
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestSmallCases(t *testing.T) {
	needData(t)
	want := map[string]struct {
		status   Status
		stage    Stage
		category string
	}{
		"node/test_abs":                          {Passed, "", ""},
		"node/test_add_bcast":                    {Passed, "", ""},
		"node/test_argmax_default_axis_example":  {Passed, "", ""}, // int64 output, exact
		"node/test_equal":                        {Passed, "", ""}, // bool output
		"node/test_if":                           {Passed, "", ""}, // subgraphs
		"simple/test_single_relu_model":          {Passed, "", ""},
		"pytorch-operator/test_operator_exp":     {Passed, "", ""},
		"node/test_sequence_insert_at_back":      {Passed, "", ""}, // int64 sequence in and out
		"node/test_sequence_map_add_2_sequences": {Passed, "", ""}, // two float sequences in and out
		"node/test_cast_FLOAT16_to_FLOAT":        {Passed, "", ""}, // float16 input
		"node/test_cast_FLOAT_to_FLOAT16":        {Passed, "", ""}, // float16 output
		"node/test_cast_BFLOAT16_to_FLOAT":       {Passed, "", ""}, // bfloat16 input stored as uint16
		"node/test_loop13_seq":                   {ExpectedFailure, StageFeed, "binding-empty-sequence"},
		// The expected bfloat16s were truncated, ORT rounds to nearest.
		"node/test_cast_FLOAT_to_BFLOAT16":        {ExpectedFailure, StageCompare, "ort-differs"},
		"node/test_castlike_FLOAT_to_BFLOAT16":    {ExpectedFailure, StageRun, "data-does-not-fit"},
		"node/test_lstm_batchwise":                {ExpectedFailure, StageLoad, "unsupported-attribute"},
		"node/test_optional_get_element_sequence": {ExpectedFailure, StageFeed, "binding-optional"},
		"pytorch-operator/test_operator_mm":       {ExpectedFailure, StageLoad, "no-kernel"},
		"node/test_training_dropout":              {ExpectedFailure, StageCompare, "random-output"},
	}
	var cases []Case
	for name := range want {
		cs, err := Discover(filepath.Join(DefaultRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, cs...)
	}
	rep, err := Run(cases, Options{Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total != len(want) || rep.Passed != 12 || rep.ExpectedFailures != 7 || !rep.OK() || rep.RoundTripEqual != len(want) {
		t.Errorf("report: total %d passed %d expected failures %d failed %d unexpectedly passing %d round trips %d",
			rep.Total, rep.Passed, rep.ExpectedFailures, rep.Failed, rep.UnexpectedlyPassing, rep.RoundTripEqual)
	}
	for _, r := range rep.Cases {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected case %s", r.Name)
			continue
		}
		if r.Status != w.status || r.Stage != w.stage {
			t.Errorf("%s: %s at %q (%s), want %s at %q", r.Name, r.Status, r.Stage, r.Reason, w.status, w.stage)
		}
		if w.category != "" && (r.Expected == nil || r.Expected.Category != w.category) {
			t.Errorf("%s: entry %+v, want category %s", r.Name, r.Expected, w.category)
		}
		if r.Status == Passed && (r.DataSets < 1 || r.MaxAbsErr > 1e-3 || r.Reason != "") {
			t.Errorf("%s: %d data sets, max abs err %g, reason %q", r.Name, r.DataSets, r.MaxAbsErr, r.Reason)
		}
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb, false); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"node", "total", "expected failures by category:", "binding-empty-sequence", "built-in " + BuiltinListPath} {
		if !strings.Contains(sb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, sb.String())
		}
	}
}

// TestCorruptedExpectedOutputFails: a wrong expected output is a failure,
// never excused.
func TestCorruptedExpectedOutputFails(t *testing.T) {
	needData(t)
	cases := corruptAbs(t)
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"built-in list", Options{Backend: onnxrun.BackendORT}},
		{"tight tolerance", Options{Backend: onnxrun.BackendORT, ATol: 1e-9, RTol: 1e-9}},
		// An entry for another stage does not excuse a mismatch.
		{"listed at another stage", Options{Backend: onnxrun.BackendORT, Expected: list(t, "node/test_abs\tload\tno-kernel\t-\tno Abs kernel")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(cases, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Cases[0]
			if r.Status != Failed || r.Stage != StageCompare || rep.Failed != 1 || rep.OK() ||
				!strings.Contains(r.Reason, "worst at [1 2 3]") || math.Abs(r.MaxAbsErr-0.5) > 1e-6 {
				t.Errorf("%s at %s: %q, max abs %g; want failed at compare, at [1 2 3] by 0.5", r.Status, r.Stage, r.Reason, r.MaxAbsErr)
			}
			if tc.opt.Expected != nil && !strings.Contains(r.Reason, "expects a failure at load, not compare") {
				t.Errorf("reason %q does not say the stage differs", r.Reason)
			}
		})
	}
	// Listed at the stage where it fails, with its signature (the output
	// that differs), the mismatch is expected.
	rep, err := Run(cases, Options{Backend: onnxrun.BackendORT, Expected: list(t, "node/test_abs\tcompare\tort-differs\t-\ttest_data_set_0: output 0 \"y\" corrupted on purpose")})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Cases[0]; r.Status != ExpectedFailure || !rep.OK() || !strings.Contains(r.Expected.Reason, "corrupted on purpose") {
		t.Errorf("listed: %s %+v", r.Status, r.Expected)
	}
	// Listed at that stage for another output: not excused.
	rep, err = Run(cases, Options{Backend: onnxrun.BackendORT, Expected: list(t, "node/test_abs\tcompare\tort-differs\t-\ttest_data_set_0: output 1 \"z\" differs")})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Cases[0]; r.Status != Failed || rep.OK() || !strings.Contains(r.Reason, "for another reason") {
		t.Errorf("listed for another output: %s %q", r.Status, r.Reason)
	}
}

// TestCorruptedFloat16OutputFails: float16 outputs are compared by value,
// not passed unchecked.
func TestCorruptedFloat16OutputFails(t *testing.T) {
	needData(t)
	dir := copyCase(t, "test_cast_FLOAT_to_FLOAT16")
	out := filepath.Join(dir, "test_data_set_0", "output_0.pb")
	tn, err := onnxfile.ReadTensorProto(out)
	if err != nil {
		t.Fatal(err)
	}
	// Element [1 2] of the [3,4] output becomes the half 1000.0 (0x63d0).
	binary.LittleEndian.PutUint16(tn.Raw[2*(1*4+2):], 0x63d0)
	b, err := onnxfile.MarshalTensor(tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(cases, Options{Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Cases[0]
	if r.Status != Failed || !strings.Contains(r.Reason, "worst at [1 2]") || !strings.Contains(r.Reason, "want 1000") || r.MaxAbsErr < 990 {
		t.Errorf("%s %q max abs %g, want failed at [1 2] against 1000", r.Status, r.Reason, r.MaxAbsErr)
	}
}

// TestListedCaseThatPassesIsReported: an entry for a case that passes
// makes the run fail, so that the list cannot rot; an entry whose outputs
// are random may pass by chance.
func TestListedCaseThatPassesIsReported(t *testing.T) {
	needData(t)
	cases, err := Discover(filepath.Join(DefaultRoot, "node", "test_abs"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(cases, Options{Backend: onnxrun.BackendORT, Expected: list(t, "# a comment", "node/test_abs\tcompare\tort-differs\t-\tsaid to differ")})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Cases[0]
	if r.Status != UnexpectedlyPassing || rep.UnexpectedlyPassing != 1 || rep.OK() ||
		!strings.Contains(r.Reason, "expects it to fail at compare (ort-differs: said to differ)") || !strings.Contains(r.Reason, "make conformance-expected") {
		t.Errorf("%s: %q", r.Status, r.Reason)
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "UNEXPECTEDLY PASSING node/test_abs: passes, but") {
		t.Errorf("table does not report it:\n%s", sb.String())
	}
	rep, err = Run(cases, Options{Backend: onnxrun.BackendORT, Expected: list(t, "node/test_abs\tcompare\trandom-output\trandom\tdrawn at random")})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Cases[0]; r.Status != Passed || !rep.OK() || !strings.Contains(r.Note, "matched by chance") {
		t.Errorf("random entry: %s, note %q", r.Status, r.Note)
	}
}

// faultySession wraps a real session with a runtime bug.
type faultySession struct {
	session
	fault string
}

func (f faultySession) RunData(in map[string]onnxrun.Datum) (map[string]onnxrun.Datum, error) {
	switch f.fault {
	case "error":
		return nil, errors.New("runtime: injected failure")
	case "wrong input":
		// Feed x[0]+1 instead of x[0] for the float input "x".
		in = maps.Clone(in)
		if t, ok := in["x"].(*onnxrun.Tensor); ok {
			if v, ok := t.Data.([]float32); ok {
				v = append([]float32{}, v...)
				v[0]++
				in["x"] = &onnxrun.Tensor{Shape: t.Shape, Data: v}
			}
		}
	}
	out, err := f.session.RunData(in)
	if f.fault == "dropped output" {
		for name := range out {
			delete(out, name)
			break
		}
	}
	return out, err
}

// TestRuntimeBugsFail: whatever the runtime gets wrong is counted as failed,
// never excused; a case on the list keeps failing at its own stage.
func TestRuntimeBugsFail(t *testing.T) {
	needData(t)
	var cases []Case
	for _, name := range []string{"node/test_abs", "node/test_sub", "node/test_max_int16"} {
		cs, err := Discover(filepath.Join(DefaultRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, cs...)
	}
	saved := openSession
	t.Cleanup(func() { openSession = saved })
	for _, tc := range []struct {
		fault  string
		stage  Stage
		reason string
	}{
		{"wrong input", StageCompare, "test_data_set_0: output 0 "},
		{"error", StageRun, "test_data_set_0: runtime: injected failure"},
		{"dropped output", StageCompare, "test_data_set_0: no output "},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			openSession = func(data []byte, opt onnxrun.Options) (session, error) {
				s, err := saved(data, opt)
				if err != nil {
					return nil, err
				}
				return faultySession{s, tc.fault}, nil
			}
			rep, err := Run(cases, Options{Backend: onnxrun.BackendORT})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Failed != 2 || rep.ExpectedFailures != 1 || rep.OK() {
				t.Errorf("failed %d, expected failures %d; want 2 and 1", rep.Failed, rep.ExpectedFailures)
			}
			for _, r := range rep.Cases {
				if r.Name == "node/test_max_int16" { // no kernel: fails at load, before the runtime bug
					if r.Status != ExpectedFailure || r.Stage != StageLoad {
						t.Errorf("%s: %s at %s", r.Name, r.Status, r.Stage)
					}
					continue
				}
				if r.Status != Failed || r.Stage != tc.stage || !strings.Contains(r.Reason, tc.reason) {
					t.Errorf("%s: %s at %s: %q; want failed at %s with %q", r.Name, r.Status, r.Stage, r.Reason, tc.stage, tc.reason)
				}
			}
		})
	}
}

// A model that export cannot read is attnx's failure, never excused.
func TestUnreadableModelFails(t *testing.T) {
	needData(t)
	dir := copyCase(t, "test_abs")
	if err := os.WriteFile(filepath.Join(dir, "model.onnx"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, _ := Discover(dir)
	rep, err := Run(cases, Options{Backend: onnxrun.BackendORT, Expected: list(t, "node/test_abs\tload\tno-kernel\t-\tlisted")})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Cases[0]
	if r.Status != Failed || r.Stage != StageExport || !strings.Contains(r.Reason, "not an ONNX model") || r.RoundTripEqual {
		t.Errorf("unreadable model: %s at %s: %q", r.Status, r.Stage, r.Reason)
	}
}

// TestLocaleCondition: a locale-missing entry applies only while the
// locale is missing; with it installed, the case must pass.
func TestLocaleCondition(t *testing.T) {
	needData(t)
	const name = "simple/test_strnorm_model_monday_casesensintive_lower"
	cases, err := Discover(filepath.Join(DefaultRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := BuiltinExpectations()
	if err != nil {
		t.Fatal(err)
	}
	e, ok := builtin.Entries[name]
	if !ok || e.Condition != "locale-missing:en_US.UTF-8" {
		t.Fatalf("built-in entry %+v", e)
	}
	saved := localeAvailable
	t.Cleanup(func() { localeAvailable = saved })
	if saved("en_US.UTF-8") {
		t.Skip("en_US.UTF-8 is installed here: StringNormalizer runs")
	}
	rep, err := Run(cases, Options{Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Cases[0]; r.Status != ExpectedFailure || r.Stage != StageRun || !strings.Contains(r.Reason, "Failed to construct locale") {
		t.Errorf("locale missing: %s at %s: %q", r.Status, r.Stage, r.Reason)
	}
	// Pretend the locale is installed: the entry no longer excuses the
	// failure (ORT still cannot create it here).
	localeAvailable = func(string) bool { return true }
	rep, err = Run(cases, Options{Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Cases[0]; r.Status != Failed || r.Expected != nil || !strings.Contains(r.Note, "locale en_US.UTF-8 is installed") {
		t.Errorf("locale installed: %s %+v note %q", r.Status, r.Expected, r.Note)
	}
}

func TestNormLocale(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"en_US.UTF-8", "en_US.utf8"},
		{"en_US.utf8", "en_US.utf8"},
		{"de_DE.ISO-8859-1@euro", "de_DE.iso88591@euro"},
		{"C", "C"},
	} {
		if got := normLocale(tc.in); got != tc.want {
			t.Errorf("normLocale(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestJudge covers every verdict without running anything.
func TestJudge(t *testing.T) {
	entry := func(stage Stage, cond, why string) *Expectation {
		return &Expectation{Case: "node/x", Stage: stage, Category: "cat", Condition: cond, Reason: why}
	}
	noKernel := "Could not find an implementation for BitShift(11) node with name ''"
	for _, tc := range []struct {
		name   string
		stage  Stage
		got    string
		e      *Expectation
		want   Status
		reason string
	}{
		{"passes unlisted", "", "", nil, Passed, ""},
		{"fails unlisted", StageRun, "boom", nil, Failed, "boom"},
		{"fails as listed", StageLoad, "onnxrun: creating session: " + noKernel, entry(StageLoad, CondAlways, noKernel), ExpectedFailure, noKernel},
		{"fails at the listed stage for another reason", StageLoad, "onnxrun: creating session: Type Error: bad graph", entry(StageLoad, CondAlways, noKernel), Failed,
			"(the expected-failure list expects a failure at load for another reason: cat: " + noKernel},
		{"fails at another stage", StageCompare, "boom", entry(StageLoad, CondAlways, "why"), Failed, "boom (the expected-failure list expects a failure at load, not compare: cat: why)"},
		{"passes listed", "", "", entry(StageCompare, CondAlways, "why"), UnexpectedlyPassing, "passes, but the expected-failure list expects it to fail at compare (cat: why)"},
		{"random passes", "", "", entry(StageCompare, CondRandom, "why"), Passed, ""},
		{"random fails", StageCompare, "boom", entry(StageCompare, CondRandom, "why"), ExpectedFailure, "boom"},
		{"random fails elsewhere", StageRun, "boom", entry(StageCompare, CondRandom, "why"), Failed, "expects a failure at compare, not run"},
		{"the listed output differs", StageCompare, `test_data_set_0: output 0 "y": max abs 0.1, 3 of 12 outside`,
			entry(StageCompare, CondAlways, `test_data_set_0: output 0 "y": 3 of 12 values differ`), ExpectedFailure, ""},
		{"another output differs", StageCompare, `test_data_set_0: output 1 "z": max abs 0.1`,
			entry(StageCompare, CondAlways, `test_data_set_0: output 0 "y": 3 of 12 values differ`), Failed, "for another reason"},
		{"a hand-written compare entry by its count", StageCompare, `test_data_set_0: output 0 "out": 5 of 12 outside rtol`,
			entry(StageCompare, CondAlways, "ORT rounds, so 5 of the 12 outputs differ [manual: evidence]"), ExpectedFailure, ""},
		{"the listed value cannot be fed", StageFeed, `input "opt" is an optional, which the Go binding cannot feed or read`,
			entry(StageFeed, CondAlways, `input "opt" is an optional, which the Go binding (onnxruntime_go) cannot feed`), ExpectedFailure, ""},
		{"another value cannot be fed", StageFeed, `input "seq" is an empty sequence, which onnxruntime_go cannot create`,
			entry(StageFeed, CondAlways, `input "opt" is an optional, which the Go binding (onnxruntime_go) cannot feed`), Failed, "for another reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := CaseResult{Name: "node/x", Stage: tc.stage, Reason: tc.got}
			judge(&r, tc.e)
			if r.Status != tc.want || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("%s %q, want %s with %q", r.Status, r.Reason, tc.want, tc.reason)
			}
		})
	}
}

func TestParseExpectations(t *testing.T) {
	good := "# made by hand\n# on a Tuesday\n#\n# case\tstage\tcategory\tcondition\treason\n" +
		"node/test_a\tload\tno-kernel\t-\tno kernel\n\n" +
		"simple/test_b\trun\tmissing-locale\tlocale-missing:en_US.UTF-8\tno locale\r\n" +
		"node/test_c\tcompare\trandom-output\trandom\trandom\n"
	x, err := ParseExpectations(strings.NewReader(good), "good.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Entries) != 3 || x.Source != "good.tsv" || strings.Join(x.Header, "|") != "made by hand|on a Tuesday" {
		t.Errorf("parsed %d entries, header %q", len(x.Entries), x.Header)
	}
	if e := x.Entries["simple/test_b"]; e != (Expectation{"simple/test_b", StageRun, "missing-locale", "locale-missing:en_US.UTF-8", "no locale"}) {
		t.Errorf("entry %+v", e)
	}
	for _, tc := range []struct{ line, want string }{
		{"node/test_a\tload\tno-kernel\tno kernel", "bad.tsv:2: 4 tab-separated fields, want 5"},
		{"test_a\tload\tno-kernel\t-\tno kernel", `bad.tsv:2: case "test_a": want folder/test_name`},
		{"node/test_a\tlaod\tno-kernel\t-\tno kernel", `bad.tsv:2: node/test_a: stage "laod", want one of compare, data, feed, load, run`},
		{"node/test_a\texport\tno-kernel\t-\tno kernel", `stage "export"`},
		{"node/test_a\tload\t\t-\tno kernel", "empty category or reason"},
		{"node/test_a\tload\tno-kernel\tsometimes\tno kernel", `condition "sometimes", want "-", "random" or "locale-missing:"NAME`},
		{"node/test_a\tload\tno-kernel\tlocale-missing:\tno kernel", `condition "locale-missing:"`},
		{"node/test_x\tload\tno-kernel\t-\tno kernel", "bad.tsv:2: node/test_x is listed twice"},
	} {
		_, err := ParseExpectations(strings.NewReader("node/test_x\tload\tk\t-\tr\n"+tc.line), "bad.tsv")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.line, err, tc.want)
		}
	}
	if _, err := LoadExpectations("/no/such/list.tsv"); err == nil || !strings.Contains(err.Error(), "/no/such/list.tsv") {
		t.Errorf("missing file: %v", err)
	}
}

// TestBuiltinList: the built-in list parses, was made with the ONNX
// Runtime attnx loads, and names only cases of the test data.
func TestBuiltinList(t *testing.T) {
	needData(t)
	x, err := BuiltinExpectations()
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Entries) < 50 {
		t.Errorf("%d entries", len(x.Entries))
	}
	header := strings.Join(x.Header, "\n")
	if !strings.Contains(header, "ONNX Runtime "+onnxrun.Version()+" (onnxruntime-node") {
		t.Errorf("the list was not made with ONNX Runtime %s (regenerate it: make conformance-expected):\n%s", onnxrun.Version(), header)
	}
	all, err := DiscoverDefault()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range all {
		names[c.Name] = true
	}
	for name := range x.Entries {
		if !names[name] {
			t.Errorf("entry %s names no case under %s", name, DefaultRoot)
		}
	}
}

// TestDefaultSuite runs every case of the test data against the built-in
// list: nothing fails and nothing on the list passes, except random
// outputs matching by chance.
func TestDefaultSuite(t *testing.T) {
	needData(t)
	if testing.Short() {
		t.Skip("runs all 1072 backend cases")
	}
	cases, err := DiscoverDefault()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(cases, Options{Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Cases {
		if r.Status == Failed || r.Status == UnexpectedlyPassing {
			t.Errorf("%s %s at %s: %s", r.Status, r.Name, r.Stage, r.Reason)
		}
	}
	applied, lucky := 0, 0
	for _, r := range rep.Cases {
		if r.Expected != nil {
			applied++
			if r.Status == Passed {
				lucky++
			}
		}
	}
	if rep.Total != 1072 || rep.RoundTripEqual != 1072 || rep.ExpectedFailures+lucky != applied || rep.Passed+rep.ExpectedFailures != rep.Total {
		t.Errorf("total %d, round trips %d, passed %d, expected failures %d, entries applied %d (%d random passes)",
			rep.Total, rep.RoundTripEqual, rep.Passed, rep.ExpectedFailures, applied, lucky)
	}
}

func TestDiscover(t *testing.T) {
	needData(t)
	cs, err := Discover(filepath.Join(DefaultRoot, "simple"))
	if err != nil || len(cs) != 23 || cs[0].Folder != "simple" || !strings.HasPrefix(cs[0].Name, "simple/test_") {
		t.Errorf("simple: %d cases %v", len(cs), err)
	}
	all, err := DiscoverDefault()
	if err != nil || len(all) != 1072 {
		t.Errorf("default: %d cases, want 1072: %v", len(all), err)
	}
	if _, err := Discover(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no test cases") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := Discover("/no/such/dir"); err == nil {
		t.Error("missing dir accepted")
	}
}

// TestSequenceOutputsAreCompared: sequence outputs are compared element by
// element; a wrong length or a wrong element fails.
func TestSequenceOutputsAreCompared(t *testing.T) {
	needData(t)
	tests := []struct {
		name, from, to string
		want           string
	}{
		// input_0 is the sequence before the insertion: 3 tensors, not 4.
		{"test_sequence_insert_at_back", "input_0.pb", "output_0.pb", `output 0 "output_sequence": sequence of 4 tensors, want 3`},
		// y0 and y1 swapped: element 0 is [6], y1's is [2].
		{"test_sequence_map_identity_2_sequences", "output_1.pb", "output_0.pb", `output 0 "y0": sequence element 0: shape [6], want [2]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyCase(t, tc.name)
			set := filepath.Join(dir, "test_data_set_0")
			b, err := os.ReadFile(filepath.Join(set, tc.from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(set, tc.to), b, 0o644); err != nil {
				t.Fatal(err)
			}
			cases, err := Discover(dir)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(cases, Options{Backend: onnxrun.BackendORT})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Cases[0]; r.Status != Failed || r.Stage != StageCompare || !strings.Contains(r.Reason, tc.want) {
				t.Errorf("%s at %s (%s), want failed at compare with %q", r.Status, r.Stage, r.Reason, tc.want)
			}
		})
	}
}
