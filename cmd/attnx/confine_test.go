package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pickledStr is the pickle opcode of the string s (BINUNICODE).
func pickledStr(s string) []byte {
	return append(binary.LittleEndian.AppendUint32([]byte{'X'}, uint32(len(s))), s...)
}

// pickledInt is the pickle opcode of the small integer n (BININT1).
func pickledInt(n byte) []byte { return []byte{'K', n} }

// setPickled rewrites, in a pickle, the value that follows each dict key
// key (its BINUNICODE and memo put, or a memo get of it): that value's
// opcode becomes val. It fails the test when the key is nowhere or a
// value's opcode is not one it knows.
func setPickled(t *testing.T, pkl []byte, key string, val []byte) []byte {
	t.Helper()
	keys := [][]byte{pickledStr(key)}
	for i := 0; ; {
		j := bytes.Index(pkl[i:], keys[0])
		if j < 0 {
			break
		}
		i += j + len(keys[0])
		var memo uint32
		switch pkl[i] {
		case 'q':
			memo = uint32(pkl[i+1])
		case 'r':
			memo = binary.LittleEndian.Uint32(pkl[i+1:])
		default:
			continue
		}
		keys = append(keys, binary.LittleEndian.AppendUint32([]byte{'j'}, memo))
		if memo < 256 {
			keys = append(keys, []byte{'h', byte(memo)})
		}
	}
	var out []byte
	n := 0
	for {
		i, k := -1, []byte(nil)
		for _, c := range keys {
			if j := bytes.Index(pkl, c); j >= 0 && (i < 0 || j < i) {
				i, k = j, c
			}
		}
		if i < 0 {
			break
		}
		j := i + len(k)
		switch pkl[j] { // the key's memo put
		case 'q':
			j += 2
		case 'r':
			j += 5
		case 0x94:
			j++
		}
		size := map[byte]int{'h': 2, 'j': 5, 'K': 2, 'M': 3, 'J': 5, 'N': 1, 0x88: 1, 0x89: 1}[pkl[j]]
		switch pkl[j] {
		case 'X':
			size = 5 + int(binary.LittleEndian.Uint32(pkl[j+1:]))
		case 0x8c:
			size = 2 + int(pkl[j+1])
		}
		if size == 0 {
			t.Fatalf("the value of %q starts with opcode %#x, which setPickled does not know", key, pkl[j])
		}
		out = append(append(out, pkl[:j]...), val...)
		pkl = pkl[j+size:]
		n++
	}
	if n == 0 {
		t.Fatalf("the pickle has no key %q", key)
	}
	return append(out, pkl...)
}

