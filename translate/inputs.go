package translate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxLineBytes is the longest input line Stream reads.
const MaxLineBytes = 1 << 20

// Input is one input of TranslateInputs or Stream: a text to tokenise with
// the source vocabulary, or source token ids.
type Input struct {
	// Text is the text of a text input.
	Text string
	// IDs are the token ids of an ids input (IsIDs), possibly none.
	IDs   []int64
	IsIDs bool
	// Blank marks a blank line of a stream: it is answered with an empty
	// Result, as TranslateCorpus answers one, not refused.
	Blank bool
	// Where says where the input came from ("line 7", "argument 2") and
	// Shown is the input as written; errors name the input with both.
	Where, Shown string
}

// BadInputError is an *InputError about one Input of TranslateInputs or
// Stream, naming it.
type BadInputError struct {
	Input Input
	*InputError
}

// Error returns "translate: WHERE ("SHOWN"): MSG", the remedy in the terms
// of this package's Options.
func (e *BadInputError) Error() string {
	return fmt.Sprintf("translate: %s (%q): %s", e.Input.Where, e.Input.Shown, e.optionsText())
}

// Unwrap returns the InputError.
func (e *BadInputError) Unwrap() error { return e.InputError }

// ParseIDs reads token ids separated by spaces, commas or tabs ("5 9 2").
func ParseIDs(s string) ([]int64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	if len(fields) == 0 {
		return nil, errors.New("empty list of token ids")
	}
	ids := make([]int64, len(fields))
	for i, x := range fields {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a token id (want integers separated by spaces)", x)
		}
		ids[i] = v
	}
	return ids, nil
}

// FormatIDs writes token ids as ParseIDs reads them.
func FormatIDs(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, " ")
}

// TranslateInputs translates inputs, texts and ids in any mix, Options.
// BatchSize at a time, and calls emit with each result in input order as
// each batch finishes. A refused input stops it with a *BadInputError, but
// nothing valid is lost: the inputs before it are translated and emitted
// first.
func (t *Translator) TranslateInputs(ctx context.Context, inputs []Input, emit func(Input, Result) error) error {
	bs := t.batchSize()
	for start := 0; start < len(inputs); start += bs {
		if err := t.translateBatch(ctx, inputs[start:min(start+bs, len(inputs))], emit); err != nil {
			return err
		}
	}
	return nil
}

// translateBatch translates one batch of inputs (split into an ids call and
// a text call) and emits the results in order.
func (t *Translator) translateBatch(ctx context.Context, inputs []Input, emit func(Input, Result) error) error {
	results := make([]Result, len(inputs))
	var textIdx, idIdx []int
	var texts []string
	var rows [][]int64
	for i, in := range inputs {
		if in.Blank {
			continue // an empty result
		}
		if in.IsIDs {
			idIdx, rows = append(idIdx, i), append(rows, in.IDs)
		} else {
			textIdx, texts = append(textIdx, i), append(texts, in.Text)
		}
	}
	bad := -1
	var badErr *InputError
	run := func(idx []int, call func() ([]Result, error)) error {
		if len(idx) == 0 {
			return nil
		}
		res, err := call()
		var ie *InputError
		if errors.As(err, &ie) && ie.Row < len(idx) {
			bad, badErr = idx[ie.Row], ie
			return err
		}
		if err != nil {
			return err
		}
		for k, i := range idx {
			results[i] = res[k]
		}
		return nil
	}
	err := run(idIdx, func() ([]Result, error) { return t.TranslateIDs(ctx, rows) })
	if err == nil {
		// Per-sentence limits: a stream's batches are the lines that
		// happen to have arrived. A blank text that is not Input.Blank (a
		// command line's empty argument) is refused.
		err = run(textIdx, func() ([]Result, error) {
			src, err := t.encodeTexts(ctx, texts)
			if err != nil {
				return nil, err
			}
			return t.translateIDs(ctx, src, nil, false)
		})
	}
	if bad >= 0 {
		// The inputs before the bad one first (an earlier bad input of the
		// other kind surfaces in that call instead).
		if perr := t.translateBatch(ctx, inputs[:bad], emit); perr != nil {
			return perr
		}
		return &BadInputError{Input: inputs[bad], InputError: badErr}
	}
	if err != nil {
		return err
	}
	for i, res := range results {
		if err := emit(inputs[i], res); err != nil {
			return err
		}
	}
	return nil
}

// countingReader counts the bytes read.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Stream translates r line by line, one input per line (token ids when the
// model has no source vocabulary, text otherwise; a trailing CR is
// dropped), calling emit with each result in order as each batch
// finishes: memory stays bounded whatever the input's length. A batch is
// the lines that have arrived, Options.BatchSize at most: Stream does not
// wait for more while the reader has none ready, so a program that writes
// one line to a pipe and waits for its answer gets it. progress, when not
// nil, hears the bytes and lines read after each batch (the moment to
// flush buffered output). A blank line gives an empty result (Input.Blank),
// as in a test set. Errors are as for TranslateInputs, and name the line.
func (t *Translator) Stream(ctx context.Context, r io.Reader, emit func(Input, Result) error, progress func(bytes int64, lines int)) error {
	counter := &countingReader{r: r}
	idsInput := !t.HasSourceVocab()
	bs := t.batchSize()
	// The lines are read on a goroutine of their own, so that the batch
	// can be cut where the reader blocks.
	type scanned struct {
		text  string
		bytes int64
		err   error // set on the last one: the scanner's error, or io.EOF
	}
	lines := make(chan scanned, bs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		sc := bufio.NewScanner(counter)
		sc.Buffer(make([]byte, 64*1024), MaxLineBytes)
		send := func(x scanned) bool {
			select {
			case lines <- x:
				return true
			case <-done:
				return false
			}
		}
		for sc.Scan() {
			if !send(scanned{text: sc.Text(), bytes: counter.n}) {
				return
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		send(scanned{err: err, bytes: counter.n})
	}()
	var pending []Input
	line := 0
	var read int64
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		err := t.translateBatch(ctx, pending, emit)
		pending = pending[:0]
		if progress != nil {
			progress(read, line)
		}
		return err
	}
	for {
		var x scanned
		if len(pending) == 0 {
			x = <-lines
		} else {
			select {
			case x = <-lines:
			default:
				// Nothing more has arrived: answer what has.
				if err := flush(); err != nil {
					return err
				}
				continue
			}
		}
		read = x.bytes
		if x.err != nil {
			if x.err == io.EOF {
				return flush()
			}
			if errors.Is(x.err, bufio.ErrTooLong) {
				return fmt.Errorf("translate: line %d: longer than %d bytes", line+1, MaxLineBytes)
			}
			return fmt.Errorf("translate: reading input: %w", x.err)
		}
		line++
		s := strings.TrimSuffix(x.text, "\r")
		in := Input{Where: fmt.Sprintf("line %d", line), Shown: s, Text: s, Blank: strings.TrimSpace(s) == ""}
		if idsInput && !in.Blank {
			if strings.TrimSpace(s) != "" {
				ids, err := ParseIDs(s)
				if err != nil {
					return fmt.Errorf("translate: line %d: %v (the model has no source vocabulary, so input lines are token ids)", line, err)
				}
				in.IDs = ids
			}
			in.IsIDs = true
		}
		pending = append(pending, in)
		if len(pending) == bs {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}
