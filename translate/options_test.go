package translate

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/modeldir"
)

// TestDecodingOptionsDoc: docs/decoding.md is DecodingOptions' table as
// generated; every option names a field of Options and, where it has one,
// a key of attnx.json's defaults. (The CLI's flags and serve's request
// fields are checked against the table in their own packages.)
func TestDecodingOptionsDoc(t *testing.T) {
	const path = "../docs/decoding.md"
	want := DecodingOptionsMarkdown()
	if os.Getenv("ATTNX_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Errorf("%s is stale (%v): run ATTNX_UPDATE_DOCS=1 go test ./translate -run TestDecodingOptionsDoc", path, err)
	}
	opts := reflect.TypeFor[Options]()
	defaults := map[string]bool{}
	for f := range reflect.TypeFor[modeldir.Defaults]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		defaults[name] = true
	}
	for _, o := range DecodingOptions {
		if _, ok := opts.FieldByName(o.Go); !ok {
			t.Errorf("%s: no such field of Options", o.Go)
		}
		if o.Default != "" && !defaults[o.Default] {
			t.Errorf("%s: attnx.json's defaults have no %q", o.Go, o.Default)
		}
	}
}

// TestEveryOptionsFieldInTable: every field of Options and CallOptions is
// a row of DecodingOptions or one of the settings that are not decoding
// rules, so that a field added without a row (and so without the rules
// that implement it) fails here; each row names the rules that take it,
// and why the others do not.
func TestEveryOptionsFieldInTable(t *testing.T) {
	notDecoding := map[string]bool{
		"Backend": true, "Threads": true, "Device": true, "OptLevel": true, "ORTLibrary": true, "Engine": true, "MaxSourceLen": true,
		"BatchSize": true, "UnknownToUNK": true, "Pretokenized": true, "NoModelDefaults": true,
		"MaxIdleBytes": true, "MaxLiveBytes": true, "WithoutAttention": true, "AsTestSet": true, "MaxLenCap": true, "PerSentenceLimits": true,
		// Each row's forced start (the package documentation's "Target
		// prefixes"): input, like the sources, rather than a setting.
		"Prefixes": true,
	}
	rows := map[string]DecodingOption{}
	for _, o := range DecodingOptions {
		rows[o.Go] = o
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Options](), reflect.TypeFor[CallOptions]()} {
		for f := range typ.Fields() {
			if _, ok := rows[f.Name]; !ok && !notDecoding[f.Name] {
				t.Errorf("%s.%s: no row of DecodingOptions (add one, with the rules that implement it)", typ.Name(), f.Name)
			}
		}
	}
	known := map[string]bool{RulesSpec: true, RulesOpenNMT: true, RulesJoeyNMT: true, RulesFairseq: true}
	for _, o := range DecodingOptions {
		if o.Rules == "all" {
			if o.Lacks != "" {
				t.Errorf("%s: taken by all rules, yet Lacks says %q", o.Go, o.Lacks)
			}
			continue
		}
		for r := range strings.SplitSeq(o.Rules, ", ") {
			if !known[r] {
				t.Errorf("%s: Rules %q names %q, no rules of attnx", o.Go, o.Rules, r)
			}
		}
		if o.Lacks == "" {
			t.Errorf("%s: Rules %q without the reason the others lack it", o.Go, o.Rules)
		}
	}
}

