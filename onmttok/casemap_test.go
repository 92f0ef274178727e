package onmttok

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
)

// TestCaseMapping: the language-specific mappings ICU 72 makes (each want
// is what internal/icugen/icucase, ICU 72.1, writes), the strings of
// issue 58 among them.
func TestCaseMapping(t *testing.T) {
	for _, c := range []struct{ lang, op, in, want string }{
		// Lithuanian: a dot above only for Ì Í Ĩ, or I J Į before an accent above.
		{"lt", "lower", "Î", "î"},
		{"lt", "lower", "Ï", "ï"},
		{"lt", "lower", "Ī", "ī"},
		{"lt", "lower", "Ĵ", "ĵ"},
		{"lt", "lower", "Ȋ", "ȋ"},
		{"lt", "lower", "Ḯ", "ḯ"},
		{"lt", "lower", "Ì", "i\u0307\u0300"},
		{"lt", "lower", "Í", "i\u0307\u0301"},
		{"lt", "lower", "Ĩ", "i\u0307\u0303"},
		{"lt", "lower", "I\u0301", "i\u0307\u0301"},
		{"lt", "lower", "J\u0323\u0303", "j\u0307\u0323\u0303"},
		{"lt", "lower", "Į\u0301", "į\u0307\u0301"},
		{"lt", "lower", "I\u0323", "i\u0323"},
		{"lt", "lower", "İ", "i\u0307"},
		{"lt", "lower", "İSTANBUL", "i\u0307stanbul"},
		{"lt", "upper", "i\u0307s", "IS"},
		{"lt", "upper", "i\u0307stanbul", "ISTANBUL"},
		{"lt", "upper", "şi\u0307şli\u0307", "ŞIŞLI"},
		{"lt", "upper", "i\u0323\u0307", "I\u0323"},
		{"lt", "upper", "a\u0307", "A\u0307"},
		{"lt", "title", "i\u0307stanbul", "I\u0307stanbul"}, // the rest is lowercased
		{"lt", "lower", "ĴONAS", "ĵonas"},
		{"lt", "upper", "ĵonas", "ĴONAS"},
		// Turkish and Azeri: dotted and dotless i.
		{"tr", "lower", "İSTANBUL", "istanbul"},
		{"tr", "lower", "ŞİŞLİ", "şişli"},
		{"tr", "lower", "DIŞ", "dış"},
		{"tr", "lower", "I\u0307", "i"},
		{"tr", "lower", "I\u0323\u0307", "i\u0323"},
		{"tr", "upper", "istanbul", "İSTANBUL"},
		{"tr", "upper", "şişli", "ŞİŞLİ"},
		{"tr", "title", "istanbul", "İstanbul"},
		{"az", "upper", "ıi", "Iİ"},
		{"tur", "upper", "i", "İ"},
		{"TR", "lower", "I", "ı"},
		{"en", "lower", "İ", "i\u0307"},
		{"en", "upper", "i", "I"},
		// Dutch: IJ titlecases as one letter.
		{"nl", "title", "ij", "IJ"},
		{"nl", "title", "ijsselmeer", "IJsselmeer"},
		{"nl", "title", "iJ", "IJ"},
		{"nl", "title", "íj\u0301s", "ÍJ\u0301s"},
		{"nl", "title", "ij\u0301", "Ij\u0301"},
		{"nl", "title", "ij\u0308", "Ij\u0308"},
		{"nl", "title", "ia", "Ia"},
		{"en", "title", "ij", "Ij"},
		// Greek uppercasing drops accents, keeps dialytika and the disjunctive ή.
		{"el", "upper", "άι", "ΑΪ"},
		{"el", "upper", "Πατάτα", "ΠΑΤΑΤΑ"},
		{"el", "upper", "ή", "Η\u0301"},
		{"el", "upper", "ᾳ", "ΑΙ"},
		{"el", "upper", "ΐ", "Ϊ"},
		{"en", "upper", "ά", "Ά"},
		{"el", "lower", "ΟΔΟΣ", "οδος"},
		{"el", "title", "ΟΔΟΣ", "Οδος"},
		// Final sigma everywhere, full mappings, title after the first letter or number.
		{"en", "lower", "ΟΔΟΣ", "οδος"},
		{"en", "lower", "ΣΑ", "σα"},
		{"en", "upper", "straße", "STRASSE"},
		{"en", "title", "ßa", "Ssa"},
		{"en", "title", "1ABC", "1abc"},
		{"en", "title", "'ABC", "'Abc"},
		{"hy", "upper", "և", "ԵՎ"},
		{"hy", "title", "և", "Եվ"},
		{"en", "upper", "և", "ԵՒ"},
	} {
		loc := caseLocaleOf(c.lang)
		var got string
		switch c.op {
		case "lower":
			got = icuLower(c.in, loc)
		case "upper":
			got = icuUpper(c.in, loc)
		case "title":
			got = icuTitle(c.in, loc)
		}
		if got != c.want {
			t.Errorf("%s %s %+q = %+q, want %+q", c.lang, c.op, c.in, got, c.want)
		}
	}
}

