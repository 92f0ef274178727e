package shard_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/attnx/attnx/shard"
	"github.com/attnx/attnx/translate"
)

// A Go service translating its shard of a corpus, as attnx translate
// --shard auto/4 does in a Kubernetes Indexed Job's pod, and then, once
// every shard is done, merging them as attnx merge does.
func ExampleOpenJob() {
	spec, err := shard.Parse("auto/4", os.Getenv) // JOB_COMPLETION_INDEX=i: shard i+1 of 4
	if err != nil {
		log.Fatal(err)
	}
	opt := translate.Options{}
	tr, err := translate.Open("/models/dates", opt)
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	files, err := shard.ModelFiles("/models/dates")
	if err != nil {
		log.Fatal(err)
	}
	co := translate.CorpusOptions{WithoutAttention: true}
	settings := shard.Settings{Model: files, Options: opt, Corpus: co, Output: map[string]string{"format": "text"}}
	fields, err := settings.Fields()
	if err != nil {
		log.Fatal(err)
	}
	job, err := shard.OpenJob(shard.JobConfig{Source: "/data/corpus.txt", Output: "/data/out/corpus.txt",
		Spec: spec, Fields: fields, LinesPerSentence: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer job.Close()
	if !job.Done { // a shard finished with these settings is not translated again
		_, err := job.Translate(context.Background(), tr, shard.TranslateOptions{Corpus: co,
			Write: func(w io.Writer, i int, res translate.Result) error {
				_, err := fmt.Fprintln(w, res.Text)
				return err
			}})
		if err != nil {
			log.Fatal(err)
		}
	}

	// Elsewhere, once all 4 are done:
	m, err := shard.Merge("/data/out/corpus.txt", shard.MergeOptions{})
	if err != nil {
		log.Fatal(err) // names the missing shards, or the one translated otherwise
	}
	fmt.Println(m.Shards, m.Sentences)
}
