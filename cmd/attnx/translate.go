package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attnx/attnx/runtime"
	"github.com/attnx/attnx/translate"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// translateStdin is where `attnx translate` reads inputs when given none on
// the command line (a variable for tests).
var translateStdin io.Reader = os.Stdin

// translateMaxLine is the longest input line read from stdin.
const translateMaxLine = 1 << 20

func init() {
	commandDocs["translate"] = `
Greedy-decodes inputs with the model directory DIR (attnx.json,
encoder.onnx, decoder.onnx and optionally greedy.onnx).

Inputs are the TEXT arguments, token ids given with --ids (repeatable), or,
when there are neither, one input per line from stdin, decoded in batches of
--batch lines and written as each batch finishes. Text is split into
characters when the model's source vocabulary is character-level, else at
white space; stdin lines are token ids when attnx.json has no source
vocabulary.

Output is "input -> output" per line, or with --json one JSON object per
input: input, source_ids, tokens, text, attention (one row per output token).
--plot FILE.png draws the attention of the input as a heat map (source
tokens across, output tokens down); with several inputs, FILE-1.png,
FILE-2.png, ... one per input.`
}

// translateIDsFlag collects --ids values.
type translateIDsFlag [][]int64

func (f *translateIDsFlag) String() string { return "" }

// Type names the value in the help, as pflag.Value requires.
func (f *translateIDsFlag) Type() string { return "ids" }

func (f *translateIDsFlag) Set(s string) error {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	if len(fields) == 0 {
		return errors.New("empty list of token ids")
	}
	ids := make([]int64, len(fields))
	for i, x := range fields {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a token id (want integers separated by spaces)", x)
		}
		ids[i] = v
	}
	*f = append(*f, ids)
	return nil
}

// translateInput is one input and how to name it in messages.
type translateInput struct {
	where string // "line 7", "--ids #2", "argument 1"
	shown string // the input as shown in the output
	text  string
	ids   []int64
	isIDs bool
}

func runTranslate(args []string) error {
	fs := newFlagSet("translate")
	model := fs.String("model", "", "model directory (`DIR` with attnx.json, encoder.onnx, decoder.onnx)")
	var ids translateIDsFlag
	fs.Var(&ids, "ids", "translate these source token `ids` (\"5 9 2\"); repeatable")
	batch := fs.Int("batch", 32, "inputs decoded together")
	maxLen := fs.Int("max-len", 0, "most output tokens per input, EOS included (0: 2n+10 for n source tokens)")
	maxSrc := fs.Int("max-src-len", 0, "refuse inputs of more than this many source tokens (0: no limit)")
	jsonOut := fs.Bool("json", false, "write one JSON object per input")
	plotPath := fs.String("plot", "", "draw attention heat maps to `FILE.png` (numbered per input when there are several)")
	device := fs.String("device", "cpu", "cpu, cuda or auto (CUDA, else CPU)")
	threads := fs.Int("threads", 0, "ONNX Runtime intra-op threads (0: one per core)")
	engine := fs.String("engine", "", "steps (encoder + one decoder run per step) or loop (greedy.onnx); default loop when greedy.onnx exists")
	unk := fs.Bool("unk", false, "map characters or words outside the source vocabulary to <unk> instead of failing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *model == "":
		return &usageError{"--model DIR is required"}
	case *batch < 1:
		return &usageError{fmt.Sprintf("--batch %d: must be at least 1", *batch)}
	case *maxLen < 0:
		return &usageError{fmt.Sprintf("--max-len %d: must not be negative", *maxLen)}
	case *maxSrc < 0:
		return &usageError{fmt.Sprintf("--max-src-len %d: must not be negative", *maxSrc)}
	case *threads < 0:
		return &usageError{fmt.Sprintf("--threads %d: must not be negative", *threads)}
	case *engine != "" && *engine != translate.EngineSteps && *engine != translate.EngineLoop:
		return &usageError{fmt.Sprintf("--engine %q: want %s or %s", *engine, translate.EngineSteps, translate.EngineLoop)}
	case *device != runtime.DeviceCPU && *device != runtime.DeviceCUDA && *device != runtime.DeviceAuto:
		return &usageError{fmt.Sprintf("--device %q: want cpu, cuda or auto", *device)}
	case *plotPath != "" && !strings.EqualFold(filepath.Ext(*plotPath), ".png"):
		return &usageError{fmt.Sprintf("--plot %s: the file name must end in .png", *plotPath)}
	}
	tr, err := translate.Open(*model, translate.Options{
		Threads: *threads, Device: *device, Engine: *engine, MaxLen: *maxLen, MaxSourceLen: *maxSrc, BatchSize: *batch, UnknownToUNK: *unk,
	})
	if err != nil {
		return translateCLIError(err)
	}
	defer tr.Close()
	for _, n := range tr.Notes() {
		fmt.Fprintf(stderr, "attnx translate: note: %s\n", n)
	}

	w := bufio.NewWriter(stdout)
	defer w.Flush()
	out := &translateOutput{w: w, json: *jsonOut, plot: translatePlotter{path: *plotPath}, tr: tr}
	ctx := context.Background()

	if len(ids) > 0 || fs.NArg() > 0 {
		var inputs []translateInput
		for i, row := range ids {
			inputs = append(inputs, translateInput{where: fmt.Sprintf("--ids #%d", i+1), shown: joinIDs(row), ids: row, isIDs: true})
		}
		for i, s := range fs.Args() {
			inputs = append(inputs, translateInput{where: fmt.Sprintf("argument %d", i+1), shown: s, text: s})
		}
		for start := 0; start < len(inputs); start += *batch {
			if err := out.batch(ctx, inputs[start:min(start+*batch, len(inputs))]); err != nil {
				return err
			}
		}
		return out.finish()
	}
	return out.stream(ctx, translateStdin, *batch)
}

