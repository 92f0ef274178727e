package serve

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/chromedp/chromedp"
)

// TestViewerInBrowser drives the attention viewer in headless Chromium: it
// types a sentence, waits for the heat map, checks the output text, the
// cell count and the token labels against the JSON answer, hovers a cell
// and checks the weight shown; then asks for beam search of width 3 and
// checks the n-best list (texts and scores, best first) and the heat map
// against the JSON answer; and saves a screenshot ($ATTNX_VIEWER_PNG, else
// a temporary file).
func TestViewerInBrowser(t *testing.T) {
	chromium := testenv.Command(t, "chromium", "chromium")
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demoModel(t)}}})
	const sentence = "Wednesday, March 3, 2021"
	code, body := post(t, hs.URL+PathTranslate, fmt.Sprintf(`{"inputs": [%q], "attention": true}`, sentence))
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	want := decodeResponse(t, body).Results[0]
	rows, cols := len(want.Attention), len(want.SourceIDs)

	tctx := viewSentence(t, chromium, hs.URL, sentence)
	type page struct {
		Output string
		Cells  int
		Rows   []string
		Cols   []string
		Error  string
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[page](`({
		output: document.getElementById("output").textContent,
		cells: document.querySelectorAll("#heatmap .cell").length,
		rows: [...document.querySelectorAll("#heatmap .label.row")].map((e) => e.textContent),
		cols: [...document.querySelectorAll("#heatmap .label.col")].map((e) => e.textContent),
		error: document.getElementById("error").textContent,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Error != "" || got.Output != want.Text {
		t.Errorf("page shows output %q, error %q; the answer is %q", got.Output, got.Error, want.Text)
	}
	if got.Cells != rows*cols {
		t.Errorf("heat map has %d cells; the answer has %d output tokens x %d source tokens = %d", got.Cells, rows, cols, rows*cols)
	}
	// Labels: source characters across (spaces shown as ·), output down.
	var wantCols []string
	for _, r := range sentence {
		wantCols = append(wantCols, strings.ReplaceAll(string(r), " ", "·"))
	}
	if strings.Join(got.Cols, "|") != strings.Join(wantCols, "|") || len(got.Rows) != rows || got.Rows[rows-1] != "<eos>" {
		t.Errorf("labels: source %q, output %q", got.Cols, got.Rows)
	}

	// Hover the cell of output 2 and its most attended source token.
	i, j := 1, 0
	for k, w := range want.Attention[i] {
		if w > want.Attention[i][j] {
			j = k
		}
	}
	type box struct{ X, Y float64 }
	at, err := chromedp.Run(tctx, chromedp.Evaluate[box](fmt.Sprintf(`(() => {
		const r = document.querySelector('#heatmap .cell[data-i="%d"][data-j="%d"]').getBoundingClientRect();
		return {x: r.left + r.width / 2, y: r.top + r.height / 2};
	})()`, i, j)))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tctx, chromedp.MouseEvent("mouseMoved", at.X, at.Y)); err != nil {
		t.Fatal(err)
	}
	readout, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#readout")))
	if err != nil {
		t.Fatal(err)
	}
	wantPrefix := fmt.Sprintf(`output %d "%s" ← source %d "%s": weight `, i+1, got.Rows[i], j+1, wantCols[j])
	shown, ok := strings.CutPrefix(readout, wantPrefix)
	var w float64
	if _, err := fmt.Sscanf(shown, "%g", &w); !ok || err != nil || math.Abs(w-float64(want.Attention[i][j])) > 5e-5 || len(shown) != 6 {
		t.Errorf("hovering cell (%d, %d) shows %q; want %q and the weight %.4f", i, j, readout, wantPrefix, want.Attention[i][j])
	}

	// Beam search: the n-best list, best first, as the JSON answer has it,
	// and the heat map of the best hypothesis.
	const beam = 3
	code, body = post(t, hs.URL+PathTranslate, fmt.Sprintf(`{"inputs": [%q], "beam": %d, "n_best": %d, "attention": true}`, sentence, beam, beam))
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	wantBeam := decodeResponse(t, body).Results[0]
	if len(wantBeam.Hypotheses) != beam {
		t.Fatalf("the answer lists %d hypotheses, want %d", len(wantBeam.Hypotheses), beam)
	}
	err = chromedp.Do(tctx,
		chromedp.SendKeys(chromedp.CSS("#beam"), fmt.Sprint(beam)),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("#nbest li")),
	)
	if err != nil {
		t.Fatalf("asking for beam search and waiting for the n-best list: %v", err)
	}
	// The greedy answer before left a one-item list on the page (a
	// greedy result has its one hypothesis), which WaitVisible found at
	// once: wait for the beam's answer itself, its beam items or an error.
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](fmt.Sprintf(
		`document.querySelectorAll("#hyps li").length === %d || document.getElementById("error").textContent !== ""`, beam))); err != nil {
		t.Fatalf("waiting for the n-best list of %d: %v", beam, err)
	}
	type nbest struct {
		Output string
		Items  []string
		Cells  int
		Error  string
	}
	gotBeam, err := chromedp.Run(tctx, chromedp.Evaluate[nbest](`({
		output: document.getElementById("output").textContent,
		items: [...document.querySelectorAll("#hyps li")].map((e) => e.textContent),
		cells: document.querySelectorAll("#heatmap .cell").length,
		error: document.getElementById("error").textContent,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	var wantItems []string
	for _, h := range wantBeam.Hypotheses {
		wantItems = append(wantItems, fmt.Sprintf("%s  %.4f, %.4f", h.Text, h.NormalizedScore, h.Score))
	}
	if gotBeam.Error != "" || gotBeam.Output != wantBeam.Text || strings.Join(gotBeam.Items, "|") != strings.Join(wantItems, "|") {
		t.Errorf("page shows output %q, n-best %q, error %q; the answer: %q, %q", gotBeam.Output, gotBeam.Items, gotBeam.Error, wantBeam.Text, wantItems)
	}
	if n := len(wantBeam.Attention) * len(wantBeam.SourceIDs); gotBeam.Cells != n {
		t.Errorf("beam search heat map has %d cells, want %d (the best hypothesis')", gotBeam.Cells, n)
	}

	path := screenshot(t, tctx, "ATTNX_VIEWER_PNG", "viewer.png")
	t.Logf("screenshot saved as %s; answer %q, %d cells, hover %q", path, want.Text, got.Cells, readout)
}

// browser starts headless Chromium for t and returns a context for its
// actions, bounded to a minute.
func browser(t *testing.T, chromium string) context.Context {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 640),
	)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// Start the browser without a deadline (it lives as long as ctx), then
	// bound the test's actions.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	tctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancelT)
	return tctx
}

// TestViewerSubwordLabels: with a SentencePiece model the source labels
// are the answer's pieces, standing upright so that each keeps to its
// column (they overlapped, written across cells one character wide); the
// input's placeholder names no example of another model. The screenshot
// goes to $ATTNX_VIEWER_SPM_PNG, else a temporary file.
func TestViewerSubwordLabels(t *testing.T) {
	chromium := testenv.Command(t, "chromium", "chromium")
	demoModel(t)
	dir := filepath.Join(t.TempDir(), "spm")
	if _, err := modeldir.Export("../testdata/demo/onmt_dates_spm.pt", dir, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates-spm", Dir: dir}}})
	const sentence = "Wednesday, the 14th of August 2030"
	code, body := post(t, hs.URL+PathTranslate, fmt.Sprintf(`{"inputs": [%q], "attention": true}`, sentence))
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	want := decodeResponse(t, body).Results[0]
	tctx := viewSentence(t, chromium, hs.URL, sentence)
	type label struct {
		Text               string
		Left, Right, Width float64
		Clipped, Upright   bool
	}
	type page struct {
		Labels      []label
		Cell        float64
		Error       string
		Placeholder string
		Beam        string
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[page](`({
		labels: [...document.querySelectorAll("#heatmap .label.col")].map((e) => {
			const r = e.getBoundingClientRect();
			return {text: e.textContent, left: r.left, right: r.right, width: r.width,
				clipped: e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1,
				upright: getComputedStyle(e).writingMode === "vertical-rl"};
		}),
		cell: document.querySelector("#heatmap .cell").getBoundingClientRect().width,
		error: document.getElementById("error").textContent,
		placeholder: document.getElementById("source").placeholder,
		beam: document.getElementById("beam").placeholder,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Placeholder != "a sentence to translate" {
		t.Errorf("placeholder %q", got.Placeholder)
	}
	// The model decodes with OpenNMT-py's beam 5 by default: the empty
	// beam box says 5, where it said 1.
	if got.Beam != "5" {
		t.Errorf("the beam box's placeholder %q, want the model's default 5", got.Beam)
	}
	if got.Error != "" || len(got.Labels) != len(want.SourceTokens) || len(want.SourceTokens) < 5 {
		t.Fatalf("error %q, %d labels for %d pieces %q", got.Error, len(got.Labels), len(want.SourceTokens), want.SourceTokens)
	}
	for k, l := range got.Labels {
		if wantText := strings.ReplaceAll(want.SourceTokens[k], " ", "·"); l.Text != wantText {
			t.Errorf("label %d %q, the piece %q", k, l.Text, wantText)
		}
		if !l.Upright || l.Clipped || l.Width > got.Cell+0.5 {
			t.Errorf("label %d %q: upright %v, clipped %v, %.1f px wide in a column of %.1f", k, l.Text, l.Upright, l.Clipped, l.Width, got.Cell)
		}
		if k > 0 && l.Left < got.Labels[k-1].Right-0.5 {
			t.Errorf("label %d %q overlaps label %d %q (%.1f < %.1f)", k, l.Text, k-1, got.Labels[k-1].Text, l.Left, got.Labels[k-1].Right)
		}
	}
	path := screenshot(t, tctx, "ATTNX_VIEWER_SPM_PNG", "viewer-spm.png")
	t.Logf("screenshot saved as %s; pieces %q", path, want.SourceTokens)
}

// viewSentence opens the viewer of the server at url in a new browser,
// translates sentence there and waits for its heat map.
func viewSentence(t *testing.T, chromium, url, sentence string) context.Context {
	t.Helper()
	tctx := browser(t, chromium)
	err := chromedp.Do(tctx,
		chromedp.Navigate(url+PathViewer),
		chromedp.WaitReady(chromedp.CSS("#model option")),
		chromedp.SendKeys(chromedp.CSS("#source"), sentence),
		chromedp.Click(chromedp.CSS("#go")),
		chromedp.WaitVisible(chromedp.CSS("#heatmap .cell")),
	)
	if err != nil {
		t.Fatalf("typing a sentence and waiting for the heat map: %v", err)
	}
	return tctx
}

// screenshot saves the page as a PNG to $env, else to name in a temporary
// directory, checks that it is one of a plausible size and returns its
// path.
func screenshot(t *testing.T, tctx context.Context, env, name string) string {
	t.Helper()
	shot, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
		t.Errorf("screenshot is %dx%d", b.Dx(), b.Dy())
	}
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(t.TempDir(), name)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
