package modeldir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/quant"
)

const fixtures = "../testdata/fixtures"

// ckpt returns a fixture checkpoint: bahdanau_b4_l2 has both formats
// (H=13, L=2, Vs=19, Vt=23).
func ckpt(name, file string) string { return filepath.Join(fixtures, name, file) }

func mustExport(t *testing.T, src, dir string, opt Options) *Result {
	t.Helper()
	res, err := Export(src, dir, opt)
	if err != nil {
		t.Fatalf("Export(%s, %s): %v", src, dir, err)
	}
	return res
}

// entries lists a directory's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestExportRoundTrip(t *testing.T) {
	for _, file := range []string{"checkpoint.pt", "checkpoint.safetensors"} {
		t.Run(file, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "model")
			res := mustExport(t, ckpt("bahdanau_b4_l2", file), dir, Options{})
			want := attention.Config{Arch: attention.Bahdanau, Cell: attention.LSTM, Hidden: 13, Embedding: 13, Layers: 2, SrcVocab: 19, TgtVocab: 23}
			if res.Config != want {
				t.Errorf("config %+v, want %+v", res.Config, want)
			}
			if got := strings.Join(entries(t, dir), " "); got != "attnx.json decoder.onnx encoder.onnx" {
				t.Errorf("dir holds %s", got)
			}
			if got := entries(t, parent); len(got) != 1 {
				t.Errorf("parent holds %v: temporary directories left behind", got)
			}
			if len(res.Files) != 3 || res.Files[0].Name != EncoderFile || res.Files[1].Name != DecoderFile || res.Files[2].Name != InfoFile {
				t.Fatalf("files %+v", res.Files)
			}
			for _, f := range res.Files[:2] {
				st, err := os.Stat(filepath.Join(dir, f.Name))
				if err != nil || st.Size() != f.Bytes || f.Nodes < 10 {
					t.Errorf("%+v: stat %v %v", f, st, err)
				}
				mp, err := onnxfile.Load(filepath.Join(dir, f.Name))
				if err != nil {
					t.Fatal(err)
				}
				s := onnxfile.Summarize(mp)
				if s.Nodes != f.Nodes || s.Metadata["attnx.arch"] != "bahdanau" || s.Opsets[0].Version != 17 {
					t.Errorf("%s: summary %+v, result %+v", f.Name, s, f)
				}
			}
			info, err := ReadInfo(filepath.Join(dir, InfoFile))
			if err != nil {
				t.Fatal(err)
			}
			if info.Config != want || info.Special != attention.DefaultSpecial || info.Opset != 17 ||
				info.Source != file || info.Producer != Producer || info.Files["encoder"] != EncoderFile ||
				info.Files["decoder"] != DecoderFile || len(info.Files) != 2 || info.SrcTokens != nil {
				t.Errorf("attnx.json %+v", info)
			}
		})
	}
}

// TestExportCreatesParents: -o out/demo/luong in a fresh checkout works as
// mkdir -p would; a parent that is a file is an error naming it.
func TestExportCreatesParents(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "out", "demo", "luong")
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{})
	if got := strings.Join(entries(t, dir), " "); got != "attnx.json decoder.onnx encoder.onnx" {
		t.Errorf("dir holds %s", got)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Export(ckpt("luong-dot_b1_l1", "checkpoint.pt"), filepath.Join(file, "m"), Options{})
	if err == nil || !strings.Contains(err.Error(), "creating the parent of "+filepath.Join(file, "m")) {
		t.Errorf("error %v, want one naming the parent", err)
	}
}

func TestExportNotes(t *testing.T) {
	res := mustExport(t, ckpt("bahdanau_b1_l1", "checkpoint.pt"), filepath.Join(t.TempDir(), "m"), Options{Arch: attention.Bahdanau})
	joined := strings.Join(res.Notes, "\n")
	if !strings.Contains(joined, "ignoring decoder.attn_combine.weight") {
		t.Errorf("notes %q lack the ignored attn_combine keys", res.Notes)
	}
}

