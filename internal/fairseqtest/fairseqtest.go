// Package fairseqtest compares an output of attnx generate with
// fairseq-generate's, for the tests of fairseqgen and cmd/attnx.
package fairseqtest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Tolerances of the numbers (float32's reach: the search's sums run in
// another order than PyTorch's, which moves the last bits): a
// hypothesis' score in base 2 within scoreRel of fairseq's, relative; a
// token's (printed to four decimals) within posAbs, one unit of the last
// decimal and a half of rounding; a soft alignment's weight within
// softAbs. A hard alignment (A- pairs) must be identical.
const (
	scoreRel = 2e-6
	posAbs   = 1.5e-4
	// softAbs: a soft alignment's weight (six decimals) within one unit
	// of the last decimal and a half of rounding.
	softAbs = 1.5e-6
	// nearTie is the relative score gap (fairseq_run.py's FAIRSEQ_GAPS)
	// below which a sentence may rightly come out otherwise.
	nearTie = 1e-5
)

// Comparison is how an output compares with fairseq-generate's.
type Comparison struct {
	Lines, Identical int
	// Ties are the sentence ids whose hypotheses differ at a near tie.
	Ties []int
}

// Compare compares got with expected.out (and expected.gaps.json),
// reporting each difference beyond the tolerances.
func Compare(t testing.TB, expected, got string) Comparison {
	t.Helper()
	data, err := os.ReadFile(expected + ".out")
	if err != nil {
		t.Fatal(err)
	}
	gaps := map[string]float64{}
	if g, err := os.ReadFile(expected + ".gaps.json"); err == nil {
		if err := json.Unmarshal(g, &gaps); err != nil {
			t.Fatalf("%s.gaps.json: %v", expected, err)
		}
	}
	want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	have := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	c := Comparison{Lines: len(want)}
	if len(have) != len(want) {
		t.Errorf("%d lines; fairseq-generate printed %d", len(have), len(want))
	}
	tied := map[string]bool{}
	for i := 0; i < min(len(want), len(have)); i++ {
		w, h := want[i], have[i]
		if w == h {
			c.Identical++
			continue
		}
		wf, hf := strings.Split(w, "\t"), strings.Split(h, "\t")
		if len(wf) != len(hf) || wf[0] != hf[0] {
			t.Errorf("line %d:\n  fairseq: %.120q\n  attnx:   %.120q", i+1, w, h)
			continue
		}
		id := wf[0][strings.IndexByte(wf[0], '-')+1:]
		if tied[id] {
			continue
		}
		if msg := lineDiff(wf, hf); msg != "" {
			if g, ok := gaps[id]; ok && g < nearTie && wf[0][0] != 'S' && wf[0][0] != 'T' {
				tied[id] = true
				n, _ := strconv.Atoi(id)
				c.Ties = append(c.Ties, n)
				continue
			}
			t.Errorf("line %d (%s, smallest gap %.2g): %s\n  fairseq: %.160q\n  attnx:   %.160q", i+1, wf[0], gaps[id], msg, w, h)
		}
	}
	return c
}

// lineDiff says how two lines of one kind differ beyond the tolerances
// ("" if they do not).
func lineDiff(w, h []string) string {
	switch w[0][0] {
	case 'H', 'D':
		if len(w) != 3 {
			return "not three fields"
		}
		if w[2] != h[2] {
			return "text differs"
		}
		a, err1 := strconv.ParseFloat(w[1], 64)
		b, err2 := strconv.ParseFloat(h[1], 64)
		if err1 != nil || err2 != nil || math.Abs(a-b) > scoreRel*math.Max(1, math.Abs(a)) {
			return fmt.Sprintf("score %s, fairseq %s", h[1], w[1])
		}
		return ""
	case 'P':
		wp, hp := strings.Fields(w[1]), strings.Fields(h[1])
		if len(wp) != len(hp) {
			return fmt.Sprintf("%d token scores, fairseq %d", len(hp), len(wp))
		}
		for k := range wp {
			a, err1 := strconv.ParseFloat(wp[k], 64)
			b, err2 := strconv.ParseFloat(hp[k], 64)
			if err1 != nil || err2 != nil || math.Abs(a-b) > posAbs {
				return fmt.Sprintf("token %d's score %s, fairseq %s", k, hp[k], wp[k])
			}
		}
		return ""
	case 'A':
		if !strings.Contains(w[1], ".") {
			return "hard alignment differs"
		}
		wr, hr := strings.Fields(w[1]), strings.Fields(h[1])
		if len(wr) != len(hr) {
			return fmt.Sprintf("%d soft alignment rows, fairseq %d", len(hr), len(wr))
		}
		for i := range wr {
			wp, hp := strings.Split(wr[i], ","), strings.Split(hr[i], ",")
			if len(wp) != len(hp) {
				return fmt.Sprintf("row %d: %d weights, fairseq %d", i, len(hp), len(wp))
			}
			for k := range wp {
				a, err1 := strconv.ParseFloat(wp[k], 64)
				b, err2 := strconv.ParseFloat(hp[k], 64)
				if err1 != nil || err2 != nil || math.Abs(a-b) > softAbs {
					return fmt.Sprintf("row %d weight %d: %s, fairseq %s", i, k, hp[k], wp[k])
				}
			}
		}
		return ""
	}
	return "differs"
}
