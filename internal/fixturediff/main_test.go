package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const committed = "../../testdata/fixtures"

// copyTree copies the committed fixtures into a temporary directory.
func copyTree(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	files, err := listFiles(committed)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(committed, f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// patchTensor changes element i of tensor key in a safetensors file in
// place, through f on its little-endian bytes.
func patchTensor(t *testing.T, path, key string, i int, f func([]byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(data)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var e struct {
		Dtype   string
		Offsets [2]int `json:"data_offsets"`
	}
	if err := json.Unmarshal(hdr[key], &e); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	size := map[string]int{"F32": 4, "I64": 8}[e.Dtype]
	at := 8 + int(n) + e.Offsets[0] + i*size
	f(data[at : at+size])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// scaleFloat multiplies a float32 by k.
func scaleFloat(k float64) func([]byte) {
	return func(b []byte) {
		v := math.Float32frombits(binary.LittleEndian.Uint32(b))
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(float64(v)*k)))
	}
}

// editManifest applies f to the decoded manifest of dir and writes it back.
func editManifest(t *testing.T, dir string, f func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "manifest.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rehash records the sha256 of fixture 0's expected outputs in dir's
// manifest, as regenerating would.
func rehash(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "bahdanau_b1_l1", "expected.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	editManifest(t, dir, func(m map[string]any) {
		fixture(m, 0)["files"].(map[string]any)["expected"].(map[string]any)["sha256"] = hex.EncodeToString(sum[:])
	})
}

func fixture(m map[string]any, i int) map[string]any {
	return m["fixtures"].([]any)[i].(map[string]any)
}

func TestCompareTrees(t *testing.T) {
	expected := "bahdanau_b1_l1/expected.safetensors"
	cases := []struct {
		name    string
		change  func(t *testing.T, dir string)
		inexact int    // float tensors within tolerance
		want    string // "" = up to date
	}{
		{"identical", func(*testing.T, string) {}, 0, ""},
		{"float outputs in their last bits", func(t *testing.T, dir string) {
			p := filepath.Join(dir, expected)
			patchTensor(t, p, "log_probs", 3, scaleFloat(1+1e-7))
			patchTensor(t, p, "attention", 0, scaleFloat(1-2e-7))
			rehash(t, dir)
		}, 2, ""},
		{"a float statistic rounded the other way", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) {
				c := fixture(m, 0)["checks"].(map[string]any)
				s := string(c["mean_attention_spread"].(json.Number))
				v, _ := strconv.ParseFloat(s, 64)
				decimals := len(s) - strings.IndexByte(s, '.') - 1
				c["mean_attention_spread"] = json.Number(strconv.FormatFloat(v+math.Pow(10, -float64(decimals)), 'f', decimals, 64))
			})
		}, 0, ""},
		{"float output beyond tolerance", func(t *testing.T, dir string) {
			patchTensor(t, filepath.Join(dir, expected), "log_probs", 3, scaleFloat(1.001))
			rehash(t, dir)
		}, 0, expected + ": log_probs differs beyond tolerance"},
		{"a token", func(t *testing.T, dir string) {
			patchTensor(t, filepath.Join(dir, expected), "greedy_tokens", 0, func(b []byte) { b[0]++ })
			rehash(t, dir)
		}, 0, expected + ": greedy_tokens differs (int64, compared exactly)"},
		{"a checkpoint byte", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "luong-dot_b4_l2", "checkpoint.pt")
			data, _ := os.ReadFile(p)
			data[len(data)/2] ^= 1
			os.WriteFile(p, data, 0o644)
		}, 0, "luong-dot_b4_l2/checkpoint.pt: differs (compared byte for byte)"},
		{"an input", func(t *testing.T, dir string) {
			patchTensor(t, filepath.Join(dir, "bahdanau_b4_l2", "inputs.safetensors"), "source_ids", 1, func(b []byte) { b[0] ^= 1 })
		}, 0, "bahdanau_b4_l2/inputs.safetensors: differs (compared byte for byte)"},
		{"a manifest value", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { fixture(m, 2)["seed"] = json.Number("7") })
		}, 0, "manifest.json: fixtures.2.seed: 7, want"},
		{"a float statistic beyond tolerance", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { fixture(m, 0)["checks"].(map[string]any)["min_top2_gap"] = json.Number("0.5") })
		}, 0, "manifest.json: fixtures.0.checks.min_top2_gap: 0.5, want"},
		{"the manifest's structure", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m map[string]any) { delete(fixture(m, 1), "ragged") })
		}, 0, "manifest.json: fixtures.1.ragged: only in the committed manifest"},
		{"an output hash that is not the file's", func(t *testing.T, dir string) {
			patchTensor(t, filepath.Join(dir, expected), "log_probs", 3, scaleFloat(1+1e-7))
		}, 1, "bahdanau_b1_l1/expected.safetensors has sha256"},
		{"a missing file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "bahdanau_b4_l2", "checkpoint.safetensors"))
		}, 0, "bahdanau_b4_l2/checkpoint.safetensors: only in " + committed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyTree(t)
			c.change(t, dir)
			r, err := compareTrees(committed, dir)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == "" && len(r.diffs) > 0:
				t.Errorf("want up to date, got differences:\n%s", strings.Join(r.diffs, "\n"))
			case c.want != "" && !strings.Contains(strings.Join(r.diffs, "\n"), c.want):
				t.Errorf("differences lack %q:\n%s", c.want, strings.Join(r.diffs, "\n"))
			}
			if r.inexact != c.inexact {
				t.Errorf("%d float tensors within tolerance, want %d", r.inexact, c.inexact)
			}
		})
	}
}

func TestLastDigit(t *testing.T) {
	for in, want := range map[string]float64{"0.0926": 1e-4, "0.223948": 1e-6, "3": 1, "1.5e-3": 1e-4, "2E5": 1e5} {
		if got := lastDigit(json.Number(in)); math.Abs(got-want) > want*1e-9 {
			t.Errorf("lastDigit(%s) = %g, want %g", in, got, want)
		}
	}
}