// translateCLIError drops the package prefix: report already names the
// command.
func translateCLIError(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "translate: "))
}

func joinIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, " ")
}

// translateOutput writes results as they come.
type translateOutput struct {
	w    *bufio.Writer
	json bool
	plot translatePlotter
	tr   *translate.Translator
}

// stream reads r line by line and translates batch lines at a time, so
// memory stays bounded whatever the input's length.
func (o *translateOutput) stream(ctx context.Context, r io.Reader, batch int) error {
	counter := &translateCountingReader{r: r}
	sc := bufio.NewScanner(counter)
	sc.Buffer(make([]byte, 64*1024), translateMaxLine)
	bar := newTranslateBar(r)
	defer bar.close()
	idsInput := !o.tr.HasSourceVocab()
	var pending []translateInput
	line := 0
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		err := o.batch(ctx, pending)
		pending = pending[:0]
		bar.update(counter.n, line)
		return err
	}
	for sc.Scan() {
		line++
		s := strings.TrimSuffix(sc.Text(), "\r")
		in := translateInput{where: fmt.Sprintf("line %d", line), shown: s, text: s}
		if idsInput {
			var f translateIDsFlag
			if strings.TrimSpace(s) != "" {
				if err := f.Set(s); err != nil {
					return fmt.Errorf("line %d: %v (the model has no source vocabulary, so stdin lines are token ids)", line, err)
				}
				in.ids = f[0]
			}
			in.isIDs = true
		}
		pending = append(pending, in)
		if len(pending) == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes", line+1, translateMaxLine)
		}
		return fmt.Errorf("reading stdin: %w", err)
	}
	if err := flush(); err != nil {
		return err
	}
	return o.finish()
}

