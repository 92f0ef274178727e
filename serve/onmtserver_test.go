package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/modeldir"
)

// onmtFixtures are the directories make_onmt_server.sh wrote: each
// served a checkpoint of models_root (src) with its conf.json, with the
// files files of src beside it.
var onmtFixtures = []struct {
	dir, src string
	files    []string
	models   int // after the exchanges, as attnx answers them
}{
	{"onmt-server", "onmt-sp", []string{"spm_src.model", "spm_tgt.model"}, 6},
	{"onmt-server-230", "onmt-sum-reuse", nil, 2},
}

// onmtRoots are model roots laid out as the fixtures' models_root: the
// files beside "model.pt", which here is the checkpoint's attnx export,
// a directory.
var onmtRoots struct {
	sync.Mutex
	dirs map[string]string
}

func onmtModelRoot(t *testing.T, src string, files []string) string {
	t.Helper()
	needORT(t)
	exportModels(t) // makes models.tmp, removed by TestMain
	onmtRoots.Lock()
	defer onmtRoots.Unlock()
	if d, ok := onmtRoots.dirs[src]; ok {
		return d
	}
	dir := filepath.Join(models.tmp, src)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	from := filepath.Join("../testdata/toolkits", src)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := modeldir.Export(filepath.Join(from, "model.pt"), filepath.Join(dir, "model.pt"), modeldir.Options{}); err != nil {
		t.Fatalf("exporting %s: %v", from, err)
	}
	if onmtRoots.dirs == nil {
		onmtRoots.dirs = map[string]string{}
	}
	onmtRoots.dirs[src] = dir
	return dir
}

// onmtConfFile writes conf with models_root set to root, or with conf nil
// the fixture's conf.json as it is, its models_root alone replaced (its
// keys in its order, as onmt_server read them), and returns its path.
func onmtConfFile(t *testing.T, fixture, root string, conf map[string]any) string {
	t.Helper()
	var data []byte
	if conf == nil {
		orig, err := os.ReadFile(filepath.Join("../testdata/toolkits", fixture, "conf.json"))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			ModelsRoot string `json:"models_root"`
		}
		if err := json.Unmarshal(orig, &c); err != nil {
			t.Fatal(err)
		}
		q, _ := json.Marshal(c.ModelsRoot)
		r, _ := json.Marshal(root)
		if data = bytes.Replace(orig, append([]byte(`"models_root": `), q...), append([]byte(`"models_root": `), r...), 1); bytes.Equal(data, orig) {
			t.Fatalf("%s/conf.json: no \"models_root\": %s to replace", fixture, q)
		}
	} else {
		conf["models_root"] = root
		var err error
		if data, err = json.Marshal(conf); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "conf.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type onmtExchange struct {
	Name        string          `json:"name"`
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	JSON        json.RawMessage `json:"json"`
	Body        *string         `json:"body"`
	Status      int             `json:"status"`
	ContentType string          `json:"content_type"`
	Response    string          `json:"response"`
}

// TestOnmtServerToolkit serves each fixture's checkpoint's attnx export
// with the conf.json OpenNMT-py's onmt_server served the checkpoint with
// (testdata/toolkits/make_onmt_server.sh: 3.5.1 on onmt-sp, 2.3.0 on
// onmt-sum-reuse), sends every request the toolkit answered, and
// compares: translations' src, tgt and n_best exactly and pred_score to
// float32's reach, the other JSON answers byte for byte; where
// onmt_server fails (500, an HTML page) attnx answers a JSON error with
// the status the table gives.
func TestOnmtServerToolkit(t *testing.T) {
	for _, f := range onmtFixtures {
		t.Run(f.dir, func(t *testing.T) {
			testOnmtFixture(t, f.dir, onmtModelRoot(t, f.src, f.files), f.src, f.models)
		})
	}
}

