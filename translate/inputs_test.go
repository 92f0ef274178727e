package translate

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
)

func TestParseIDs(t *testing.T) {
	cases := []struct {
		in   string
		want []int64
		err  string
	}{
		{"5 9 2", []int64{5, 9, 2}, ""},
		{" 5,9\t2 ", []int64{5, 9, 2}, ""},
		{"7", []int64{7}, ""},
		{"", nil, "empty list of token ids"},
		{" , ", nil, "empty list of token ids"},
		{"4 x", nil, `"x" is not a token id`},
	}
	for _, c := range cases {
		got, err := ParseIDs(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseIDs(%q) = %v, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseIDs(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if back, _ := ParseIDs(FormatIDs(got)); !reflect.DeepEqual(back, got) {
			t.Errorf("FormatIDs(%v) does not read back: %q", got, FormatIDs(got))
		}
	}
}

// TestTranslateInputsKeepsWhatCameBefore: texts and ids mixed come out in
// input order; a bad input stops the call with a BadInputError naming it,
// after the valid inputs before it have been emitted.
func TestTranslateInputsKeepsWhatCameBefore(t *testing.T) {
	needORT(t)
	dir, _ := fixtureModel(t, fixtures.List(t)[0])
	tr, err := Open(dir, Options{Threads: 1, MaxLen: 4, BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	inputs := []Input{
		{Text: "abc", Where: "argument 1", Shown: "abc"},
		{IDs: []int64{5, 6}, IsIDs: true, Where: "--ids #1", Shown: "5 6"},
		{Text: "ba", Where: "argument 2", Shown: "ba"},
		{Text: "cab", Where: "argument 3", Shown: "cab"},
		{Text: "a~b", Where: "argument 4", Shown: "a~b"},
		{Text: "c", Where: "argument 5", Shown: "c"},
	}
	var shown []string
	emit := func(in Input, res Result) error {
		if len(res.Tokens) == 0 {
			t.Errorf("%s: no tokens", in.Where)
		}
		shown = append(shown, in.Shown)
		return nil
	}
	err = tr.TranslateInputs(context.Background(), inputs, emit)
	var bad *BadInputError
	if !errors.As(err, &bad) || bad.Input.Where != "argument 4" || bad.Position != 1 ||
		!strings.Contains(err.Error(), `argument 4 ("a~b"): character '~'`) {
		t.Fatalf("error %v", err)
	}
	if want := []string{"abc", "5 6", "ba", "cab"}; !reflect.DeepEqual(shown, want) {
		t.Errorf("emitted %v before the error, want %v", shown, want)
	}
}

// TestStreamReadsLines: lines of ids for a model without a source
// vocabulary, results in order, progress after each batch, and a bad line
// named by its number.
func TestStreamReadsLines(t *testing.T) {
	tr := idsTranslator(t, 2)
	var got []string
	var batches []int
	emit := func(in Input, res Result) error { got = append(got, in.Shown); return nil }
	progress := func(_ int64, lines int) { batches = append(batches, lines) }
	if err := tr.Stream(context.Background(), strings.NewReader("5 6\r\n7\n4,4,5\n"), emit, progress); err != nil {
		t.Fatal(err)
	}
	// Batches hold what has arrived, BatchSize lines at most: how the 3
	// lines split depends on how fast the reader delivers them.
	okBatches := len(batches) > 0 && batches[len(batches)-1] == 3
	for i, n := range batches {
		prev := 0
		if i > 0 {
			prev = batches[i-1]
		}
		okBatches = okBatches && n > prev && n-prev <= 2
	}
	if !reflect.DeepEqual(got, []string{"5 6", "7", "4,4,5"}) || !okBatches {
		t.Errorf("emitted %q, progress at lines %v", got, batches)
	}
	err := tr.Stream(context.Background(), strings.NewReader("5\n5 x\n"), emit, nil)
	if err == nil || !strings.Contains(err.Error(), `line 2: "x" is not a token id`) {
		t.Errorf("bad ids line: %v", err)
	}
	err = tr.Stream(context.Background(), strings.NewReader("5\n5 999\n"), emit, nil)
	var bad *BadInputError
	if !errors.As(err, &bad) || bad.Input.Where != "line 2" || !strings.Contains(err.Error(), "token id 999 at position 1") {
		t.Errorf("id outside the vocabulary: %v", err)
	}
}

// TestStreamAnswersEachLineOfAPipe writes one line at a time into a pipe
// and waits for its answer before writing the next, as a program talking
// to attnx translate does: each answer comes without more lines or EOF
// (Stream used to wait for BatchSize lines).
func TestStreamAnswersEachLineOfAPipe(t *testing.T) {
	tr := idsTranslator(t, 32)
	pr, pw := io.Pipe()
	answers := make(chan string, 8)
	done := make(chan error, 1)
	go func() {
		done <- tr.Stream(context.Background(), pr, func(in Input, _ Result) error { answers <- in.Shown; return nil }, nil)
	}()
	for _, line := range []string{"5 6", "7", "4 4 5"} {
		if _, err := io.WriteString(pw, line+"\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-answers:
			if got != line {
				t.Fatalf("answer for %q, want %q", got, line)
			}
		case err := <-done:
			t.Fatalf("Stream returned %v before EOF", err)
		case <-time.After(60 * time.Second):
			t.Fatalf("no answer for %q after 60 s: Stream waits for more lines", line)
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// idsTranslator opens the first fixture's model (no vocabularies: inputs
// are token ids) with batches of batch rows and outputs of up to 4 tokens;
// it is closed when the test ends.
func idsTranslator(t *testing.T, batch int) *Translator {
	t.Helper()
	needORT(t)
	f := fixtures.List(t)[0]
	dir := t.TempDir()
	writeModelDir(t, dir, fixtures.Weights(t, f.Path(t, "checkpoint.pt")), modelSpec{special: attention.Special{SOS: f.SOS, EOS: f.EOS, PAD: f.PAD, UNK: -1}})
	tr, err := Open(dir, Options{Threads: 1, MaxLen: 4, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}
