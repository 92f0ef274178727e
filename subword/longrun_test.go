//go:build linux

package subword

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/onmttok"
	"golang.org/x/sys/unix"
)

// longRunSpecs are the tokenizers the long-run test feeds: every kind a
// model directory names, with the fixtures' files.
var longRunSpecs = []struct {
	name string
	spec Spec
	dir  string
}{
	{"subword-nmt", Spec{Kind: KindSubwordNMT, File: "bpe.codes"}, "testdata"},
	{"subword-nmt+moses", Spec{Kind: KindSubwordNMT, File: "bpe.codes", Pretokenizer: PretokenizeMoses, MosesDashSplits: true}, "testdata"},
	{"sentencepiece-bpe", Spec{Kind: KindSentencePiece, File: "bpe.model"}, "testdata"},
	{"sentencepiece-unigram", Spec{Kind: KindSentencePiece, File: "unigram.model"}, "testdata"},
	{"sentencepiece-unigram+moses", Spec{Kind: KindSentencePiece, File: "unigram.model", Pretokenizer: PretokenizeMoses}, "testdata"},
	{"onmttok-bpe-conservative", Spec{Kind: KindOpenNMT, OpenNMT: &onmttok.Config{
		Options: onmttok.Options{Mode: "conservative", JoinerAnnotate: true}, SubwordType: onmttok.SubwordBPE, SubwordModel: "bpe.codes"}}, "../onmttok/testdata"},
	{"onmttok-bpe-aggressive", Spec{Kind: KindOpenNMT, OpenNMT: &onmttok.Config{
		Options: onmttok.Options{Mode: "aggressive", JoinerAnnotate: true, SupportPriorJoiners: true}, SubwordType: onmttok.SubwordBPE, SubwordModel: "bpe.codes"}}, "../onmttok/testdata"},
	{"onmttok-bpe-none", Spec{Kind: KindOpenNMT, OpenNMT: &onmttok.Config{
		Options: onmttok.Options{Mode: "none"}, SubwordType: onmttok.SubwordBPE, SubwordModel: "bpe.codes"}}, "../onmttok/testdata"},
	{"onmttok-sentencepiece", Spec{Kind: KindOpenNMT, OpenNMT: &onmttok.Config{
		Options: onmttok.Options{Mode: "none", SpacerAnnotate: true}, SubwordType: onmttok.SubwordSentencePiece, SubwordModel: "sp.model"}}, "../onmttok/testdata"},
}

// longRuns are the texts of issue 53: a run of one character (a letter, a
// digit, punctuation, onmttok's joiner), and a line of words of 999 dots.
var longRuns = []struct {
	name string
	text func(n int) string
}{
	{"letters", func(n int) string { return strings.Repeat("a", n) }},
	{"digits", func(n int) string { return strings.Repeat("7", n) }},
	{"dots", func(n int) string { return strings.Repeat(".", n) }},
	{"commas", func(n int) string { return strings.Repeat(",", n) }},
	{"apostrophes", func(n int) string { return strings.Repeat("'", n) }},
	{"dashes", func(n int) string { return strings.Repeat("-", n) }},
	{"joiners", func(n int) string { return strings.Repeat(onmttok.JoinerMarker, n) }},
	{"repeated-word", func(n int) string { return strings.Repeat("the", n/3) }},
	{"words-of-999-dots", func(n int) string {
		return strings.TrimSpace(strings.Repeat(strings.Repeat(".", 999)+" ", n/1000))
	}},
}

// Run sizes in characters, and the bound on how much longer the large
// run may take than the small one.
const (
	longRunSmall = 1 << 10
	longRunLarge = 64 << 10
	longRunRatio = 1024
)

// TestLongRunsScale tokenizes each long run at 1K and at 64K characters
// with every tokenizer kind, and requires the 64 times longer text to
// take less than 1024 times as long. Work linear in the text (or n log
// n, as BPE's heap) grows 64 to 100 times, up to twice that where the
// large run's data no longer fit the processor's caches; work quadratic
// in it, as issue 53 measured in the Moses tokenizer's dots and onmttok's
// BPE, 4096 times. The bound leaves a factor of 4 or more either way, and
// compares two times taken on the same machine in the same test, so a
// faster or slower machine moves both; each time is CPU time, the least
// of five runs (leastTime). A ratio rather than an operation count, since the work is in
// regular expressions and loops of several packages that no hook reaches.
// The outputs are checked to hold pieces (the aggressive onmttok's prior
// joiners are join marks: none).
func TestLongRunsScale(t *testing.T) {
	for _, tc := range longRunSpecs {
		tok, err := Open(tc.spec, tc.dir, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, run := range longRuns {
			t.Run(tc.name+"/"+run.name, func(t *testing.T) {
				small, large := run.text(longRunSmall), run.text(longRunLarge)
				want := 1
				if o := tc.spec.OpenNMT; run.name == "joiners" && o != nil && o.Options.SupportPriorJoiners {
					want = 0
				}
				if got := len(tok.Encode(small)); (got > 0) != (want > 0) {
					t.Fatalf("%d pieces, want %s", got, map[bool]string{true: "some", false: "none"}[want > 0])
				}
				ts, tl := leastTime(tok, small, large)
				if ratio := float64(tl) / float64(ts); ratio >= longRunRatio {
					t.Errorf("%d characters took %v, %d took %v: %.0f times as long for 64 times the text (bound %d: quadratic work)",
						longRunSmall, ts, longRunLarge, tl, ratio, longRunRatio)
				} else {
					t.Logf("%v, %v: %.1fx", ts, tl, ratio)
				}
			})
		}
	}
}

// leastTime returns the least of five encodings of a and of b, taken in
// turns, each after a collection, in CPU time of the thread that runs
// them: the time the machine's other work takes the processor away does
// not count (a long run is interrupted more often than a short one, which
// wall-clock times showed: up to 4 times more on a loaded machine).
func leastTime(tok Tokenizer, a, b string) (ta, tb time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tok.Encode(a) // warm up
	ta, tb = time.Duration(1<<62), time.Duration(1<<62)
	for i := 0; i < 5; i++ {
		ta = min(ta, threadTime(func() { tok.Encode(a) }))
		tb = min(tb, threadTime(func() { tok.Encode(b) }))
	}
	return max(ta, time.Microsecond), tb
}

// threadTime returns the CPU time the calling thread spends in f, after a
// collection.
func threadTime(f func()) time.Duration {
	runtime.GC()
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &before); err != nil {
		panic(err)
	}
	f()
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &after); err != nil {
		panic(err)
	}
	return time.Duration(after.Nano() - before.Nano())
}