// TestRulesRefuseWhatTheyLack: each setting given under rules whose
// search does not implement it is refused by its name; before, OpenNMT-py's
// rules ignored NoRepeatNgram and RepetitionPenalty and decoded as without
// them. Every row of DecodingOptions is tried, with a value set through
// reflect, under each rules it lacks.
func TestRulesRefuseWhatTheyLack(t *testing.T) {
	value := func(f reflect.Value) {
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(2)
		case reflect.Uint64:
			f.SetUint(7)
		case reflect.Float64:
			f.SetFloat(1.5)
		case reflect.String:
			f.SetString("wu")
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"."}))
		case reflect.Pointer:
			f.Set(reflect.ValueOf(new(1.5)))
		default:
			t.Fatalf("no test value for a %s", f.Type())
		}
	}
	tried := 0
	for _, o := range DecodingOptions {
		for _, rules := range []string{RulesSpec, RulesOpenNMT, RulesJoeyNMT, RulesFairseq} {
			if o.Takes(rules) {
				continue
			}
			opt := Options{Rules: rules, Beam: 5, Engine: EngineSteps}
			value(reflect.ValueOf(&opt).Elem().FieldByName(o.Go))
			err := checkOptions(opt)
			if err == nil || !strings.Contains(err.Error(), o.Go) {
				t.Errorf("%s under Rules %q: %v, want a refusal naming %s", o.Go, rules, err, o.Go)
			}
			tried++
		}
	}
	if tried == 0 {
		t.Fatal("no setting is refused under any rules")
	}
	for _, c := range []struct {
		name string
		opt  Options
		want string
	}{
		{"no-repeat n-gram under opennmt", Options{Rules: RulesOpenNMT, Beam: 5, NoRepeatNgram: 2},
			`NoRepeatNgram = 2: Rules "opennmt" do not implement it: OpenNMT-py has no such option`},
		{"repetition penalty under opennmt", Options{Rules: RulesOpenNMT, Beam: 5, RepetitionPenalty: 1.5},
			`RepetitionPenalty = 1.5: Rules "opennmt" do not implement it: neither OpenNMT-py nor fairseq has a repetition penalty (it goes with Rules spec, joeynmt)`},
		{"wu's form under fairseq", Options{Rules: RulesFairseq, Beam: 5, LengthPenaltyWu: true},
			`LengthPenaltyWu = true: Rules "fairseq" do not implement it: fairseq ranks by score / len ** lenpen only`},
		{"OpenNMT-py's form under spec", Options{Beam: 5, OpenNMTPenalty: "wu"},
			`OpenNMTPenalty = wu: Rules "spec" do not implement it`},
		{"a seed without sampling", Options{Beam: 5, Seed: 3},
			`Seed = 3: Rules "spec" do not implement it: it seeds Sampling's draws`},
	} {
		if err := checkOptions(c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	for _, opt := range []Options{
		{Rules: RulesJoeyNMT, Beam: 5, NoRepeatNgram: 2, RepetitionPenalty: 1.5, LengthPenaltyWu: true},
		{Beam: 5, NoRepeatNgram: 2, RepetitionPenalty: 1.5, LengthPenaltyWu: true},
		{Rules: RulesOpenNMT, Beam: 5, OpenNMTPenalty: "wu", BlockNgram: 2},
		{Rules: RulesFairseq, Sampling: true, Seed: 3, Beam: 2, NBest: 2},
		{Beam: 5, CoveragePenalty: "none"},
	} {
		if err := checkOptions(opt); err != nil {
			t.Errorf("%+v: %v", opt, err)
		}
	}
}

// TestResolveDecodingRepeatsFollowRules: a model's repetition defaults
// (JoeyNMT's) are not carried into rules that lack them, which would then
// refuse them unasked; under its own rules they are taken.
func TestResolveDecodingRepeatsFollowRules(t *testing.T) {
	d := &modeldir.Defaults{Rules: RulesJoeyNMT, Beam: 5, NoRepeatNgram: 3, RepetitionPenalty: 1.2}
	for _, c := range []struct {
		rules       string
		noRepeat    int
		repetitions float64
	}{{"", 3, 1.2}, {RulesSpec, 3, 1.2}, {RulesJoeyNMT, 3, 1.2}, {RulesOpenNMT, 0, 0}, {RulesFairseq, 0, 0}} {
		r := ResolveDecoding(Options{Rules: c.rules}, d)
		if r.NoRepeatNgram != c.noRepeat || r.RepetitionPenalty != c.repetitions {
			t.Errorf("Rules %q: NoRepeatNgram %d, RepetitionPenalty %v; want %d, %v", c.rules, r.NoRepeatNgram, r.RepetitionPenalty, c.noRepeat, c.repetitions)
		}
		if err := checkRules(r); err != nil {
			t.Errorf("Rules %q: the resolved options are refused: %v", c.rules, err)
		}
	}
}

// TestOpenAndCallRefuseWhatRulesLack: the Go API refuses, at Open and per
// call, NoRepeatNgram and RepetitionPenalty under OpenNMT-py's rules,
// which decoded as without them; under attnx's rules a call takes them.
func TestOpenAndCallRefuseWhatRulesLack(t *testing.T) {
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	const want = `NoRepeatNgram = 2: Rules "opennmt" do not implement it`
	tr, err := Open(dir, Options{Threads: 1, Backend: "go", Engine: EngineSteps, Rules: RulesOpenNMT, Beam: 3, NoRepeatNgram: 2})
	if err == nil {
		tr.Close()
	}
	var re *RulesError
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &re) || re.Option.Go != "NoRepeatNgram" {
		t.Errorf("Open: %v, want a *RulesError with %q", err, want)
	}
	tr, err = Open(dir, Options{Threads: 1, Backend: "go", Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, c := range []struct {
		opt  CallOptions
		want string
	}{
		{CallOptions{Rules: RulesOpenNMT, Beam: 3, NoRepeatNgram: new(2)}, want},
		{CallOptions{Rules: RulesOpenNMT, Beam: 3, RepetitionPenalty: new(1.5)}, `RepetitionPenalty = 1.5: Rules "opennmt" do not implement it`},
		{CallOptions{Rules: RulesFairseq, Beam: 3, LengthPenaltyWu: new(true)}, `LengthPenaltyWu = true: Rules "fairseq" do not implement it`},
	} {
		if err := tr.CheckCall(c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckCall(%+v) = %v, want %q", c.opt, err, c.want)
		}
	}
	if err := tr.CheckCall(CallOptions{Rules: RulesSpec, Beam: 3, NoRepeatNgram: new(2), RepetitionPenalty: new(1.5)}); err != nil {
		t.Errorf("repetition rules under spec: %v", err)
	}
}
