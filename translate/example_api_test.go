package translate_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// datesModel exports testdata/demo's trained Bahdanau model (dates in any
// format to ISO 8601, character-level) into a temporary directory, which
// the caller removes.
func datesModel() (string, error) {
	dir, err := os.MkdirTemp("", "attnx-example-")
	if err != nil {
		return "", err
	}
	demo := filepath.Join("..", "testdata", "demo")
	_, err = modeldir.Export(filepath.Join(demo, "bahdanau.pt"), filepath.Join(dir, "dates"), modeldir.Options{
		SrcVocab: filepath.Join(demo, "src_vocab.json"), TgtVocab: filepath.Join(demo, "tgt_vocab.json"),
	})
	return dir, err
}

// Open with zero Options and Translate: one Result per text, in order,
// each with its score (the output's natural-log probability); a blank
// text gets the zero Result.
func ExampleTranslator_Translate_scores() {
	root, err := datesModel()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := translate.Open(filepath.Join(root, "dates"), translate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Translate(context.Background(), []string{"3rd of March 2021", "", "Mar 3, 21"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Printf("%q %.3f %d hypotheses\n", r.Text, r.Score, len(r.Hypotheses))
	}
	// Output:
	// "2021-03-03" -0.014 1 hypotheses
	// "" 0.000 0 hypotheses
	// "2021-03-03" -0.011 1 hypotheses
}

// TranslateCorpus translates a test set as the toolkits' translate
// commands do, sorted by length and batched, and emits each result in
// the lines' order as soon as it and those before it are done.
func ExampleTranslator_TranslateCorpus() {
	root, err := datesModel()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := translate.Open(filepath.Join(root, "dates"), translate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	lines := []string{"03/03/2021", "Wednesday, March 3, 2021", "", "1 Jan 1999"}
	st, err := tr.TranslateCorpus(context.Background(), lines, 1, translate.CorpusOptions{BatchSize: 2},
		func(i int, r translate.Result) error {
			fmt.Printf("%d: %q\n", i+1, r.Text)
			return nil
		}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(st.Sentences, "lines,", st.Empty, "blank,", st.Batches, "batches")
	// Output:
	// 1: "2021-03-03"
	// 2: "2021-03-03"
	// 3: ""
	// 4: "1999-01-01"
	// 4 lines, 1 blank, 2 batches
}

// Stream translates a reader line by line, emitting each result in order
// as its batch finishes, with bounded memory; Input says where each came
// from.
func ExampleTranslator_Stream() {
	root, err := datesModel()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := translate.Open(filepath.Join(root, "dates"), translate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	in := strings.NewReader("3 mar 2021\n\n12.11.1987\n")
	err = tr.Stream(context.Background(), in, func(in translate.Input, r translate.Result) error {
		fmt.Printf("%s: %q -> %q\n", in.Where, in.Text, r.Text)
		return nil
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// line 1: "3 mar 2021" -> "2021-03-03"
	// line 2: "" -> ""
	// line 3: "12.11.1987" -> "1987-11-12"
}

// A Scheduler decodes the calls of many goroutines in one shared batch
// (continuous batching, as a server runs it); the zero SchedulerConfig
// takes its defaults. Each call's results are its own, as if it ran alone.
func ExampleScheduler() {
	root, err := datesModel()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}
	tr, err := translate.Open(filepath.Join(root, "dates"), translate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	sched, err := tr.NewScheduler(translate.SchedulerConfig{})
	if err != nil {
		log.Fatal(err)
	}
	defer sched.Close()
	requests := [][]string{{"3rd of March 2021"}, {"July 4, 1976", "4/7/1976"}, {"31.12.1999"}}
	answers := make([][]string, len(requests))
	var wg sync.WaitGroup
	for i, texts := range requests {
		wg.Go(func() {
			res, err := sched.Translate(context.Background(), texts, translate.CallOptions{})
			if err != nil {
				log.Fatal(err)
			}
			for _, r := range res {
				answers[i] = append(answers[i], r.Text)
			}
		})
	}
	wg.Wait()
	for i, a := range answers {
		fmt.Println(requests[i], "->", a)
	}
	// Output:
	// [3rd of March 2021] -> [2021-03-03]
	// [July 4, 1976 4/7/1976] -> [1976-07-04 1976-04-07]
	// [31.12.1999] -> [1999-12-31]
}

// Errors are branched on with errors.Is and errors.As: a missing model
// is fs.ErrNotExist; a refused option or input is a *RequestError
// naming the field or the row (a server's 400); a call on a closed
// Translator is ErrClosed.
func ExampleRequestError() {
	root, err := datesModel()
	defer os.RemoveAll(root)
	if err != nil {
		log.Fatal(err)
	}
	dir := filepath.Join(root, "dates")

	_, err = translate.Open(filepath.Join(root, "nothing"), translate.Options{})
	fmt.Println("missing model:", errors.Is(err, fs.ErrNotExist))

	var bad *translate.RequestError
	_, err = translate.Open(dir, translate.Options{Beam: 2, NBest: 3})
	if errors.As(err, &bad) {
		fmt.Println("option", bad.Field+":", err)
	}

	tr, err := translate.Open(dir, translate.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_, err = tr.Translate(context.Background(), []string{"3 mar 2021", "3 mar 2021 \xff"})
	if errors.As(err, &bad) && bad.Field == "" {
		fmt.Println("input row", bad.Row, "at fault:", err)
	}
	var ie *translate.InputError
	fmt.Println("also an *InputError:", errors.As(err, &ie))

	tr.Close()
	_, err = tr.Translate(context.Background(), []string{"3 mar 2021"})
	fmt.Println("closed:", errors.Is(err, translate.ErrClosed))
	// Output:
	// missing model: true
	// option NBest: translate: NBest = 3: want 1 <= NBest <= Beam = 2 (0: 1)
	// input row 1 at fault: translate: input row 1: invalid UTF-8 at byte 11: text must be UTF-8
	// also an *InputError: true
	// closed: true
}
