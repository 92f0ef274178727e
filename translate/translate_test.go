package translate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/attnx/attnx/onnxrun"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
)

// fixtureModel writes the fixture's model directory (with greedy.onnx and
// character vocabularies) into a temporary directory.
func fixtureModel(t *testing.T, f fixtures.Fixture) (string, *attention.Weights) {
	t.Helper()
	w := fixtures.Weights(t, f.Path(t, "checkpoint.pt"))
	dir := t.TempDir()
	writeModelDir(t, dir, w, modelSpec{
		special: attention.Special{SOS: f.SOS, EOS: f.EOS, PAD: f.PAD, UNK: 3},
		src:     charVocab(w.Config.SrcVocab), tgt: charVocab(w.Config.TgtVocab), greedy: true,
	})
	return dir, w
}

func TestFixturesMatchPyTorchGreedy(t *testing.T) {
	needORT(t)
	for _, f := range fixtures.List(t) {
		t.Run(f.Name, func(t *testing.T) {
			dir, _ := fixtureModel(t, f)
			d := fixtures.Load(t, f.Path(t, ""))
			src, want := d.Rows(t), d.GreedyTokens(t)
			if len(src) != f.Batch {
				t.Fatalf("%d rows, manifest says batch %d", len(src), f.Batch)
			}
			for _, engine := range []string{EngineSteps, EngineLoop} {
				tr, err := Open(dir, Options{Threads: 1, Engine: engine, MaxLen: f.MaxLen})
				if err != nil {
					t.Fatal(err)
				}
				res, err := tr.TranslateIDs(context.Background(), src)
				if err != nil {
					t.Fatalf("%s: %v", engine, err)
				}
				for r := range want {
					if !reflect.DeepEqual(res[r].Tokens, want[r]) {
						t.Errorf("%s row %d: tokens %v, PyTorch greedy %v", engine, r, res[r].Tokens, want[r])
					}
					checkAttention(t, engine, r, res[r], len(src[r]))
				}
				// Row by row, each decodes to the same tokens as in the batch.
				for r := range src {
					one, err := tr.TranslateIDs(context.Background(), src[r:r+1])
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(one[0].Tokens, want[r]) {
						t.Errorf("%s row %d alone: tokens %v, PyTorch greedy %v", engine, r, one[0].Tokens, want[r])
					}
				}
				if err := tr.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// checkAttention checks one attention row per token, each over the row's
// own source length and summing to 1.
func checkAttention(t *testing.T, engine string, r int, res Result, n int) {
	t.Helper()
	if len(res.Attention) != len(res.Tokens) {
		t.Errorf("%s row %d: %d attention rows for %d tokens", engine, r, len(res.Attention), len(res.Tokens))
	}
	for i, a := range res.Attention {
		if len(a) != n {
			t.Errorf("%s row %d step %d: %d attention weights, want %d", engine, r, i, len(a), n)
			continue
		}
		sum := 0.0
		for _, x := range a {
			sum += float64(x)
		}
		if math.Abs(sum-1) > 1e-4 {
			t.Errorf("%s row %d step %d: attention sums to %v", engine, r, i, sum)
		}
	}
}

// randomRows returns n ragged rows of ids in [4, vs).
func randomRows(r *rand.Rand, n, vs, maxLen int) [][]int64 {
	rows := make([][]int64, n)
	for i := range rows {
		rows[i] = make([]int64, 1+r.Intn(maxLen))
		for j := range rows[i] {
			rows[i][j] = int64(4 + r.Intn(vs-4))
		}
	}
	return rows
}

func TestEnginesAgreeAndTextIsJoined(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[1] // bahdanau, two layers
	dir, w := fixtureModel(t, f)
	rows := randomRows(rand.New(rand.NewSource(1)), 9, w.Config.SrcVocab, 12)
	var got [2][]Result
	for i, engine := range []string{EngineSteps, EngineLoop} {
		tr, err := Open(dir, Options{Threads: 1, Engine: engine, BatchSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if tr.Engine() != engine || tr.Device() != "cpu" {
			t.Errorf("engine %q device %q", tr.Engine(), tr.Device())
		}
		if got[i], err = tr.TranslateIDs(context.Background(), rows); err != nil {
			t.Fatal(err)
		}
	}
	tgt := charVocab(w.Config.TgtVocab)
	for r := range rows {
		a, b := got[0][r], got[1][r]
		if !reflect.DeepEqual(a.Tokens, b.Tokens) {
			t.Errorf("row %d: steps %v, loop %v", r, a.Tokens, b.Tokens)
			continue
		}
		if lim := 2*len(rows[r]) + 10; len(a.Tokens) > lim || (len(a.Tokens) < lim && a.Tokens[len(a.Tokens)-1] != f.EOS) {
			t.Errorf("row %d: %d tokens %v: want EOS-terminated or the default limit %d", r, len(a.Tokens), a.Tokens, lim)
		}
		for i := range a.Attention {
			for j := range a.Attention[i] {
				if d := math.Abs(float64(a.Attention[i][j] - b.Attention[i][j])); d > 1e-5 {
					t.Fatalf("row %d step %d pos %d: attention %v vs %v", r, i, j, a.Attention[i][j], b.Attention[i][j])
				}
			}
		}
		var text strings.Builder
		for _, id := range a.Tokens {
			if id > 3 {
				text.WriteString(tgt[id])
			} else if id == 3 {
				text.WriteString("<unk>")
			}
		}
		if a.Text != text.String() || len(a.OutputTokens) != len(a.Tokens) || !reflect.DeepEqual(a.Source, rows[r]) {
			t.Errorf("row %d: text %q (want %q), output tokens %q, source %v", r, a.Text, text.String(), a.OutputTokens, a.Source)
		}
	}
	// Translate tokenises characters with the source vocabulary.
	tr, err := Open(dir, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	src := charVocab(w.Config.SrcVocab)
	var texts []string
	for _, row := range rows[:3] {
		var s strings.Builder
		for _, id := range row {
			s.WriteString(src[id])
		}
		texts = append(texts, s.String())
	}
	res, err := tr.Translate(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for r := range res {
		if !reflect.DeepEqual(res[r].Tokens, got[0][r].Tokens) || res[r].Text != got[0][r].Text ||
			strings.Join(res[r].SourceTokens, "") != texts[r] {
			t.Errorf("Translate(%q) = %v %q, TranslateIDs gave %v %q", texts[r], res[r].Tokens, res[r].Text, got[0][r].Tokens, got[0][r].Text)
		}
	}
}

func TestConcurrentUseMatchesSerial(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[3] // luong-dot, two layers
	dir, w := fixtureModel(t, f)
	const goroutines, calls = 16, 200
	r := rand.New(rand.NewSource(7))
	inputs := make([][][]int64, 20) // calls of 1..3 rows, ragged
	for i := range inputs {
		inputs[i] = randomRows(r, 1+i%3, w.Config.SrcVocab, 8)
	}
	for _, opt := range []Options{{Engine: EngineSteps}, {Engine: EngineLoop}, {Engine: EngineSteps, Beam: 4, NBest: 2}} {
		opt.Threads = 1
		t.Run(fmt.Sprintf("%s-beam%d", opt.Engine, max(opt.Beam, 1)), func(t *testing.T) {
			tr, err := Open(dir, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			want := make([][]Result, len(inputs))
			for i, in := range inputs {
				if want[i], err = tr.TranslateIDs(context.Background(), in); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for c := 0; c < calls; c++ {
						i := (g*calls + c) % len(inputs)
						got, err := tr.TranslateIDs(context.Background(), inputs[i])
						if err != nil {
							errs <- err
							return
						}
						if !reflect.DeepEqual(got, want[i]) {
							errs <- fmt.Errorf("goroutine %d call %d (input %d): %v, serial gave %v", g, c, i, got, want[i])
							return
						}
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if tr.pool != nil {
				if _, idle, live := tr.pool.stats(); idle > DefaultMaxIdleBytes || live != 0 {
					t.Errorf("after the calls: %d idle bytes (cap %d), %d live", idle, DefaultMaxIdleBytes, live)
				}
			}
		})
	}
}

func TestCloseAndCancel(t *testing.T) {
	needORT(t)
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	tr, err := Open(dir, Options{Threads: 1, Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.TranslateIDs(ctx, [][]int64{{5, 6}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if _, err := tr.TranslateIDs(context.Background(), [][]int64{{5, 6}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := tr.TranslateIDs(context.Background(), [][]int64{{5, 6}}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := tr.Translate(context.Background(), []string{"ab"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Translate after Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[0]
	good, w := fixtureModel(t, f)
	copyDir := func(t *testing.T) string {
		dir := t.TempDir()
		entries, _ := os.ReadDir(good)
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(good, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	info, err := modeldir.ReadInfo(filepath.Join(good, "attnx.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) string
		opt   Options
		want  []string
	}{
		{"missing dir", func(t *testing.T) string { return "/no/such/model" }, Options{},
			[]string{"model directory /no/such/model does not exist"}},
		{"file not dir", func(t *testing.T) string { return filepath.Join(good, "attnx.json") }, Options{},
			[]string{"attnx.json is not a directory"}},
		{"no attnx.json", func(t *testing.T) string { return t.TempDir() }, Options{},
			[]string{"has no attnx.json", "not an attnx model directory"}},
		{"bad attnx.json", func(t *testing.T) string {
			d := copyDir(t)
			os.WriteFile(filepath.Join(d, "attnx.json"), []byte("{"), 0o644)
			return d
		}, Options{}, []string{"attnx.json: not a valid attnx.json"}},
		{"missing encoder", func(t *testing.T) string {
			d := copyDir(t)
			os.Remove(filepath.Join(d, "encoder.onnx"))
			return d
		}, Options{Engine: EngineSteps}, []string{"encoder model", "encoder.onnx does not exist", `files.encoder = "encoder.onnx"`}},
		{"corrupt decoder", func(t *testing.T) string {
			d := copyDir(t)
			os.WriteFile(filepath.Join(d, "decoder.onnx"), []byte("this is not protobuf"), 0o644)
			return d
		}, Options{Engine: EngineSteps}, []string{"decoder model", "decoder.onnx cannot be loaded"}},
		{"hidden size disagrees", func(t *testing.T) string {
			d := copyDir(t)
			bad := *info
			bad.Hidden = w.Config.Hidden + 1
			writeInfo(t, d, &bad)
			return d
		}, Options{Engine: EngineSteps}, []string{"encoder.onnx disagrees with attnx.json", `output "encoder_outputs"`,
			fmt.Sprintf("dimension 2 is %d, want %d (attnx.json hidden_size = %d)", w.Config.Hidden, w.Config.Hidden+1, w.Config.Hidden+1)}},
		{"target vocab disagrees", func(t *testing.T) string {
			d := copyDir(t)
			bad := *info
			bad.TgtVocab = w.Config.TgtVocab - 1
			bad.TgtTokens = bad.TgtTokens[:bad.TgtVocab]
			writeInfo(t, d, &bad)
			return d
		}, Options{Engine: EngineSteps}, []string{"decoder.onnx disagrees with attnx.json", `output "log_probs"`,
			fmt.Sprintf("want %d (attnx.json tgt_vocab_size = %d)", w.Config.TgtVocab-1, w.Config.TgtVocab-1)}},
		{"layers disagree", func(t *testing.T) string {
			d := copyDir(t)
			bad := *info
			bad.Layers = 2
			writeInfo(t, d, &bad)
			return d
		}, Options{Engine: EngineSteps}, []string{`output "hidden"`, "dimension 0 is 1, want 2 (attnx.json num_layers = 2)"}},
		{"greedy swapped for decoder", func(t *testing.T) string {
			d := copyDir(t)
			data, _ := os.ReadFile(filepath.Join(d, "decoder.onnx"))
			os.WriteFile(filepath.Join(d, "greedy.onnx"), data, 0o644)
			return d
		}, Options{Engine: EngineLoop}, []string{"greedy.onnx disagrees with attnx.json", `no input "source_ids"`}},
		{"loop without greedy", func(t *testing.T) string {
			d := copyDir(t)
			bad := *info
			delete(bad.Files, "greedy")
			writeInfo(t, d, &bad)
			return d
		}, Options{Engine: EngineLoop}, []string{`engine "loop" needs greedy.onnx`, `use engine "steps"`}},
		{"beam without beam.onnx", func(t *testing.T) string { return good }, Options{Engine: EngineLoop, Beam: 4},
			[]string{`engine "loop" with beam search (Beam = 4) needs beam.onnx`, "names no beam model (files.beam)", "re-export with `attnx export --beam`", `use engine "steps"`}},
		{"negative beam", func(t *testing.T) string { return good }, Options{Beam: -2}, []string{"Beam = -2: want the beam width K >= 1"}},
		{"n-best over beam", func(t *testing.T) string { return good }, Options{Beam: 4, NBest: 5}, []string{"NBest = 5: want 1 <= NBest <= Beam = 4"}},
		{"n-best without beam", func(t *testing.T) string { return good }, Options{NBest: 2}, []string{"NBest = 2: want 1 <= NBest <= Beam = 1"}},
		{"negative n-best", func(t *testing.T) string { return good }, Options{Beam: 2, NBest: -1}, []string{"NBest = -1"}},
		{"negative length penalty", func(t *testing.T) string { return good }, Options{Beam: 2, LengthPenalty: new(-0.5)}, []string{"LengthPenalty = -0.5: want a finite value from 0 to 10"}},
		{"NaN length penalty", func(t *testing.T) string { return good }, Options{Beam: 2, LengthPenalty: new(math.NaN())}, []string{"LengthPenalty = NaN"}},
		{"infinite length penalty", func(t *testing.T) string { return good }, Options{Beam: 2, LengthPenalty: new(math.Inf(1))}, []string{"LengthPenalty = +Inf"}},
		{"unknown engine", func(t *testing.T) string { return good }, Options{Engine: "fast"}, []string{`unknown engine "fast"`}},
		{"unknown device", func(t *testing.T) string { return good }, Options{Device: "tpu"}, []string{`unknown device "tpu"`}},
		{"negative max len", func(t *testing.T) string { return good }, Options{MaxLen: -1}, []string{"MaxLen = -1: must not be negative"}},
		{"negative repetition penalty", func(t *testing.T) string { return good }, Options{Beam: 2, RepetitionPenalty: -1}, []string{"RepetitionPenalty = -1: want a finite value >= 0"}},
		{"NaN repetition penalty", func(t *testing.T) string { return good }, Options{Beam: 2, RepetitionPenalty: math.NaN()}, []string{"RepetitionPenalty = NaN"}},
		{"negative no-repeat n-gram", func(t *testing.T) string { return good }, Options{Beam: 2, NoRepeatNgram: -3}, []string{"NoRepeatNgram = -3: must not be negative"}},
		{"cuda", func(t *testing.T) string { return good }, Options{Device: "cuda"}, []string{`the cuda device was asked for but CUDA cannot be used`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Open(c.setup(t), c.opt)
			if err == nil {
				tr.Close()
				if c.name == "cuda" {
					t.Skip("CUDA is available here")
				}
				t.Fatal("Open succeeded")
			}
			want := c.want
			if c.name == "cuda" && !onnxrun.HasORT {
				want = []string{"the native backend runs on the CPU only"} // a build without cgo
			}
			for _, s := range want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	// Without greedy.onnx the default engine is steps; with it, loop.
	d := copyDir(t)
	os.Remove(filepath.Join(d, "greedy.onnx"))
	for dir, want := range map[string]string{good: EngineLoop, d: EngineSteps} {
		tr, err := Open(dir, Options{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Engine() != want {
			t.Errorf("%s: default engine %q, want %q", dir, tr.Engine(), want)
		}
		tr.Close()
	}
}

// TestCheckCallErrors: a call's bad setting is refused by its own
// CallOptions name, without naming the setting beside it.
func TestCheckCallErrors(t *testing.T) {
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	tr, err := Open(dir, Options{Threads: 1, Backend: "go", Engine: EngineSteps})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cases := []struct {
		name        string
		opt         CallOptions
		want, other string
	}{
		{"negative no-repeat n-gram", CallOptions{Beam: 2, NoRepeatNgram: new(-2), RepetitionPenalty: new(1.5)}, "NoRepeatNgram = -2: must not be negative", "RepetitionPenalty"},
		{"negative repetition penalty", CallOptions{Beam: 2, NoRepeatNgram: new(3), RepetitionPenalty: new(-1.0)}, "RepetitionPenalty = -1: want a finite value >= 0", "NoRepeatNgram"},
		{"infinite repetition penalty", CallOptions{Beam: 2, RepetitionPenalty: new(math.Inf(1))}, "RepetitionPenalty = +Inf", "NoRepeatNgram"},
		{"negative max len", CallOptions{MaxLen: -1}, "CallOptions.MaxLen = -1: must not be negative", "MinLen"},
		{"negative min len", CallOptions{MinLen: -1}, "CallOptions.MinLen = -1: must not be negative", "MaxLen"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tr.CheckCall(c.opt)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckCall = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), c.other) {
				t.Errorf("CheckCall = %q names %s too", err, c.other)
			}
		})
	}
	if err := tr.CheckCall(CallOptions{Beam: 2, NoRepeatNgram: new(3), RepetitionPenalty: new(1.2)}); err != nil {
		t.Errorf("valid call: %v", err)
	}
}

func TestInputErrors(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[0]
	dir, w := fixtureModel(t, f)
	Vs := w.Config.SrcVocab
	tr, err := Open(dir, Options{Threads: 1, MaxSourceLen: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	idCases := []struct {
		rows [][]int64
		row  int
		pos  int
		want string
	}{
		{[][]int64{{5}, {}}, 1, -1, "translate: input row 1: empty input, nothing to translate"},
		{[][]int64{{5, 6}, {7, 8, int64(Vs)}}, 1, 2, fmt.Sprintf("translate: input row 1: token id %d at position 2 is outside the source vocabulary [0, %d)", Vs, Vs)},
		{[][]int64{{-1}}, 0, 0, fmt.Sprintf("translate: input row 0: token id -1 at position 0 is outside the source vocabulary [0, %d)", Vs)},
		{[][]int64{{5}, {5}, make([]int64, 11)}, 2, -1, "translate: input row 2: 11 tokens, more than the limit MaxSourceLen = 10"},
	}
	for _, c := range idCases {
		_, err := tr.TranslateIDs(ctx, c.rows)
		var ie *InputError
		if !errors.As(err, &ie) || err.Error() != c.want || ie.Row != c.row || ie.Position != c.pos {
			t.Errorf("TranslateIDs(%v): %v (%+v), want %q at row %d position %d", c.rows, err, ie, c.want, c.row, c.pos)
		}
	}
	textCases := []struct {
		texts []string
		want  string
	}{
		{[]string{"abc", "a\xff"}, "translate: input row 1: invalid UTF-8 at byte 1"},
		{[]string{"abc", "ab#c"}, "translate: input row 1: character '#' (U+0023) at position 2 is not in the source vocabulary (set UnknownToUNK to map unknown characters to <unk> (id 3))"},
		{[]string{"aé"}, "translate: input row 0: character 'é' (U+00E9) at position 1 is not in the source vocabulary"},
		{[]string{"abcdefabcdef"}, "translate: input row 0: 12 tokens, more than the limit MaxSourceLen = 10"},
	}
	for _, c := range textCases {
		_, err := tr.Translate(ctx, c.texts)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Translate(%q): %v, want %q", c.texts, err, c.want)
		}
	}
	// UnknownToUNK maps the character to UNK instead.
	tr2, err := Open(dir, Options{Threads: 1, UnknownToUNK: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	res, err := tr2.Translate(ctx, []string{"a#"})
	if err != nil || !reflect.DeepEqual(res[0].Source, []int64{4, 3}) {
		t.Errorf("UnknownToUNK: %v, %v", res, err)
	}
	// Without a source vocabulary, Translate says to use ids.
	d := t.TempDir()
	writeModelDir(t, d, w, modelSpec{special: attention.DefaultSpecial})
	tr3, err := Open(d, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr3.Close()
	if _, err := tr3.Translate(ctx, []string{"abc"}); err == nil || !strings.Contains(err.Error(), "has no source vocabulary (src_vocab): use TranslateIDs") {
		t.Errorf("no vocabulary: %v", err)
	}
	res, err = tr3.TranslateIDs(ctx, [][]int64{{5, 6}})
	if err != nil || res[0].Text != "" || res[0].SourceTokens[0] != "5" {
		t.Errorf("no vocabulary: %+v, %v", res, err)
	}
}

func TestWordLevelVocabulary(t *testing.T) {
	v := newVocab([]string{"<pad>", "<sos>", "<eos>", "<unk>", "hello", "world", "a"}, attention.DefaultSpecial)
	if v.chars {
		t.Fatal("word vocabulary taken for characters")
	}
	ids, err := v.encode(0, "  hello   world a ", false, 3, nil, false, nil)
	if err != nil || !reflect.DeepEqual(ids, []int64{4, 5, 6}) {
		t.Errorf("encode: %v %v", ids, err)
	}
	if _, err := v.encode(3, "hello there", false, 3, nil, false, nil); err == nil ||
		err.Error() != `translate: input row 3: word "there" at position 1 is not in the source vocabulary (set UnknownToUNK to map unknown words to <unk> (id 3))` {
		t.Errorf("unknown word: %v", err)
	}
	if _, err := v.encode(0, "   ", false, 3, nil, false, nil); err == nil || !strings.Contains(err.Error(), "empty input") {
		t.Errorf("blank: %v", err)
	}
	if got := v.text([]int64{4, 5, 3, 2, 0}); got != "hello world <unk>" {
		t.Errorf("text %q", got)
	}
	c := newVocab(charVocab(8), attention.DefaultSpecial)
	if !c.chars || c.text([]int64{1, 4, 5, 2}) != "ab" {
		t.Errorf("character vocabulary: chars %v text %q", c.chars, c.text([]int64{1, 4, 5, 2}))
	}
}

// TestDemoModels decodes the held-out set with the demo date models, when
// they have been trained.
func TestDemoModels(t *testing.T) {
	needORT(t)
	demo := "../testdata/demo"
	var src, tgt []string
	for name, v := range map[string]*[]string{"src_vocab.json": &src, "tgt_vocab.json": &tgt} {
		data, err := os.ReadFile(filepath.Join(demo, name))
		if err != nil {
			testenv.Missing(t, "the demo vocabulary "+name, "git checkout testdata/demo (the files are committed; testdata/demo/README.md says how to regenerate them)", err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	fh, err := os.Open(filepath.Join(demo, "heldout.txt"))
	if err != nil {
		testenv.Missing(t, "the demo held-out set", "git checkout testdata/demo (the files are committed; testdata/demo/README.md says how to regenerate them)", err)
	}
	defer fh.Close()
	var inputs, wants []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		in, want, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			inputs, wants = append(inputs, in), append(wants, want)
		}
	}
	for _, name := range []string{"bahdanau.pt", "luong.pt"} {
		t.Run(name, func(t *testing.T) {
			ckpt := filepath.Join(demo, name)
			if _, err := os.Stat(ckpt); err != nil {
				testenv.Missing(t, "the demo model "+name, "git checkout testdata/demo (the files are committed; testdata/demo/README.md says how to regenerate them)", err)
			}
			w := fixtures.Weights(t, ckpt)
			dir := t.TempDir()
			writeModelDir(t, dir, w, modelSpec{special: attention.DefaultSpecial, src: src, tgt: tgt, greedy: true})
			var texts [2][]string
			for i, engine := range []string{EngineSteps, EngineLoop} {
				tr, err := Open(dir, Options{Threads: 1, Engine: engine, MaxLen: 12})
				if err != nil {
					t.Fatal(err)
				}
				res, err := tr.Translate(context.Background(), inputs)
				tr.Close()
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					texts[i] = append(texts[i], r.Text)
				}
			}
			if !reflect.DeepEqual(texts[0], texts[1]) {
				t.Errorf("steps and loop engines disagree")
			}
			right := 0
			for i := range wants {
				if texts[0][i] == wants[i] {
					right++
				}
			}
			acc := float64(right) / float64(len(wants))
			t.Logf("%s: %d/%d held-out dates exact (%.1f%%)", name, right, len(wants), 100*acc)
			if acc < 0.9 {
				t.Errorf("held-out exact match %.3f, want >= 0.9 (metrics.json records the trainer's)", acc)
			}
		})
	}
}