// batch translates inputs (all text or all ids, or a mix split in two
// calls) and writes their results in order.
func (o *translateOutput) batch(ctx context.Context, inputs []translateInput) error {
	results := make([]translate.Result, len(inputs))
	var textIdx, idIdx []int
	var texts []string
	var rows [][]int64
	for i, in := range inputs {
		if in.isIDs {
			idIdx, rows = append(idIdx, i), append(rows, in.ids)
		} else {
			textIdx, texts = append(textIdx, i), append(texts, in.text)
		}
	}
	run := func(idx []int, call func() ([]translate.Result, error)) error {
		if len(idx) == 0 {
			return nil
		}
		res, err := call()
		var ie *translate.InputError
		if errors.As(err, &ie) && ie.Row < len(idx) {
			in := inputs[idx[ie.Row]]
			// The API's hints name its Go options; here they are flags.
			msg := strings.NewReplacer("set UnknownToUNK to map", "pass --unk to map",
				"the limit MaxSourceLen = ", "the limit --max-src-len ").Replace(ie.Msg)
			return &badInput{index: idx[ie.Row], err: fmt.Errorf("%s (%q): %s", in.where, in.shown, msg)}
		}
		if err != nil {
			return translateCLIError(err)
		}
		for k, i := range idx {
			results[i] = res[k]
		}
		return nil
	}
	err := run(idIdx, func() ([]translate.Result, error) { return o.tr.TranslateIDs(ctx, rows) })
	if err == nil {
		err = run(textIdx, func() ([]translate.Result, error) { return o.tr.Translate(ctx, texts) })
	}
	var bad *badInput
	if errors.As(err, &bad) {
		// Nothing valid is lost: the inputs before the bad one are
		// translated and written before the error is reported (an earlier
		// bad input of the other kind surfaces in that call instead).
		if perr := o.batch(ctx, inputs[:bad.index]); perr != nil {
			return perr
		}
		return bad.err
	}
	if err != nil {
		return err
	}
	for i, res := range results {
		if err := o.write(inputs[i], res); err != nil {
			return err
		}
	}
	return o.w.Flush()
}

// badInput is an input the translator refused, with its place in the batch.
type badInput struct {
	index int
	err   error
}

func (b *badInput) Error() string { return b.err.Error() }

func (o *translateOutput) write(in translateInput, res translate.Result) error {
	if o.json {
		data, err := json.Marshal(res.JSON(in.shown))
		if err != nil {
			return err
		}
		o.w.Write(data)
		o.w.WriteByte('\n')
	} else {
		output := res.Text
		if !o.tr.HasTargetVocab() {
			output = joinIDs(res.Tokens)
		}
		fmt.Fprintf(o.w, "%s -> %s\n", in.shown, output)
	}
	return o.plot.add(in.shown, res)
}

func (o *translateOutput) finish() error { return o.plot.finish() }

// translatePlotter writes one heat map per input: FILE.png when there is
// one input, FILE-1.png, FILE-2.png, ... when there are several. The first
// is held back until the second arrives, so that streaming input needs no
// look-ahead.
type translatePlotter struct {
	path         string
	n            int
	first        translate.Result
	firstCaption string
}

func (p *translatePlotter) add(caption string, res translate.Result) error {
	if p.path == "" {
		return nil
	}
	p.n++
	switch p.n {
	case 1:
		p.first, p.firstCaption = res, caption
		return nil
	case 2:
		if err := writeAttentionPNG(p.numbered(1), p.firstCaption, p.first); err != nil {
			return err
		}
		p.first = translate.Result{}
	}
	return writeAttentionPNG(p.numbered(p.n), caption, res)
}

func (p *translatePlotter) finish() error {
	if p.path == "" || p.n != 1 {
		return nil
	}
	return writeAttentionPNG(p.path, p.firstCaption, p.first)
}

func (p *translatePlotter) numbered(i int) string {
	ext := filepath.Ext(p.path)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(p.path, ext), i, ext)
}

// translateGrid shows attention as a plotter.GridXYZ: column c is source
// token c, row r is output token n-1-r, so that the first output is on top.
type translateGrid struct{ a [][]float32 }

