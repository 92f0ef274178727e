// Package heatmap draws attention weights as PNG heat maps: source tokens
// across, output tokens down (the first on top), weights 0..1 on a colour
// scale, as `attnx translate --plot` writes them.
package heatmap

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// grid shows attention as a plotter.GridXYZ: column c is source token c,
// row r is output token n-1-r, so that the first output is on top.
type grid struct{ a [][]float32 }

func (g grid) Dims() (c, r int)   { return len(g.a[0]), len(g.a) }
func (g grid) Z(c, r int) float64 { return float64(g.a[len(g.a)-1-r][c]) }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }
func (g grid) Min() float64       { return 0 }
func (g grid) Max() float64       { return 1 }

// ticks labels positions 0, 1, ... with tokens, spaces shown as "·".
func ticks(labels []string) []plot.Tick {
	out := make([]plot.Tick, len(labels))
	for i, l := range labels {
		// Spaces, and SentencePiece's word-start mark U+2581 (which the
		// plot's font lacks), show as a middle dot.
		out[i] = plot.Tick{Value: float64(i), Label: strings.NewReplacer(" ", "·", "\u2581", "·").Replace(l)}
	}
	return out
}

// WritePNG draws attention (one row per output token, each with one weight
// per source token) to path, titled with caption; source and output label
// the axes.
func WritePNG(path, caption string, source, output []string, attention [][]float32) error {
	if len(attention) == 0 || len(attention[0]) == 0 {
		return fmt.Errorf("attention plot %s: %q produced no output tokens to plot", path, caption)
	}
	g := grid{attention}
	cols, rows := g.Dims()
	cmap := moreland.ExtendedBlackBody()
	cmap.SetMin(0)
	cmap.SetMax(1)

	p := plot.New()
	p.Title.Text = "attention: " + caption
	p.X.Label.Text = "source"
	p.Y.Label.Text = "output"
	p.Add(plotter.NewHeatMap(g, cmap.Palette(256)))
	p.X.Min, p.X.Max = -0.5, float64(cols)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(rows)-0.5
	p.X.Tick.Marker = plot.ConstantTicks(ticks(source))
	rev := make([]string, len(output))
	for i, s := range output {
		rev[len(output)-1-i] = s
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks(rev))
	long := false
	for _, s := range source {
		long = long || len([]rune(s)) > 2
	}
	if long {
		p.X.Tick.Label.Rotation = math.Pi / 2
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}

	bar := plot.New()
	bar.Add(&plotter.ColorBar{ColorMap: cmap, Vertical: true})
	bar.HideX()
	bar.Y.Padding = 0
	bar.Title.Text = "weight"

	cell := vg.Points(22)
	barW := vg.Points(80)
	width := max(vg.Points(320), cell*vg.Length(cols)+vg.Points(140)) + barW
	height := max(vg.Points(240), cell*vg.Length(rows)+vg.Points(110))
	img := vgimg.New(width, height)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -barW-vg.Points(10), 0, 0))
	bar.Draw(draw.Crop(dc, width-barW+vg.Points(15), 0, vg.Points(40), -vg.Points(10)))

	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("attention plot: writing %s: %w", path, err)
	}
	return nil
}

// Series writes one heat map per input: Path itself when there is one
// input, PATH-1.png, PATH-2.png, ... (the number before the extension) when
// there are several. The first is held back until a second arrives or
// Close, so that streamed inputs need no look-ahead.
type Series struct {
	// Path is the file name of a single heat map; "" writes nothing.
	Path  string
	n     int
	first item
}

type item struct {
	caption        string
	source, output []string
	attention      [][]float32
}

// Add draws one input's attention.
func (s *Series) Add(caption string, source, output []string, attention [][]float32) error {
	if s.Path == "" {
		return nil
	}
	s.n++
	it := item{caption, source, output, attention}
	switch s.n {
	case 1:
		s.first = it
		return nil
	case 2:
		if err := s.first.write(s.numbered(1)); err != nil {
			return err
		}
		s.first = item{}
	}
	return it.write(s.numbered(s.n))
}

// Close writes the held-back heat map when there was exactly one input.
func (s *Series) Close() error {
	if s.Path == "" || s.n != 1 {
		return nil
	}
	return s.first.write(s.Path)
}

func (it item) write(path string) error {
	return WritePNG(path, it.caption, it.source, it.output, it.attention)
}

func (s *Series) numbered(i int) string {
	ext := filepath.Ext(s.Path)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(s.Path, ext), i, ext)
}
