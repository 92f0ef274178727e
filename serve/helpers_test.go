package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// models holds the model directories the tests export once per run.
var models struct {
	once     sync.Once
	tmp      string
	demo     string // testdata/demo/luong.pt with its vocabularies and greedy.onnx
	fixture  string // testdata/fixtures/bahdanau_b1_l1, random weights, no vocabulary
	exportOK error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if models.tmp != "" {
		os.RemoveAll(models.tmp)
	}
	os.Exit(code)
}

// needORT ends the test when ONNX Runtime cannot be used (see testenv.ORT).
func needORT(tb testing.TB) {
	tb.Helper()
	testenv.ORT(tb, onnxrun.Init())
}

func exportModels(tb testing.TB) {
	tb.Helper()
	needORT(tb)
	models.once.Do(func() {
		models.tmp, models.exportOK = os.MkdirTemp("", "attnx-serve-test-")
		if models.exportOK != nil {
			return
		}
		models.demo = filepath.Join(models.tmp, "luong")
		_, models.exportOK = modeldir.Export("../testdata/demo/luong.pt", models.demo, modeldir.Options{
			Greedy: true, SrcVocab: "../testdata/demo/src_vocab.json", TgtVocab: "../testdata/demo/tgt_vocab.json",
		})
		if models.exportOK != nil {
			return
		}
		models.fixture = filepath.Join(models.tmp, "fixture")
		_, models.exportOK = modeldir.Export("../testdata/fixtures/bahdanau_b1_l1/checkpoint.pt", models.fixture, modeldir.Options{})
	})
	if models.exportOK != nil {
		tb.Fatalf("exporting the test models: %v", models.exportOK)
	}
}

// demoModel returns the demo date model (Luong, character vocabularies).
func demoModel(tb testing.TB) string {
	exportModels(tb)
	return models.demo
}

// fixtureModel returns a small random Bahdanau model without
// vocabularies (Vs=19, Vt=23): ids only, and rows rarely reach EOS.
func fixtureModel(tb testing.TB) string {
	exportModels(tb)
	return models.fixture
}

// demoInputs returns the demo's example sentences and the held-out
// sentences (without their expected outputs).
func demoInputs(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, name := range []string{"examples.txt", "heldout.txt"} {
		data, err := os.ReadFile(filepath.Join("../testdata/demo", name))
		if err != nil {
			tb.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			src, _, _ := strings.Cut(line, "\t")
			out = append(out, src)
		}
	}
	return out
}

// startServer makes a Server of cfg, loads it and serves its handler on
// loopback until the test ends.
func startServer(tb testing.TB, cfg Config) (*Server, *httptest.Server) {
	tb.Helper()
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Load(); err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	tb.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s, hs
}

// post sends body to url and returns the status and the body read.
func post(tb testing.TB, url, body string) (int, string) {
	tb.Helper()
	return roundTrip(tb, http.MethodPost, url, body)
}

// get fetches url and returns the status and the body.
func get(tb testing.TB, url string) (int, string) {
	tb.Helper()
	return roundTrip(tb, http.MethodGet, url, "")
}

func roundTrip(tb testing.TB, method, url, body string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

// decodeResponse parses a 200 answer.
func decodeResponse(tb testing.TB, body string) Response {
	tb.Helper()
	var r Response
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		tb.Fatalf("answer %q: %v", body, err)
	}
	return r
}

// blockingBackend is a Backend double: each call announces itself on
// entered, then waits for a value on release (or for its context) and
// answers one made-up result per row: the row's ids reversed, then EOS.
type blockingBackend struct {
	entered chan struct{}
	release chan struct{}
}

func newBlockingBackend() *blockingBackend {
	return &blockingBackend{entered: make(chan struct{}, 100), release: make(chan struct{}, 100)}
}

func (b *blockingBackend) opener() Opener {
	return func(string, *Config, BatchObserver) (Backend, error) { return b, nil }
}

func (b *blockingBackend) Translate(ctx context.Context, job Job) ([]translate.Result, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := make([]translate.Result, len(job.IDs))
	for i, row := range job.IDs {
		for j := len(row) - 1; j >= 0; j-- {
			res[i].Tokens = append(res[i].Tokens, row[j])
		}
		res[i].Tokens = append(res[i].Tokens, 2)
		res[i].Source = row
	}
	return res, nil
}

func (b *blockingBackend) Info() modeldir.Info {
	return modeldir.Info{Config: attention.Config{Arch: attention.Bahdanau, Hidden: 4, Layers: 1, SrcVocab: 10, TgtVocab: 10},
		Special: attention.Special{SOS: 1, EOS: 2, PAD: 0, UNK: -1}}
}

func (b *blockingBackend) Close() error { return nil }

// Tokenize: the fake has no tokenizer; a text's bytes are its ids.
func (b *blockingBackend) Tokenize(_ context.Context, texts []string, _ bool) (translate.Sources, error) {
	rows := make([][]int64, len(texts))
	for i, s := range texts {
		for _, c := range []byte(s) {
			rows[i] = append(rows[i], int64(c))
		}
	}
	return translate.Sources{Rows: rows}, nil
}
