package heatmap

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readPNG(t *testing.T, path string) (w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	return b.Dx(), b.Dy()
}

func TestWritePNG(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.png")
	if err := WritePNG(small, "ab", []string{"a", "b"}, []string{"x", "<eos>"}, [][]float32{{0.9, 0.1}, {0.2, 0.8}}); err != nil {
		t.Fatal(err)
	}
	// 30 source tokens by 20 outputs: the image grows with the cells.
	att := make([][]float32, 20)
	for i := range att {
		att[i] = make([]float32, 30)
		att[i][i] = 1
	}
	src, out := make([]string, 30), make([]string, 20)
	for i := range src {
		src[i] = "word"
	}
	for i := range out {
		out[i] = "w"
	}
	big := filepath.Join(dir, "big.png")
	if err := WritePNG(big, "long", src, out, att); err != nil {
		t.Fatal(err)
	}
	sw, sh := readPNG(t, small)
	bw, bh := readPNG(t, big)
	if sw <= 0 || sh <= 0 || bw <= sw || bh <= sh {
		t.Errorf("small %dx%d, big %dx%d: want the big one larger both ways", sw, sh, bw, bh)
	}
	err := WritePNG(filepath.Join(dir, "none.png"), "x", []string{"a"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `"x" produced no output tokens`) {
		t.Errorf("no tokens: %v", err)
	}
	if err := WritePNG(filepath.Join(dir, "no", "such", "dir.png"), "ab", []string{"a"}, []string{"x"}, [][]float32{{1}}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestSeriesNumbersFiles(t *testing.T) {
	dir := t.TempDir()
	att := [][]float32{{1}}
	one := &Series{Path: filepath.Join(dir, "one.png")}
	if err := one.Add("a", []string{"a"}, []string{"x"}, att); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(one.Path); err == nil {
		t.Error("the single heat map was written before Close")
	}
	if err := one.Close(); err != nil {
		t.Fatal(err)
	}
	readPNG(t, one.Path)

	three := &Series{Path: filepath.Join(dir, "att.png")}
	for i := 0; i < 3; i++ {
		if err := three.Add("a", []string{"a"}, []string{"x"}, att); err != nil {
			t.Fatal(err)
		}
	}
	if err := three.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"att-1.png", "att-2.png", "att-3.png"} {
		readPNG(t, filepath.Join(dir, name))
	}
	if _, err := os.Stat(three.Path); err == nil {
		t.Error("att.png written although there were three inputs")
	}
	none := &Series{}
	if err := none.Add("a", nil, nil, nil); err != nil || none.Close() != nil {
		t.Error("a Series without Path wrote or failed")
	}
}