func TestExportGreedy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	res := mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{Greedy: true})
	if len(res.Files) != 4 || res.Files[2].Name != GreedyFile || res.Files[2].Nodes <= res.Files[1].Nodes {
		t.Fatalf("files %+v", res.Files)
	}
	info, err := ReadInfo(filepath.Join(dir, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Files["greedy"] != GreedyFile {
		t.Errorf("files %v", info.Files)
	}
}

// TestExportBeam: --beam writes beam.onnx after the other graphs (with
// --greedy too), recorded as files.beam, with K, max_len and the length
// penalty as inputs.
func TestExportBeam(t *testing.T) {
	for _, greedy := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "m")
		res := mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{Greedy: greedy, Beam: true})
		beam := len(res.Files) - 2 // attnx.json is last
		if want := map[bool]int{false: 4, true: 5}[greedy]; len(res.Files) != want || res.Files[beam].Name != BeamFile || res.Files[beam].Role != RoleBeam || res.Files[beam].Nodes <= res.Files[1].Nodes {
			t.Fatalf("greedy %v: files %+v", greedy, res.Files)
		}
		info, err := ReadInfo(filepath.Join(dir, InfoFile))
		if err != nil {
			t.Fatal(err)
		}
		if info.Files[RoleBeam] != BeamFile || (info.Files[RoleGreedy] != "") != greedy {
			t.Errorf("greedy %v: files %v", greedy, info.Files)
		}
	}
}

func writeVocab(t *testing.T, dir, name string, toks []string) string {
	t.Helper()
	data, _ := json.Marshal(toks)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func vocab(n int, specials ...string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tok%d", i)
	}
	copy(out, specials)
	return out
}

func TestExportVocabularies(t *testing.T) {
	tmp := t.TempDir()
	// Specials in an unusual order: the ids must come from the positions.
	src := writeVocab(t, tmp, "src.json", vocab(19, "<pad>", "<unk>"))
	tgt := writeVocab(t, tmp, "tgt.json", vocab(23, "<pad>", "<eos>", "<sos>"))
	dir := filepath.Join(tmp, "m")
	eos := int64(7)
	res := mustExport(t, ckpt("bahdanau_b4_l2", "checkpoint.pt"), dir, Options{SrcVocab: src, TgtVocab: tgt, EOS: &eos})
	want := attention.Special{SOS: 2, EOS: 7, PAD: 0, UNK: 1}
	if res.Special != want {
		t.Errorf("special %+v, want %+v", res.Special, want)
	}
	info, err := ReadInfo(filepath.Join(dir, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Special != want || len(info.SrcTokens) != 19 || len(info.TgtTokens) != 23 || info.TgtTokens[2] != "<sos>" {
		t.Errorf("attnx.json special %+v, %d/%d tokens", info.Special, len(info.SrcTokens), len(info.TgtTokens))
	}
}

func TestExportErrors(t *testing.T) {
	tmp := t.TempDir()
	corrupt := filepath.Join(tmp, "corrupt.pt")
	os.WriteFile(corrupt, []byte("this is not a checkpoint at all"), 0o644)
	truncated := filepath.Join(tmp, "truncated.pt")
	full, _ := os.ReadFile(ckpt("luong-dot_b1_l1", "checkpoint.pt"))
	os.WriteFile(truncated, full[:len(full)/2], 0o644)
	bigSrc := writeVocab(t, tmp, "src20.json", vocab(20, "<pad>", "<unk>"))
	tgtNoSOS := writeVocab(t, tmp, "tgt-nosos.json", vocab(23, "<pad>", "<eos>"))
	notArray := filepath.Join(tmp, "obj.json")
	os.WriteFile(notArray, []byte(`{"a": 1}`), 0o644)
	good := ckpt("bahdanau_b4_l2", "checkpoint.pt")
	big := int64(23)
	cases := []struct {
		name, src string
		opt       Options
		want      string
	}{
		{"missing", filepath.Join(tmp, "nope.pt"), Options{}, "reading checkpoint: open " + filepath.Join(tmp, "nope.pt") + ": no such file or directory"},
		{"corrupt", corrupt, Options{}, "reading checkpoint: " + corrupt + ": not a PyTorch zip checkpoint or safetensors file"},
		{"truncated", truncated, Options{}, "reading checkpoint: " + truncated + ": "},
		{"arch", good, Options{Arch: attention.LuongDot}, good + ": --arch luong-dot disagrees with the checkpoint: its keys (decoder.fc_hidden.weight, decoder.fc_encoder.weight, decoder.weight) are those of a bahdanau model"},
		{"vocab size", good, Options{SrcVocab: bigSrc}, "--src-vocab " + bigSrc + " has 20 tokens, but the checkpoint's source vocabulary has 19 (its embedding has 19 rows)"},
		{"vocab missing", good, Options{TgtVocab: filepath.Join(tmp, "none.json")}, "--tgt-vocab: open " + filepath.Join(tmp, "none.json") + ": no such file or directory"},
		{"vocab not array", good, Options{TgtVocab: notArray}, "--tgt-vocab " + notArray + ": not a JSON array of strings (index = token id): json: cannot unmarshal object"},
		{"vocab no sos", good, Options{TgtVocab: tgtNoSOS}, "--tgt-vocab " + tgtNoSOS + " has no <sos> token; pass --sos N to name its id"},
		{"special range", good, Options{EOS: &big}, "special token eos = 23: outside the target vocabulary [0, 23)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			_, err := Export(c.src, dir, c.opt)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error %v\nwant prefix %q", err, c.want)
			}
			if got := entries(t, parent); len(got) != 0 {
				t.Errorf("failed export left %v behind", got)
			}
		})
	}
}

