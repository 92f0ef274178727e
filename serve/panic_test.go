package serve

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/attnx/attnx/translate"
)

// TestLoadPanicIsAnError: a panic while a model loads (in the goroutine
// that attnx serve loads models in, beyond main's recover) is an error
// naming the model and its directory, not a dead process.
func TestLoadPanicIsAnError(t *testing.T) {
	s, err := New(Config{Models: []ModelDir{{Name: "m", Dir: "/models/m"}}, Open: func(string, *Config, BatchObserver) (Backend, error) {
		var b []byte
		_ = b[9]
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Load()
	if err == nil || !strings.Contains(err.Error(), `internal error while loading model "m" from /models/m: runtime error: index out of range [9]`) {
		t.Fatalf("Load: %v", err)
	}
	if s.Ready() {
		t.Error("ready after a failed load")
	}
}

// panickyBackend panics on its first Translate call and answers after.
type panickyBackend struct {
	*blockingBackend
	calls int
}

func (b *panickyBackend) Translate(ctx context.Context, job Job) ([]translate.Result, error) {
	b.calls++
	if b.calls == 1 {
		panic(errors.New("a bug"))
	}
	return []translate.Result{{Tokens: []int64{2}, Source: job.IDs[0]}}, nil
}

// TestHandlerPanicAnswers500: a request that meets a bug is answered 500
// naming the request; the server answers the next one.
func TestHandlerPanicAnswers500(t *testing.T) {
	b := &panickyBackend{blockingBackend: newBlockingBackend()}
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "m"}}, Open: func(string, *Config, BatchObserver) (Backend, error) { return b, nil }})
	code, body := post(t, hs.URL+PathTranslate, `{"ids": [[3, 4]]}`)
	if code != 500 || !strings.Contains(body, `internal error while decoding a request of 1 inputs for model \"m\": a bug`) {
		t.Fatalf("first request: %d %s", code, body)
	}
	if code, body := post(t, hs.URL+PathTranslate, `{"ids": [[3, 4]]}`); code != 200 {
		t.Fatalf("the request after: %d %s", code, body)
	}
}
