package translate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
)

// pytorchGreedy decodes texts with the PyTorch reference (one batch,
// max_len tokens) and returns each row's tokens, EOS included.
const pytorchGreedy = `
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import attnx_reference as ref
import toolkits
torch.set_num_threads(1)
model = toolkits.load_model(sys.argv[2])
sv = {t: i for i, t in enumerate(json.load(open(sys.argv[3])))}
texts = json.load(sys.stdin)
ids = [[sv[ch] for ch in t] for t in texts]
S = max(len(x) for x in ids)
src = torch.zeros(len(ids), S, dtype=torch.int64)
for i, x in enumerate(ids):
    src[i, :len(x)] = torch.tensor(x)
toks, lens = ref.greedy_decode(model, src, torch.tensor([len(x) for x in ids]), max_len=int(sys.argv[4]))
print(json.dumps([toks[i, :lens[i]].tolist() for i in range(len(texts))]))
`

// TestDemoMatchesPyTorchGreedy translates the 200 held-out demo inputs with
// both engines at batch 1 and batch 32 and requires exactly PyTorch's greedy
// tokens for every input.
func TestDemoMatchesPyTorchGreedy(t *testing.T) {
	needORT(t)
	testenv.Torch(t)
	const demo, maxLen = "../testdata/demo", 12
	var src, tgt []string
	for name, v := range map[string]*[]string{"src_vocab.json": &src, "tgt_vocab.json": &tgt} {
		data, err := os.ReadFile(filepath.Join(demo, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	fh, err := os.Open(filepath.Join(demo, "heldout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var inputs []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if in, _, ok := strings.Cut(sc.Text(), "\t"); ok {
			inputs = append(inputs, in)
		}
	}
	if len(inputs) != 200 {
		t.Fatalf("heldout.txt has %d inputs, want 200", len(inputs))
	}
	payload, _ := json.Marshal(inputs)
	for _, name := range []string{"bahdanau.pt", "luong.pt"} {
		t.Run(name, func(t *testing.T) {
			ckpt := filepath.Join(demo, name)
			cmd := exec.Command("/usr/bin/python3", "-c", pytorchGreedy, "../reference", ckpt, filepath.Join(demo, "src_vocab.json"), fmt.Sprint(maxLen))
			cmd.Stdin = strings.NewReader(string(payload))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("PyTorch greedy decoding: %v", err)
			}
			var want [][]int64
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			writeModelDir(t, dir, fixtures.Weights(t, ckpt), modelSpec{special: attention.DefaultSpecial, src: src, tgt: tgt, greedy: true})
			for _, engine := range []string{EngineSteps, EngineLoop} {
				for _, batch := range []int{1, 32} {
					tr, err := Open(dir, Options{Threads: 1, Engine: engine, MaxLen: maxLen, BatchSize: batch})
					if err != nil {
						t.Fatal(err)
					}
					res, err := tr.Translate(context.Background(), inputs)
					tr.Close()
					if err != nil {
						t.Fatal(err)
					}
					same := 0
					for i, r := range res {
						if reflect.DeepEqual(r.Tokens, want[i]) {
							same++
						} else if i-same < 5 { // report the first few differences
							t.Errorf("%s batch %d: input %q: tokens %v, PyTorch %v", engine, batch, inputs[i], r.Tokens, want[i])
						}
					}
					t.Logf("%s engine, batch %d: %d of %d inputs with PyTorch's exact tokens", engine, batch, same, len(inputs))
				}
			}
		})
	}
}