func TestExportRefusesNonEmptyDir(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("mine"), 0o644)
	src := ckpt("luong-dot_b1_l1", "checkpoint.pt")
	_, err := Export(src, dir, Options{})
	if err == nil || err.Error() != dir+" is not empty; pass --force to replace it" {
		t.Errorf("error %v", err)
	}
	// --force does not delete a directory that is not a model directory.
	_, err = Export(src, dir, Options{Force: true})
	if err == nil || err.Error() != dir+" is not empty and has no attnx.json: --force only replaces attnx model directories; remove it yourself or choose another -o" {
		t.Errorf("error %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "mine" {
		t.Error("keep.txt was touched")
	}
	file := filepath.Join(parent, "afile")
	os.WriteFile(file, nil, 0o644)
	if _, err := Export(src, file, Options{Force: true}); err == nil || err.Error() != file+" exists and is not a directory" {
		t.Errorf("error %v", err)
	}
	// An empty directory is fine without --force.
	empty := filepath.Join(parent, "empty")
	os.Mkdir(empty, 0o755)
	if res := mustExport(t, src, empty, Options{}); res.Replaced {
		t.Error("an empty directory counts as replaced")
	}
	if got := strings.Join(entries(t, parent), " "); got != "afile empty out" {
		t.Errorf("parent holds %s", got)
	}
}

func TestExportForceReplaces(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "m")
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{})
	os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644)
	res := mustExport(t, ckpt("luong-general_b1_l1", "checkpoint.pt"), dir, Options{Force: true})
	if !res.Replaced || res.Config.Arch != attention.LuongGeneral {
		t.Errorf("result %+v", res)
	}
	if got := strings.Join(entries(t, dir), " "); got != "attnx.json decoder.onnx encoder.onnx" {
		t.Errorf("dir holds %s (old files must go)", got)
	}
	info, err := ReadInfo(filepath.Join(dir, InfoFile))
	if err != nil || info.Arch != attention.LuongGeneral {
		t.Errorf("attnx.json %+v, %v", info, err)
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Errorf("parent holds %v", got)
	}
}

func TestExportFailureKeepsOldDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "m")
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{})
	before, _ := os.ReadFile(filepath.Join(dir, InfoFile))
	os.Chmod(parent, 0o555)
	defer os.Chmod(parent, 0o755)
	_, err := Export(ckpt("luong-general_b1_l1", "checkpoint.pt"), dir, Options{Force: true})
	if err == nil || !strings.Contains(err.Error(), "creating a temporary directory next to "+dir) {
		t.Errorf("error %v", err)
	}
	os.Chmod(parent, 0o755)
	after, _ := os.ReadFile(filepath.Join(dir, InfoFile))
	if !bytes.Equal(before, after) {
		t.Error("the old model directory changed")
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Errorf("parent holds %v", got)
	}
	// An unwritable parent for a new directory.
	ro := filepath.Join(parent, "ro")
	os.Mkdir(ro, 0o555)
	if _, err := Export(ckpt("luong-dot_b1_l1", "checkpoint.pt"), filepath.Join(ro, "m"), Options{}); err == nil {
		t.Error("export into an unwritable parent succeeded")
	}
	if got := entries(t, ro); len(got) != 0 {
		t.Errorf("unwritable parent holds %v", got)
	}
}