func (g translateGrid) Dims() (c, r int)   { return len(g.a[0]), len(g.a) }
func (g translateGrid) Z(c, r int) float64 { return float64(g.a[len(g.a)-1-r][c]) }
func (g translateGrid) X(c int) float64    { return float64(c) }
func (g translateGrid) Y(r int) float64    { return float64(r) }
func (g translateGrid) Min() float64       { return 0 }
func (g translateGrid) Max() float64       { return 1 }
func (g translateGrid) rows() int          { return len(g.a) }
func (g translateGrid) cols() int          { return len(g.a[0]) }
func (g translateGrid) String() string     { return fmt.Sprintf("%dx%d", g.rows(), g.cols()) }
func translateTickLabel(tok string) string { return strings.ReplaceAll(tok, " ", "·") }
func translateTicks(labels []string) []plot.Tick {
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(i), Label: translateTickLabel(l)}
	}
	return ticks
}

// writeAttentionPNG draws res's attention: source tokens along x, output
// tokens along y (first at the top), weights 0..1 on a colour scale.
func writeAttentionPNG(path, caption string, res translate.Result) error {
	if len(res.Attention) == 0 || len(res.Attention[0]) == 0 {
		return fmt.Errorf("--plot %s: %q produced no output tokens to plot", path, caption)
	}
	g := translateGrid{res.Attention}
	cmap := moreland.ExtendedBlackBody()
	cmap.SetMin(0)
	cmap.SetMax(1)

	p := plot.New()
	p.Title.Text = "attention: " + caption
	p.X.Label.Text = "source"
	p.Y.Label.Text = "output"
	hm := plotter.NewHeatMap(g, cmap.Palette(256))
	p.Add(hm)
	p.X.Min, p.X.Max = -0.5, float64(g.cols())-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(g.rows())-0.5
	p.X.Tick.Marker = plot.ConstantTicks(translateTicks(res.SourceTokens))
	out := res.OutputTokens
	rev := make([]string, len(out))
	for i, s := range out {
		rev[len(out)-1-i] = s
	}
	p.Y.Tick.Marker = plot.ConstantTicks(translateTicks(rev))
	long := false
	for _, s := range res.SourceTokens {
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
	width := max(vg.Points(320), cell*vg.Length(g.cols())+vg.Points(140)) + barW
	height := max(vg.Points(240), cell*vg.Length(g.rows())+vg.Points(110))
	img := vgimg.New(width, height)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -barW-vg.Points(10), 0, 0))
	bar.Draw(draw.Crop(dc, width-barW+vg.Points(15), 0, vg.Points(40), -vg.Points(10)))

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("--plot: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--plot: writing %s: %w", path, err)
	}
	return nil
}

// translateCountingReader counts the bytes read, for the progress bar.
type translateCountingReader struct {
	r io.Reader
	n int64
}

func (c *translateCountingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// translateBar is a progress bar on stderr, shown only when stderr is a
// terminal, the input is not, and the input turns out long: a regular file
// of more than translateBarMinBytes, or more than one batch from a pipe.
type translateBar struct {
	enabled bool
	size    int64 // -1 when unknown
	bar     *progressbar.ProgressBar
	updates int
}

const translateBarMinBytes = 64 * 1024

func newTranslateBar(in io.Reader) *translateBar {
	b := &translateBar{size: -1}
	errf, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(errf.Fd())) {
		return b
	}
	inf, ok := in.(*os.File)
	if ok && term.IsTerminal(int(inf.Fd())) {
		return b // someone is typing
	}
	b.enabled = true
	if ok {
		if st, err := inf.Stat(); err == nil && st.Mode().IsRegular() {
			b.size = st.Size()
		}
	}
	return b
}

func (b *translateBar) update(bytes int64, lines int) {
	if !b.enabled {
		return
	}
	b.updates++
	if b.bar == nil {
		long := b.updates > 1 || (b.size > translateBarMinBytes)
		if !long {
			return
		}
		b.bar = progressbar.NewOptions64(b.size,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("translating"),
			progressbar.OptionShowBytes(b.size > 0),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100_000_000),
			progressbar.OptionClearOnFinish(),
		)
	}
	if b.size > 0 {
		b.bar.Set64(bytes)
	} else {
		b.bar.Describe(fmt.Sprintf("translating: %d lines", lines))
		b.bar.Set64(bytes)
	}
}

func (b *translateBar) close() {
	if b.bar != nil {
		b.bar.Finish()
		b.bar.Clear()
	}
}