// caseTexts are the texts TestCasingMatchesICU maps: each code point with
// case properties or mappings alone, and random strings of the letters
// and marks the conditional mappings look at.
func caseTexts() []string {
	var texts []string
	seen := map[rune]bool{}
	add := func(r rune) {
		if !seen[r] && r != '\n' && r != '\t' && r != '\r' && (r < 0xD800 || r > 0xDFFF) {
			seen[r] = true
			texts = append(texts, string(r))
		}
	}
	for _, p := range caseProps {
		for r := p.lo; r <= p.hi; r++ {
			add(r)
		}
	}
	for r := range fullCase {
		add(r)
	}
	for r := range greekLetters {
		add(r)
	}
	alphabet := []rune("IiİıJjĮįÌÍĨìíĩÎÏĪĴȊḮîïīĵȋḯaAsSeEoO1 .'-·ΣσςΑαΆάΕΗΉήΙΊίΪϊΐΟΥΎύΫϋΰΩΏώᾳᾼῳἀἈὐὨᾷΰßŉǰĳĲևﬀ" +
		"\u0300\u0301\u0303\u0307\u0308\u0323\u0328\u0342\u0344\u0345\u0313\u0314\u0302\u0311\u0304\u00ad\u200d")
	rng := rand.New(rand.NewSource(58))
	for n := 0; n < 4000; n++ {
		b := make([]rune, 1+rng.Intn(8))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		texts = append(texts, string(b))
	}
	return texts
}

// TestCasingMatchesICU: lowercasing, uppercasing and titlecasing with each
// language whose case mappings ICU treats specially (and with en, the
// root's) give what ICU gives, calling it as the Tokenizer does
// (internal/icugen/icucase.cc, built here against the machine's ICU).
func TestCasingMatchesICU(t *testing.T) {
	cxx := testenv.Command(t, "c++", "g++")
	if _, err := os.Stat("/usr/include/unicode/unistr.h"); err != nil {
		testenv.Missing(t, "ICU's headers", "apt-get install libicu-dev", err)
	}
	bin := filepath.Join(t.TempDir(), "icucase")
	if b, err := exec.Command(cxx, "-O1", "internal/icugen/icucase.cc", "-o", bin, "-licuuc").CombinedOutput(); err != nil {
		t.Fatalf("building icucase: %v\n%s", err, b)
	}
	texts := caseTexts()
	langs := []string{"en", "tr", "az", "lt", "el", "nl", "hy", "tur", "lt_LT", "nl-NL", "EL"}
	ops := []string{"lower", "upper", "title"}
	var in strings.Builder
	for _, lang := range langs {
		for _, op := range ops {
			for _, s := range texts {
				fmt.Fprintf(&in, "%s\t%s\t%s\n", lang, op, s)
			}
		}
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("icucase: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	shown := 0
	for _, lang := range langs {
		loc := caseLocaleOf(lang)
		for _, op := range ops {
			bad := 0
			for _, s := range texts {
				if !sc.Scan() {
					t.Fatal("icucase wrote fewer lines than it read")
				}
				want := sc.Text()
				var got string
				switch op {
				case "lower":
					got = icuLower(s, loc)
				case "upper":
					got = icuUpper(s, loc)
				default:
					got = icuTitle(s, loc)
				}
				if got != want {
					bad++
					if shown++; shown <= 30 {
						t.Errorf("%s %s %+q = %+q, ICU gives %+q", lang, op, s, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s %s: %d of %d texts differ from ICU", lang, op, bad, len(texts))
			}
		}
	}
}