// TestExportFailureMidway fails after decoder.onnx is written: no DIR, no
// temporary directory, and with --force the old DIR untouched.
func TestExportFailureMidway(t *testing.T) {
	testHookAfterFile = func(name string) error {
		if name == DecoderFile {
			return fmt.Errorf("injected failure after %s", name)
		}
		return nil
	}
	defer func() { testHookAfterFile = nil }()
	parent := t.TempDir()
	dir := filepath.Join(parent, "m")
	_, err := Export(ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{})
	if err == nil || err.Error() != "injected failure after decoder.onnx" {
		t.Errorf("error %v", err)
	}
	if got := entries(t, parent); len(got) != 0 {
		t.Errorf("parent holds %v", got)
	}
	testHookAfterFile = nil
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{})
	before := readAll(t, dir)
	testHookAfterFile = func(name string) error { return fmt.Errorf("injected") }
	if _, err := Export(ckpt("luong-general_b1_l1", "checkpoint.pt"), dir, Options{Force: true}); err == nil {
		t.Fatal("no error")
	}
	after := readAll(t, dir)
	if len(after) != len(before) {
		t.Errorf("old dir changed: %d files, had %d", len(after), len(before))
	}
	for n := range before {
		if !bytes.Equal(before[n], after[n]) {
			t.Errorf("%s changed", n)
		}
	}
	if got := entries(t, parent); len(got) != 1 {
		t.Errorf("parent holds %v", got)
	}
}

func TestStaleTempDirsAreCleaned(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "m")
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{})
	// Leftovers of killed runs for m, and look-alikes that must stay.
	for _, d := range []string{".m.tmp-123", ".m.tmp-9", ".m.old-55", ".other.tmp-1", ".m.tmp-abc", "m2"} {
		os.MkdirAll(filepath.Join(parent, d, "sub"), 0o755)
	}
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{Force: true})
	if got := strings.Join(entries(t, parent), " "); got != ".m.tmp-abc .other.tmp-1 m m2" {
		t.Errorf("parent holds %s", got)
	}
	// Killed between setting m aside and renaming the new one in: the old
	// directory comes back.
	os.Rename(dir, filepath.Join(parent, ".m.old-77"))
	if _, err := Export(ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{}); err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Errorf("after restoring the old dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); err != nil {
		t.Errorf("old dir not restored: %v", err)
	}
}

func TestStaleTempDirOfLiveRunIsKept(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "m")
	live := filepath.Join(parent, ".m.tmp-4242")
	os.Mkdir(live, 0o755)
	unlock := lockDir(live, false)
	defer unlock()
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), dir, Options{})
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a locked (live) temp dir was removed: %v", err)
	}
}

func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, n := range entries(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = b
	}
	return out
}

func TestExportDeterministic(t *testing.T) {
	parent := t.TempDir()
	src := ckpt("bahdanau_b4_l2", "checkpoint.pt")
	a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	mustExport(t, src, a, Options{Greedy: true})
	mustExport(t, src, b, Options{Greedy: true})
	fa, fb := readAll(t, a), readAll(t, b)
	if len(fa) != 4 {
		t.Fatalf("files %v", fa)
	}
	for n := range fa {
		if !bytes.Equal(fa[n], fb[n]) {
			t.Errorf("%s differs between two exports", n)
		}
	}
	// The same from .safetensors, but for attnx.json's source.
	c := filepath.Join(parent, "c")
	mustExport(t, ckpt("bahdanau_b4_l2", "checkpoint.safetensors"), c, Options{Greedy: true})
	for n, data := range readAll(t, c) {
		if n != InfoFile && !bytes.Equal(data, fa[n]) {
			t.Errorf("%s from .safetensors differs from .pt", n)
		}
	}
}

