package shard

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/attnx/attnx/translate"
)

// setNonZero sets v, a settable zero value, to a value that is not zero;
// a kind it does not know fails the test, so that a new option's type is
// taught to it.
func setNonZero(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		setNonZero(t, name, p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setNonZero(t, name, s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMapWithSize(v.Type(), 1)
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		setNonZero(t, name, k)
		setNonZero(t, name, e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.NumField() == 0 {
			t.Fatalf("%s: an empty struct", name)
		}
		setNonZero(t, name, v.Field(0))
	default:
		t.Fatalf("%s is a %s: teach setNonZero a value of it", name, v.Kind())
	}
}

// TestSettingsEveryField sets each field of translate.Options and
// translate.CorpusOptions in turn, by reflection over the structs: the
// digest changes for every one but those Unchanging names (and a pointer
// to a zero value is not nil). A new option is in the digest unless it is
// added to Unchanging with its reason.
func TestSettingsEveryField(t *testing.T) {
	base := Settings{Model: map[string]string{"encoder.onnx": "sha256:00"}, Output: map[string]string{"json": "false"}}
	digest := func(s *Settings) string {
		f, err := s.Fields()
		if err != nil {
			t.Fatal(err)
		}
		return Digest(f)
	}
	d0 := digest(&base)
	seen := map[string]bool{}
	for _, group := range []struct {
		prefix string
		get    func(*Settings) reflect.Value
	}{
		{"Options", func(s *Settings) reflect.Value { return reflect.ValueOf(&s.Options).Elem() }},
		{"Corpus", func(s *Settings) reflect.Value { return reflect.ValueOf(&s.Corpus).Elem() }},
	} {
		typ := group.get(&base).Type()
		for i := range typ.NumField() {
			name := group.prefix + "." + typ.Field(i).Name
			seen[name] = true
			s := base
			f := group.get(&s).Field(i)
			setNonZero(t, name, f)
			changed := digest(&s) != d0
			if reason := Unchanging[name]; reason != "" {
				if changed {
					t.Errorf("%s changed the digest, but Unchanging leaves it out (%s)", name, reason)
				}
				continue
			}
			if !changed {
				t.Errorf("%s = %v did not change the digest", name, f.Interface())
			}
			if f.Kind() == reflect.Pointer {
				s := base
				f := group.get(&s).Field(i)
				f.Set(reflect.New(f.Type().Elem()))
				if digest(&s) == d0 {
					t.Errorf("%s: a pointer to %v has the digest of nil", name, f.Elem().Interface())
				}
			}
		}
	}
	for name := range Unchanging {
		if !seen[name] {
			t.Errorf("Unchanging names %s, which is no field of the options", name)
		}
	}
	for _, c := range []struct {
		name string
		edit func(*Settings)
	}{
		{"another model file's digest", func(s *Settings) { s.Model = map[string]string{"encoder.onnx": "sha256:01"} }},
		{"one more model file", func(s *Settings) { s.Model = map[string]string{"encoder.onnx": "sha256:00", "x": "sha256:00"} }},
		{"another output setting", func(s *Settings) { s.Output = map[string]string{"json": "true"} }},
		{"a model file named as an output setting", func(s *Settings) {
			s.Model, s.Output = map[string]string{}, map[string]string{"json": "false", "encoder.onnx": "sha256:00"}
		}},
	} {
		s := base
		c.edit(&s)
		if digest(&s) == d0 {
			t.Errorf("%s: the same digest", c.name)
		}
	}
	if d1 := digest(&Settings{Options: translate.Options{Threads: 8}, Model: base.Model, Output: base.Output}); d1 != d0 {
		t.Errorf("Options.Threads 8 changed the digest")
	}
}

// TestModelFiles: a model directory of links has the digests of the
// files they point to, whatever the links' names; hidden files count,
// subdirectories and atomic writes in progress do not.
func TestModelFiles(t *testing.T) {
	store := t.TempDir()
	for name, data := range map[string]string{"fp32.onnx": "fp32 weights", "int8.onnx": "int8 weights", "attnx.json": "{}"} {
		os.WriteFile(filepath.Join(store, name), []byte(data), 0o644)
	}
	dir := filepath.Join(t.TempDir(), "release")
	os.Mkdir(dir, 0o755)
	os.Symlink(filepath.Join(store, "fp32.onnx"), filepath.Join(dir, "decoder.onnx"))
	os.Symlink(filepath.Join(store, "attnx.json"), filepath.Join(dir, "attnx.json"))
	os.Mkdir(filepath.Join(dir, "old"), 0o755)
	os.WriteFile(filepath.Join(dir, ".decoder.onnx"+".tmp-123"), []byte("half"), 0o644)
	files, err := ModelFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"decoder.onnx": "sha256:19e8c11931360abc600661bd2a98ebafefb10020e1bf1339cdda3bf2704dec7d",
		"attnx.json":   "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
	}
	if len(files) != len(want) || files["attnx.json"] != want["attnx.json"] || files["decoder.onnx"] != want["decoder.onnx"] {
		t.Fatalf("ModelFiles = %v, want the two linked files", files)
	}
	fp32 := files["decoder.onnx"]
	os.Remove(filepath.Join(dir, "decoder.onnx"))
	os.Symlink(filepath.Join(store, "int8.onnx"), filepath.Join(dir, "decoder.onnx"))
	os.WriteFile(filepath.Join(dir, ".hidden"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(store, "gone"), filepath.Join(dir, "dangling"))
	files, err = ModelFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if files["decoder.onnx"] == fp32 || files[".hidden"] == "" || files["dangling"] != "missing (a link to nothing)" {
		t.Errorf("relinked to int8, a hidden file and a dangling link: %v", files)
	}
	if _, err := ModelFiles(filepath.Join(dir, "none")); err == nil {
		t.Error("ModelFiles of a missing directory: no error")
	}
}