// setCheckpointOptions rewrites the options (dict keys, as setPickled)
// of the torch.save zip at path in place.
func setCheckpointOptions(t *testing.T, path string, vals map[string][]byte) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f.Name, "/data.pkl") {
			for k, v := range vals {
				data = setPickled(t, data, k, v)
			}
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// secretMarker is a BPE merge no text reaches, appended to the copies of
// a fixture's codes placed outside the checkpoint's folder: a model
// directory that holds it holds a file from there.
const secretMarker = "attnxsecretmarker q"

// marked writes, in a new directory outside any fixture's, a copy of the
// file src with the marker appended, as name, and returns its path.
func marked(t *testing.T, src, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, append(data, secretMarker+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// relTo is p relative to dir: a path with ".." components for a p
// outside it.
func relTo(t *testing.T, dir, p string) string {
	t.Helper()
	rel, err := filepath.Rel(dir, p)
	if err != nil || !strings.HasPrefix(rel, "..") {
		t.Fatalf("%s relative to %s: %q, %v", p, dir, rel, err)
	}
	return rel
}

// linkTo replaces the file at p with a symbolic link to target.
func linkTo(t *testing.T, p, target string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// holdsMarker reports a file of the model directory dir that holds the
// marker, "" for none.
func holdsMarker(t *testing.T, dir, marker string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(marker)) {
			return e.Name()
		}
	}
	return ""
}

// TestExportStaysInCheckpointFolder (issue 53, item 2): a file a
// checkpoint or its toolkit's config names is read only inside the
// checkpoint's folder, after resolving links. Crafted checkpoints of each
// toolkit name a tokenizer outside it: by an absolute path, by a path
// with "..", and by a link inside the folder to a file elsewhere (each
// file a working tokenizer, so that only the rule keeps it out). Export
// still writes the model, copies nothing from there (no file of the
// model directory holds the marker), and its note names the option, the
// path and the flag that gives the file.
func TestExportStaysInCheckpointFolder(t *testing.T) {
	tk := filepath.Join("..", "..", "testdata", "toolkits")
	onmt := filepath.Join(tk, "onmt-tok-bpe")
	joey := filepath.Join(tk, "joey-bpe")
	moses := filepath.Join(tk, "fairseq-moses")
	lstm := filepath.Join(tk, "fairseq-lstm")
	secret := filepath.Join(t.TempDir(), "secrets.txt")
	if err := os.WriteFile(secret, []byte("attnxsecretpassword 9\nhunter2 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	onmtFolder := func(t *testing.T) (string, string) {
		dir := copyFiles(t, onmt, "model.pt", "tok_src.bpe", "tok_tgt.bpe")
		return dir, filepath.Join(dir, "model.pt")
	}
	joeyFolder := func(t *testing.T, codes func(dir string) string) (string, string) {
		dir := copyFiles(t, joey, "model/1500.ckpt", "model/config.yaml", "model/src_vocab.txt", "model/trg_vocab.txt", "model/bpe_src.codes", "model/bpe_tgt.codes")
		model := filepath.Join(dir, "model")
		if codes != nil {
			cfg := filepath.Join(model, "config.yaml")
			data, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Replace(string(data), `codes: "bpe_src.codes"`, `codes: "`+codes(model)+`"`, 1)
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return model, filepath.Join(model, "1500.ckpt")
	}
	fairseqFolder := func(t *testing.T, src string, files ...string) (string, string) {
		dir := copyFiles(t, src, append([]string{"checkpoint_best.pt", "data-bin/dict.en.txt", "data-bin/dict.de.txt"}, files...)...)
		return dir, filepath.Join(dir, "checkpoint_best.pt")
	}
	for _, c := range []struct {
		name string
		// craft makes the checkpoint's folder and returns it and the
		// checkpoint, and the path its options name.
		craft          func(t *testing.T) (dir, ckpt, named string)
		option, flag   string
		marker         string
		sides          int // the sides that lose their tokenizer: 1 source, 2 both
		noteSubstrings []string
	}{
		{"OpenNMT-py onmt_tokenize, absolute subword vocabulary", func(t *testing.T) (string, string, string) {
			dir, ckpt := onmtFolder(t)
			setCheckpointOptions(t, ckpt, map[string][]byte{"src_subword_vocab": pickledStr(secret), "src_vocab_threshold": pickledInt(1)})
			return dir, ckpt, secret
		}, "opt.src_subword_vocab", "--src-tokenizer", "attnxsecretpassword", 1, nil},
		{"OpenNMT-py onmt_tokenize, absolute subword model", func(t *testing.T) (string, string, string) {
			dir, ckpt := onmtFolder(t)
			p := marked(t, filepath.Join(onmt, "tok_src.bpe"), "elsewhere.bpe")
			setCheckpointOptions(t, ckpt, map[string][]byte{"src_subword_model": pickledStr(p)})
			return dir, ckpt, p
		}, "opt.src_subword_model", "--src-tokenizer", secretMarker, 1, nil},
		{"OpenNMT-py onmt_tokenize, subword model by ..", func(t *testing.T) (string, string, string) {
			dir, ckpt := onmtFolder(t)
			rel := relTo(t, dir, marked(t, filepath.Join(onmt, "tok_src.bpe"), "elsewhere.bpe"))
			setCheckpointOptions(t, ckpt, map[string][]byte{"src_subword_model": pickledStr(rel)})
			return dir, ckpt, rel
		}, "opt.src_subword_model", "--src-tokenizer", secretMarker, 1, nil},
		{"OpenNMT-py onmt_tokenize, subword model a link out of the folder", func(t *testing.T) (string, string, string) {
			dir, ckpt := onmtFolder(t)
			linkTo(t, filepath.Join(dir, "tok_src.bpe"), marked(t, filepath.Join(onmt, "tok_src.bpe"), "elsewhere.bpe"))
			return dir, ckpt, "tok_src.bpe"
		}, "opt.src_subword_model", "--src-tokenizer", secretMarker, 1, []string{"is a link to"}},
		{"JoeyNMT, absolute codes", func(t *testing.T) (string, string, string) {
			p := marked(t, filepath.Join(joey, "model", "bpe_src.codes"), "elsewhere.codes")
			dir, ckpt := joeyFolder(t, func(string) string { return p })
			return dir, ckpt, p
		}, "data.src.tokenizer_cfg.codes", "--src-tokenizer", secretMarker, 1, nil},
		{"JoeyNMT, codes by ..", func(t *testing.T) (string, string, string) {
			p := marked(t, filepath.Join(joey, "model", "bpe_src.codes"), "elsewhere.codes")
			var rel string
			dir, ckpt := joeyFolder(t, func(model string) string { rel = relTo(t, model, p); return rel })
			return dir, ckpt, rel
		}, "data.src.tokenizer_cfg.codes", "--src-tokenizer", secretMarker, 1, nil},
		{"JoeyNMT, codes a link out of the folder", func(t *testing.T) (string, string, string) {
			dir, ckpt := joeyFolder(t, nil)
			linkTo(t, filepath.Join(dir, "bpe_src.codes"), marked(t, filepath.Join(joey, "model", "bpe_src.codes"), "elsewhere.codes"))
			return dir, ckpt, "bpe_src.codes"
		}, "data.src.tokenizer_cfg.codes", "--src-tokenizer", secretMarker, 1, []string{"is a link to"}},
		{"fairseq, absolute bpe_codes", func(t *testing.T) (string, string, string) {
			dir, ckpt := fairseqFolder(t, moses, "moses.codes")
			p := marked(t, filepath.Join(moses, "moses.codes"), "elsewhere.codes")
			setCheckpointOptions(t, ckpt, map[string][]byte{"bpe_codes": pickledStr(p)})
			return dir, ckpt, p
		}, "cfg.bpe.bpe_codes", "--src-tokenizer", secretMarker, 2, nil},
		{"fairseq, bpe_codes by ..", func(t *testing.T) (string, string, string) {
			dir, ckpt := fairseqFolder(t, moses, "moses.codes")
			rel := relTo(t, dir, marked(t, filepath.Join(moses, "moses.codes"), "elsewhere.codes"))
			setCheckpointOptions(t, ckpt, map[string][]byte{"bpe_codes": pickledStr(rel)})
			return dir, ckpt, rel
		}, "cfg.bpe.bpe_codes", "--src-tokenizer", secretMarker, 2, nil},
		{"fairseq, bpe_codes a link out of the folder", func(t *testing.T) (string, string, string) {
			dir, ckpt := fairseqFolder(t, moses, "moses.codes")
			linkTo(t, filepath.Join(dir, "moses.codes"), marked(t, filepath.Join(moses, "moses.codes"), "elsewhere.codes"))
			return dir, ckpt, "/tmp/tk/work2/moses.codes"
		}, "cfg.bpe.bpe_codes", "--src-tokenizer", secretMarker, 2, []string{"is a link to"}},
		{"fairseq hub's bpecodes a link out of the folder", func(t *testing.T) (string, string, string) {
			dir, ckpt := fairseqFolder(t, lstm, "bpecodes")
			linkTo(t, filepath.Join(dir, "bpecodes"), marked(t, filepath.Join(lstm, "bpecodes"), "elsewhere.codes"))
			return dir, ckpt, "bpecodes"
		}, "fairseq hub's file", "--src-tokenizer", secretMarker, 2, []string{"is a link to"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ckpt, named := c.craft(t)
			model := filepath.Join(t.TempDir(), "m")
			code, stdout, stderr := attnx("export", ckpt, "-o", model)
			if code != 0 {
				t.Fatalf("export: exit %d: %s", code, stderr)
			}
			if f := holdsMarker(t, model, c.marker); f != "" {
				t.Errorf("the model directory's %s holds the file from outside the checkpoint's folder (%q)", f, c.marker)
			}
			want := append([]string{c.option, `"` + named + `"`, "outside", c.flag}, c.noteSubstrings...)
			found := false
			for _, line := range strings.Split(stdout, "\n") {
				n := 0
				for _, w := range want {
					if strings.Contains(line, w) {
						n++
					}
				}
				if n == len(want) && !found {
					found = true
					t.Log(strings.TrimSpace(line))
				}
			}
			if !found {
				t.Errorf("no note names all of %q:\n%s", want, stdout)
			}
			for i, label := range []string{"src-tok", "tgt-tok"} {
				if has := strings.Contains(stdout, "  "+label+" "); has == (i < c.sides) {
					t.Errorf("%s line: %v, want %v:\n%s", label, has, i >= c.sides, stdout)
				}
			}
		})
	}
}

// TestExportFairseqDictionariesStayInside (issue 53, item 2): a fairseq
// checkpoint's dictionaries are read beside it, in its data-bin, or in
// the cfg's task.data inside its folder or in the folder fairseq-train
// ran in (the one its save_dir places above the checkpoint: checkpoints/
// beside data-bin/, with no flags); a task.data that is absolute or
// climbs out, and a data-bin that is a link to elsewhere, are refused
// with an error naming the path and --data, which reads any directory.
func TestExportFairseqDictionariesStayInside(t *testing.T) {
	moses := filepath.Join("..", "..", "testdata", "toolkits", "fairseq-moses")
	dicts := []string{"data-bin/dict.en.txt", "data-bin/dict.de.txt"}
	// elsewhere holds the fixture's dictionaries, outside every folder
	// below.
	elsewhere := filepath.Join(copyFiles(t, moses, dicts...), "data-bin")
	for _, c := range []struct {
		name  string
		craft func(t *testing.T) (ckpt string, flags []string)
		want  []string // in the error; none: the export succeeds
	}{
		{"absolute task.data", func(t *testing.T) (string, []string) {
			dir := copyFiles(t, moses, "checkpoint_best.pt", "moses.codes")
			ckpt := filepath.Join(dir, "checkpoint_best.pt")
			setCheckpointOptions(t, ckpt, map[string][]byte{"data": pickledStr(elsewhere)})
			return ckpt, nil
		}, []string{`cfg.task.data names "` + elsewhere + `", outside`, "pass --data DIR"}},
		{"task.data by ..", func(t *testing.T) (string, []string) {
			dir := copyFiles(t, moses, "checkpoint_best.pt", "moses.codes")
			ckpt := filepath.Join(dir, "checkpoint_best.pt")
			rel := relTo(t, dir, elsewhere)
			setCheckpointOptions(t, ckpt, map[string][]byte{"data": pickledStr(rel)})
			return ckpt, nil
		}, []string{"cfg.task.data names \"../", "outside", "pass --data DIR"}},
		{"data-bin a link out of the folder", func(t *testing.T) (string, []string) {
			dir := copyFiles(t, moses, "checkpoint_best.pt", "moses.codes")
			if err := os.Symlink(elsewhere, filepath.Join(dir, "data-bin")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(dir, "checkpoint_best.pt"), nil
		}, []string{filepath.Join("data-bin", "dict.en.txt") + " resolves to " + filepath.Join(elsewhere, "dict.en.txt"), "pass --data DIR"}},
		{"the same dictionaries by --data", func(t *testing.T) (string, []string) {
			dir := copyFiles(t, moses, "checkpoint_best.pt", "moses.codes")
			ckpt := filepath.Join(dir, "checkpoint_best.pt")
			setCheckpointOptions(t, ckpt, map[string][]byte{"data": pickledStr(elsewhere)})
			return ckpt, []string{"--data", elsewhere}
		}, nil},
		{"fairseq-train's layout: save_dir ckpt_moses beside task.data data-bin-moses", func(t *testing.T) (string, []string) {
			run := copyFiles(t, moses, "checkpoint_best.pt", "moses.codes", dicts[0], dicts[1])
			for from, to := range map[string]string{"checkpoint_best.pt": "ckpt_moses/checkpoint_best.pt", "moses.codes": "ckpt_moses/moses.codes", "data-bin": "data-bin-moses"} {
				os.MkdirAll(filepath.Join(run, "ckpt_moses"), 0o755)
				if err := os.Rename(filepath.Join(run, from), filepath.Join(run, to)); err != nil {
					t.Fatal(err)
				}
			}
			return filepath.Join(run, "ckpt_moses", "checkpoint_best.pt"), nil
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ckpt, flags := c.craft(t)
			model := filepath.Join(t.TempDir(), "m")
			code, stdout, stderr := attnx(append([]string{"export", ckpt, "-o", model}, flags...)...)
			if c.want == nil {
				if code != 0 || !strings.Contains(stdout, "  src-tok ") {
					t.Fatalf("export: exit %d, want 0 with the tokenizer: %s%s", code, stdout, stderr)
				}
				return
			}
			if code != 1 {
				t.Fatalf("export: exit %d, want 1: %s%s", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("the error does not say %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(model); !os.IsNotExist(err) {
				t.Errorf("a refused export left %s: %v", model, err)
			}
			t.Log(strings.TrimSpace(stderr))
		})
	}
}

// TestExportSummaryNamesCopiedFiles: export's summary names, for each
// tokenizer file it copied into the model directory, where it came from:
// the checkpoint's folder for the files its options name, the path given
// for a flag's.
func TestExportSummaryNamesCopiedFiles(t *testing.T) {
	tk := filepath.Join("..", "..", "testdata", "toolkits")
	onmt := copyFiles(t, filepath.Join(tk, "onmt-tok-bpe"), "model.pt", "tok_src.bpe", "tok_tgt.bpe")
	moses := filepath.Join(tk, "fairseq-moses")
	for _, c := range []struct {
		args  []string
		files map[string]string // copied file: its source
	}{
		{[]string{filepath.Join(onmt, "model.pt")},
			map[string]string{"source.bpe": filepath.Join(onmt, "tok_src.bpe"), "target.bpe": filepath.Join(onmt, "tok_tgt.bpe")}},
		{[]string{filepath.Join(moses, "checkpoint_best.pt"), "--tokenizer", filepath.Join(moses, "moses.codes")},
			map[string]string{"bpe.codes": filepath.Join(moses, "moses.codes")}},
	} {
		code, stdout, stderr := attnx(append([]string{"export", "-o", filepath.Join(t.TempDir(), "m")}, c.args...)...)
		if code != 0 {
			t.Fatalf("export %q: exit %d: %s", c.args, code, stderr)
		}
		files := stdout[strings.Index(stdout, "\n  files\n"):]
		for name, from := range c.files {
			found := false
			for _, line := range strings.Split(files, "\n") {
				if f := strings.Fields(line); len(f) > 0 && f[0] == name {
					found = strings.HasSuffix(line, " from "+from)
				}
			}
			if !found {
				t.Errorf("export %q: the summary's files do not say %s came from %s:\n%s", c.args, name, from, files)
			}
		}
	}
}