// TestExportDeterministicAcrossProcesses exports in two child processes
// (the test binary re-run with ATTNX_MODELDIR_CHILD) and compares bytes:
// map iteration order and anything else random per process must not leak.
func TestExportDeterministicAcrossProcesses(t *testing.T) {
	if out := os.Getenv("ATTNX_MODELDIR_CHILD"); out != "" {
		if _, err := Export(ckpt("luong-concat_b4_l2", "checkpoint.pt"), out, Options{Greedy: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		return
	}
	parent := t.TempDir()
	var dirs []string
	for i := 0; i < 2; i++ {
		d := filepath.Join(parent, fmt.Sprint(i))
		cmd := exec.Command(os.Args[0], "-test.run=^TestExportDeterministicAcrossProcesses$")
		cmd.Env = append(os.Environ(), "ATTNX_MODELDIR_CHILD="+d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		dirs = append(dirs, d)
	}
	fa, fb := readAll(t, dirs[0]), readAll(t, dirs[1])
	if len(fa) != 4 {
		t.Fatalf("files %v", fa)
	}
	for n := range fa {
		if !bytes.Equal(fa[n], fb[n]) {
			t.Errorf("%s differs between processes", n)
		}
	}
}

// TestExportWeights: every graph honours Options.Weights (its metadata says
// so, int4's graphs and only they declare com.microsoft), attnx.json records
// it, the reduced models are smaller, and an unknown precision is refused
// before anything is written.
func TestExportWeights(t *testing.T) {
	parent := t.TempDir()
	src := ckpt("luong-general_b4_l2", "checkpoint.pt")
	size := map[quant.Precision]int64{}
	for _, w := range quant.Precisions {
		dir := filepath.Join(parent, string(w))
		res := mustExport(t, src, dir, Options{Greedy: true, Weights: w})
		info, err := ReadInfo(filepath.Join(dir, InfoFile))
		if err != nil {
			t.Fatal(err)
		}
		if info.Weights != w || res.Weights != w {
			t.Errorf("%s: attnx.json weights %q, result %q", w, info.Weights, res.Weights)
		}
		for _, f := range res.Files[:3] {
			mp, err := onnxfile.Load(filepath.Join(dir, f.Name))
			if err != nil {
				t.Fatal(err)
			}
			s := onnxfile.Summarize(mp)
			if got, ok := s.Metadata["attnx.weights"]; ok != w.Reduced() || (ok && got != string(w)) {
				t.Errorf("%s %s: metadata attnx.weights = %q (present %v)", w, f.Name, got, ok)
			}
			contrib := false
			for _, o := range s.Opsets {
				contrib = contrib || o.Domain == "com.microsoft"
			}
			if want := w == quant.PrecisionInt4 && f.Name != EncoderFile; contrib != want {
				t.Errorf("%s %s: com.microsoft opset imported: %v, want %v", w, f.Name, contrib, want)
			}
			size[w] += f.Bytes
		}
	}
	if !(size[quant.PrecisionInt4] < size[quant.PrecisionInt8] && size[quant.PrecisionInt8] < size[quant.PrecisionFP32]) {
		t.Errorf("graph bytes %v: want int4 < int8 < fp32", size)
	}
	dir := filepath.Join(parent, "bad")
	if _, err := Export(src, dir, Options{Weights: "int3"}); err == nil || !strings.Contains(err.Error(), `unknown weights precision "int3"`) {
		t.Errorf("Weights int3: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused export left %s: %v", dir, err)
	}
}

// TestExportThroughSymlink: -o naming a link to a directory (new, or a
// model directory with --force) writes the model at the link's target,
// and the link stays a link.
func TestExportThroughSymlink(t *testing.T) {
	parent := t.TempDir()
	real := filepath.Join(parent, "models", "v1")
	link := filepath.Join(parent, "current")
	if err := os.Symlink("models/v1", link); err != nil {
		t.Fatal(err)
	}
	// Dangling: the target is created.
	mustExport(t, ckpt("luong-dot_b1_l1", "checkpoint.pt"), link, Options{})
	// Existing model directory, replaced with --force.
	res := mustExport(t, ckpt("luong-general_b1_l1", "checkpoint.pt"), link, Options{Force: true})
	if !res.Replaced || res.Dir != real {
		t.Errorf("result dir %s replaced %v, want %s replaced", res.Dir, res.Replaced, real)
	}
	st, err := os.Lstat(link)
	if err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a link: %v %v", link, st.Mode(), err)
	}
	info, err := ReadInfo(filepath.Join(real, InfoFile))
	if err != nil || info.Arch != attention.LuongGeneral {
		t.Fatalf("the link's target holds %+v, %v", info, err)
	}
	if got := strings.Join(entries(t, parent), " "); got != "current models" {
		t.Errorf("parent holds %s", got)
	}
	if got := strings.Join(entries(t, filepath.Dir(real)), " "); got != "v1" {
		t.Errorf("%s holds %s: temporary directories left behind", filepath.Dir(real), got)
	}
}