func testOnmtFixture(t *testing.T, fixture, root, src string, nModels int) {
	api, dirs, err := ReadOnmtConfig(onmtConfFile(t, fixture, root, nil), DefaultOnmtURLRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 1 {
		t.Fatalf("%d model directories served for conf.json's one: %v", len(dirs), dirs)
	}
	srv, err := New(Config{Models: dirs, Onmt: api, UnknownToUNK: true, Batching: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Load(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	data, err := os.ReadFile(filepath.Join("../testdata/toolkits", fixture, "exchanges.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exchanges []onmtExchange
	if err := json.Unmarshal(data, &exchanges); err != nil {
		t.Fatal(err)
	}
	// Where onmt_server fails, what attnx answers instead: a JSON error
	// ({"error": ..., "status": "error"}) with this status, the text
	// naming what is wrong.
	refused := map[string]struct {
		code int
		says string
	}{
		"no_id":         {http.StatusNotFound, "No such model '0'"},
		"unknown_id":    {http.StatusNotFound, "No such model '"},
		"string_id":     {http.StatusBadRequest, `[0].id = "100": want a model id, an integer`},
		"no_src":        {http.StatusBadRequest, `no "src"`},
		"empty_list":    {http.StatusBadRequest, "no inputs"},
		"object":        {http.StatusBadRequest, "not a JSON list"},
		"not_json":      {http.StatusBadRequest, "not a JSON list"},
		"get_translate": {http.StatusMethodNotAllowed, "the method is POST"},
		"to_gpu":        {http.StatusOK, "to_gpu is refused"},
		"clone":         {http.StatusOK, "clone_model is refused"},
		"no_page":       {http.StatusNotFound, "no such page"},
	}
	identical, translations, worst, sameBytes := 0, 0, 0.0, 0
	for _, ex := range exchanges {
		t.Run(ex.Name, func(t *testing.T) {
			var body io.Reader
			switch {
			case ex.JSON != nil:
				body = bytes.NewReader(ex.JSON)
			case ex.Body != nil:
				body = strings.NewReader(*ex.Body)
			}
			req, err := http.NewRequest(ex.Method, ts.URL+ex.Path, body)
			if err != nil {
				t.Fatal(err)
			}
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if r, ok := refused[ex.Name]; ok && ex.Status != http.StatusOK {
				var e onmtError
				if err := json.Unmarshal(got, &e); err != nil || e.Status != "error" || !strings.Contains(e.Error, r.says) || resp.StatusCode != r.code {
					t.Errorf("answered %d %s, want %d with a JSON error saying %q (the toolkit: %d)", resp.StatusCode, got, r.code, r.says, ex.Status)
				}
				return
			}
			switch ex.Name {
			case "replace_unk":
				// onmt_server 3.5.1 fails (replace_unk.traceback.txt):
				// attnx translates every input.
				var lists [][]onmtResult
				if !strings.Contains(ex.Response, "out of bounds") || json.Unmarshal(got, &lists) != nil || resp.StatusCode != http.StatusOK || len(lists) != 1 || len(lists[0]) != 6 {
					t.Errorf("answered %d %.300s, want one list of 6 translations (the toolkit: %s)", resp.StatusCode, got, ex.Response)
				}
				return
			case "models_after":
				// After the toolkit's failed clone_model (a model -1) and
				// replace_unk request (model 104 unloaded): attnx's models
				// are those of the start.
				var list []onmtModelDict
				if err := json.Unmarshal(got, &list); err != nil || len(list) != nModels {
					t.Errorf("answered %s, want conf.json's %d models", got, nModels)
				}
				return
			}
			if resp.StatusCode != ex.Status {
				t.Fatalf("status %d, the toolkit's %d; answered %s", resp.StatusCode, ex.Status, got)
			}
			if string(got) == ex.Response {
				sameBytes++
			}
			if ex.Path != "/translator/translate" {
				want := ex.Response
				if ex.Name == "models" {
					// The model paths: the toolkit's checkpoint, attnx's
					// export in its place.
					want = strings.ReplaceAll(want, `"../`+src+`/`, `"`+root+`/`)
				}
				if string(got) != want {
					t.Errorf("answered\n%s\nthe toolkit\n%s", got, want)
				}
				return
			}
			var gotL, wantL [][]map[string]any
			if err := json.Unmarshal(got, &gotL); err != nil {
				t.Fatalf("answer %s: %v", got, err)
			}
			if err := json.Unmarshal([]byte(ex.Response), &wantL); err != nil {
				t.Fatal(err)
			}
			if len(gotL) != len(wantL) {
				t.Fatalf("%d n-best lists, the toolkit %d", len(gotL), len(wantL))
			}
			for k := range wantL {
				if len(gotL[k]) != len(wantL[k]) {
					t.Fatalf("list %d: %d results, the toolkit %d", k, len(gotL[k]), len(wantL[k]))
				}
				for i, w := range wantL[k] {
					g := gotL[k][i]
					translations++
					ok := reflect.DeepEqual(keys(g), keys(w)) && g["src"] == w["src"] && g["tgt"] == w["tgt"] && g["n_best"] == w["n_best"]
					gs, _ := g["pred_score"].(float64)
					ws, _ := w["pred_score"].(float64)
					// float32 scores summed in another order: the
					// copy model's log of summed probabilities
					// differs most, 2.1e-5 on a score of -0.6.
					if !ok || math.Abs(gs-ws) > 5e-5*math.Max(1, math.Abs(ws)) {
						t.Errorf("list %d, input %d: %v, the toolkit %v", k, i, g, w)
						continue
					}
					identical++
					worst = max(worst, math.Abs(gs-ws))
				}
			}
		})
	}
	t.Logf("translations identical to onmt_server's: %d/%d; largest pred_score difference %.3g; answers byte for byte the toolkit's: %d/%d", identical, translations, worst, sameBytes, len(exchanges))
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
