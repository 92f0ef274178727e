package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBadRequests sends every kind of bad request to a server of the demo
// model, with batching on and off, and checks the status and the whole
// error body.
func TestBadRequests(t *testing.T) {
	for _, batching := range []bool{true, false} {
		t.Run(fmt.Sprintf("batching %v", batching), func(t *testing.T) { badRequests(t, batching) })
	}
}

func badRequests(t *testing.T, batching bool) {
	_, hs := startServer(t, Config{
		Models:    []ModelDir{{Name: "dates", Dir: demoModel(t)}, {Name: "ids", Dir: fixtureModel(t)}},
		MaxInputs: 3, MaxSourceLen: 30, MaxOutLen: 50, MaxBodyBytes: 4096, Batching: batching, MaxBeam: 8, MaxBatchRows: 4,
	})
	// A beam of K holds K of the batch's rows: with batching on, the
	// batch's bound is the smaller.
	beamRange, maxBeam := "1 (greedy) to 8 (--max-beam)", 8
	if batching {
		beamRange, maxBeam = "1 (greedy) to 4 (--max-batch-rows)", 4
	}
	// GET /v1/models says so.
	if code, body := get(t, hs.URL+PathModels); code != 200 || !strings.Contains(body, fmt.Sprintf(`"max_beam":%d`, maxBeam)) {
		t.Errorf("GET %s: %d %s: want max_beam %d", PathModels, code, body[:min(len(body), 300)], maxBeam)
	}
	big := fmt.Sprintf(`{"inputs": [%q]}`, strings.Repeat("1", 5000))
	cases := []struct {
		name, method, path, body string
		code                     int
		err                      string
	}{
		{"not JSON", "POST", PathTranslate, `hello`, 400, `body is not valid JSON: invalid character 'h' looking for beginning of value (at byte 1)`},
		{"cut JSON", "POST", PathTranslate, `{"inputs": ["3rd of March`, 400, `body is not valid JSON: it ends in the middle of a value`},
		{"empty body", "POST", PathTranslate, ``, 400, `empty body: want a JSON object such as {"inputs": ["text"]}`},
		{"array body", "POST", PathTranslate, `["3rd of March 2021"]`, 400, `body is a JSON array: want an object such as {"inputs": ["text"]}`},
		{"two values", "POST", PathTranslate, `{"inputs": ["1"]} {}`, 400, `the body holds more than one JSON value: send one object`},
		{"unknown field", "POST", PathTranslate, `{"input": ["1"]}`, 400, `unknown field "input" (the fields are ` + requestFields + `)`},
		{"inputs not a list", "POST", PathTranslate, `{"inputs": "3rd of March 2021"}`, 400, `field "inputs": got a JSON string, want an array of strings`},
		{"ids not integers", "POST", PathTranslate, `{"ids": [[5, 2.5]]}`, 400, `field "ids": got a JSON number 2.5, want an integer`},
		{"no inputs", "POST", PathTranslate, `{}`, 400, `no inputs: give "inputs": ["text", ...] or "ids": [[5, 9, 2], ...]`},
		{"empty inputs", "POST", PathTranslate, `{"inputs": []}`, 400, `no inputs: give "inputs": ["text", ...] or "ids": [[5, 9, 2], ...]`},
		{"inputs and ids", "POST", PathTranslate, `{"inputs": ["1"], "ids": [[5]]}`, 400, `give "inputs" (texts) or "ids" (token id rows), not both`},
		{"too many inputs", "POST", PathTranslate, `{"inputs": ["1", "2", "3", "4"]}`, 400, `4 inputs: more than the limit of 3 per request (--max-inputs); split them into several requests`},
		{"unknown character", "POST", PathTranslate, `{"inputs": ["3rd of March 2021", "3 März 2021"]}`, 400, `inputs[1]: character 'ä' (U+00E4) at position 3 is not in the source vocabulary (start attnx serve with --unk to map unknown characters to <unk> (id 3))`},
		{"empty input", "POST", PathTranslate, `{"inputs": [""]}`, 400, `inputs[0]: empty input, nothing to translate`},
		{"source over the limit", "POST", PathTranslate, `{"inputs": ["Wednesday, the 3rd of March, 2021"]}`, 400, `inputs[0]: 33 tokens, more than the server's limit --max-src-len 30`},
		{"id outside the vocabulary", "POST", PathTranslate, `{"ids": [[12, 63]]}`, 400, `ids[0]: token id 63 at position 1 is outside the source vocabulary [0, 63)`},
		{"empty id row", "POST", PathTranslate, `{"ids": [[12], []]}`, 400, `ids[1]: empty input, nothing to translate`},
		{"text to a model without vocabulary", "POST", "/v1/models/ids/translate", `{"inputs": ["abc"]}`, 400, `inputs: the model has no source vocabulary: send token ids ("ids": [[5, 9, 2]])`},
		{"body over the limit", "POST", PathTranslate, big, 413, `request body larger than the limit of 4096 bytes (--max-body); split the inputs into several requests`},
		{"max_len zero", "POST", PathTranslate, `{"inputs": ["1"], "max_len": 0}`, 400, `max_len = 0: want 1 to 50 (--max-out-len)`},
		{"max_len over the limit", "POST", PathTranslate, `{"inputs": ["1"], "max_len": 51}`, 400, `max_len = 51: want 1 to 50 (--max-out-len)`},
		{"beam zero", "POST", PathTranslate, `{"inputs": ["1"], "beam": 0}`, 400, `beam = 0: want ` + beamRange},
		{"beam over the limit", "POST", PathTranslate, `{"inputs": ["1"], "beam": 9}`, 400, `beam = 9: want ` + beamRange},
		{"beam not an integer", "POST", PathTranslate, `{"inputs": ["1"], "beam": 2.5}`, 400, `field "beam": got a JSON number 2.5, want an integer`},
		{"n_best without beam", "POST", PathTranslate, `{"inputs": ["1"], "n_best": 2}`, 400, `n_best = 2: want 1 to beam = 1`},
		{"n_best over beam", "POST", PathTranslate, `{"inputs": ["1"], "beam": 3, "n_best": 4}`, 400, `n_best = 4: want 1 to beam = 3`},
		{"n_best zero", "POST", PathTranslate, `{"inputs": ["1"], "beam": 3, "n_best": 0}`, 400, `n_best = 0: want 1 to beam = 3`},
		{"length_penalty negative", "POST", PathTranslate, `{"inputs": ["1"], "beam": 3, "length_penalty": -0.5}`, 400, `length_penalty = -0.5: want a finite value from 0 to 10`},
		// Issue 36: a penalty of 1e308 passed and made the scores NaN (500, "score: NaN is not a JSON number").
		{"length_penalty 1e308 wu", "POST", PathTranslate, `{"inputs": ["1"], "rules": "opennmt", "beam": 4, "length_penalty": 1e308, "length_penalty_form": "wu"}`, 400, `length_penalty = 1e+308: want a finite value from 0 to 10`},
		{"length_penalty not a number", "POST", PathTranslate, `{"inputs": ["1"], "beam": 3, "length_penalty": "high"}`, 400, `field "length_penalty": got a JSON string, want a number`},
		{"unknown model in the body", "POST", PathTranslate, `{"model": "nope", "inputs": ["1"]}`, 404, `unknown model "nope": this server serves "dates", "ids"`},
		{"unknown model in the path", "POST", "/v1/models/nope/translate", `{"inputs": ["1"]}`, 404, `unknown model "nope": this server serves "dates", "ids"`},
		{"path and body disagree", "POST", "/v1/models/dates/translate", `{"model": "ids", "inputs": ["1"]}`, 400, `the path names model "dates" and the body model "ids": name one`},
		{"GET translate", "GET", PathTranslate, ``, 405, `GET /v1/translate: use POST with a JSON body such as {"inputs": ["text"]}`},
		{"unknown page", "GET", "/v2/translate", ``, 404, `no such page /v2/translate: the API is POST /v1/translate, GET /v1/models, /healthz, /readyz and /metrics`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, hs.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.method == "POST" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			var body ErrorResponse
			dec := json.NewDecoder(strings.NewReader(string(data)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				t.Fatalf("%d %q: not an error object: %v", resp.StatusCode, data, err)
			}
			if resp.StatusCode != c.code || body.Error != c.err {
				t.Errorf("got %d %q\nwant %d %q", resp.StatusCode, body.Error, c.code, c.err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// TestProfilingRoutes: Go's profiles are served only when asked for.
func TestProfilingRoutes(t *testing.T) {
	for _, on := range []bool{false, true} {
		b := newBlockingBackend()
		_, hs := startServer(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), Profiling: on})
		code, body := get(t, hs.URL+"/debug/pprof/")
		if want := map[bool]int{false: 404, true: 200}[on]; code != want || (on && !strings.Contains(body, "goroutine")) {
			t.Errorf("Profiling %v: GET /debug/pprof/ = %d %.100q, want %d", on, code, body, want)
		}
		// An execution trace shows where the scheduler goroutine waits
		// (go tool trace -pprof=sched).
		code, body = get(t, hs.URL+"/debug/pprof/trace?seconds=0.05")
		if want := map[bool]int{false: 404, true: 200}[on]; code != want || (on && !strings.HasPrefix(body, "go 1.")) {
			t.Errorf("Profiling %v: GET /debug/pprof/trace = %d %.20q, want %d and a Go trace", on, code, body, want)
		}
	}
}
