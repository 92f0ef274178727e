package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// attnx bench measures the tutorial's architectures and GRU models too
// (the ORT engines here, no PyTorch, greedily and with beam search, the
// loop engine's through beam.onnx), and refuses source lengths a
// tutorial-location checkpoint cannot run.
func TestBenchTutorialAndGRU(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	engines := "attnx-steps-lean,attnx-steps,attnx-loop"
	// 12 steps and 3 reps: translate's engines are timed whole, less the
	// lean loop's fastest encoder run, which stays below a whole decode on
	// a loaded machine (its median did not: 3 steps of one rep went
	// negative).
	code, out, errs := attnx("bench", "-q", "-json", "-arch", "tutorial-location,tutorial-bahdanau,luong-concat", "-cell", "gru", "-hidden", "7",
		"-vocab", "20", "-src-len", "3,5", "-batch", "2", "-threads", "1", "-steps", "12", "-reps", "3", "-min-time", "1ms", "-warmup", "1",
		"-engines", engines, "-weights", "fp32,int8", "-beam", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Results []struct {
			Name    string  `json:"name"`
			Weights string  `json:"weights"`
			Beam    int     `json:"beam"`
			Arch    string  `json:"arch"`
			SrcLen  int     `json:"src_len"`
			Median  float64 `json:"ms_per_token_median"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var got []string
	for _, r := range rep.Results {
		got = append(got, fmt.Sprintf("%s/%s/%s/K=%d", r.Arch, r.Name, r.Weights, max(r.Beam, 1)))
		if r.Median <= 0 {
			t.Errorf("%s %s S=%d: median %g", r.Arch, r.Name, r.SrcLen, r.Median)
		}
	}
	var want []string
	for _, a := range []string{"tutorial-location", "tutorial-bahdanau", "luong-concat"} {
		for range 2 { // two source lengths
			for _, e := range strings.Split(engines, ",") {
				for _, w := range []string{"fp32", "int8"} { // each engine at each -weights
					for _, k := range []int{1, 2} { // greedy, then -beam 2
						want = append(want, fmt.Sprintf("%s/%s/%s/K=%d", a, e, w, k))
					}
				}
			}
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("results %v\nwant %v", got, want)
	}

	ckpt := filepath.Join(t.TempDir(), "tl.safetensors")
	fixtures.WriteRandomCheckpoint(t, ckpt, attention.Config{Arch: attention.TutorialLocation, Cell: attention.GRU, Hidden: 5, Layers: 1,
		SrcVocab: 9, TgtVocab: 8, MaxLength: 4}, 2)
	code, _, errs = attnx("bench", "-q", "-checkpoint", ckpt, "-src-len", "3,6", "-batch", "1", "-threads", "1", "-engines", "attnx-steps")
	want1 := "attnx bench: bench: " + ckpt + ": -src-len 6: source of 6 tokens is longer than the model's max_length 4 (a tutorial-location decoder attends over 4 positions only)\n"
	if code != 1 || errs != want1 {
		t.Errorf("-src-len past M: exit %d, stderr %q\nwant %q", code, errs, want1)
	}
	if code, _, errs := attnx("bench", "-cell", "rnn"); code != 2 || !strings.Contains(errs, "-cell: ") {
		t.Errorf("-cell rnn: exit %d, %q", code, errs)
	}
}
