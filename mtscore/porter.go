package mtscore

import (
	"regexp"
	"strings"
)

// porterStem is Porter's stemmer (1980) as ROUGE-1.5.5 runs it with -m:
// the rules of the paper with the reference implementation's changes
// (bli -> ble, logi -> log in step 2) and ROUGE's own (step 4 does not
// try -ment and -ent on a word ending in -ement). w is lower case; words
// under 3 letters stay as they are.
func porterStem(w string) string {
	if len(w) < 3 {
		return w
	}
	// An initial y is a consonant: mark it so no vowel pattern takes it.
	upperY := w[0] == 'y'
	if upperY {
		w = "Y" + w[1:]
	}

	// Step 1a.
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies"):
		w = w[:len(w)-2]
	case len(w) >= 2 && w[len(w)-1] == 's' && w[len(w)-2] != 's':
		w = w[:len(w)-1]
	}

	// Step 1b.
	if stem, ok := strings.CutSuffix(w, "eed"); ok {
		if measureGT0.MatchString(stem) {
			w = w[:len(w)-1]
		}
	} else if stem, ok := cutEdIng(w); ok && hasVowel.MatchString(stem) {
		w = stem
		switch {
		case strings.HasSuffix(w, "at") || strings.HasSuffix(w, "bl") || strings.HasSuffix(w, "iz"):
			w += "e"
		case doubleEnd(w):
			w = w[:len(w)-1]
		case shortCVC.MatchString(w):
			w += "e"
		}
	}

	// Step 1c.
	if stem, ok := strings.CutSuffix(w, "y"); ok && hasVowel.MatchString(stem) {
		w = stem + "i"
	}

	// Step 2.
	if m := step2.FindStringSubmatchIndex(w); m != nil {
		if stem := w[:m[0]]; measureGT0.MatchString(stem) {
			w = stem + step2Map[w[m[2]:m[3]]]
		}
	}

	// Step 3.
	if m := step3.FindStringSubmatchIndex(w); m != nil {
		if stem := w[:m[0]]; measureGT0.MatchString(stem) {
			w = stem + step3Map[w[m[2]:m[3]]]
		}
	}

	// Step 4 (ROUGE-1.5.5's order: the list, then -ment, then -ent or
	// -sion/-tion, each on the word as the one before left it).
	if m := step4.FindStringIndex(w); m != nil {
		if stem := w[:m[0]]; measureGT1.MatchString(stem) {
			w = stem
		}
	}
	if stem, ok := strings.CutSuffix(w, "ment"); ok && measureGT1.MatchString(stem) {
		w = stem
	}
	if stem, ok := strings.CutSuffix(w, "ent"); ok {
		if measureGT1.MatchString(stem) {
			w = stem
		}
	} else if m := step4ion.FindStringSubmatchIndex(w); m != nil {
		if stem := w[:m[3]]; measureGT1.MatchString(stem) {
			w = stem
		}
	}

	// Step 5.
	if stem, ok := strings.CutSuffix(w, "e"); ok {
		if measureGT1.MatchString(stem) || measureEQ1.MatchString(stem) && !shortCVC.MatchString(stem) {
			w = stem
		}
	}
	if strings.HasSuffix(w, "ll") && measureGT1.MatchString(w) {
		w = w[:len(w)-1]
	}
	if upperY {
		w = "y" + w[1:]
	}
	return w
}

// cutEdIng cuts -ed or -ing, as the first of them the word ends in.
func cutEdIng(w string) (string, bool) {
	if s, ok := strings.CutSuffix(w, "ed"); ok {
		return s, true
	}
	return strings.CutSuffix(w, "ing")
}

// doubleEnd: the word ends in a doubled consonant other than l, s, z.
func doubleEnd(w string) bool {
	n := len(w)
	if n < 2 || w[n-1] != w[n-2] {
		return false
	}
	return !strings.ContainsRune("aeiouylsz", rune(w[n-1]))
}

// The patterns of the Perl implementation: c a consonant, v a vowel
// (y included), C a run of consonants, V a run of vowels.
const (
	porterC = `[^aeiou][^aeiouy]*`
	porterV = `[aeiouy][aeiou]*`
)

var (
	measureGT0 = regexp.MustCompile(`^(` + porterC + `)?` + porterV + porterC)
	measureEQ1 = regexp.MustCompile(`^(` + porterC + `)?` + porterV + porterC + `(` + porterV + `)?$`)
	measureGT1 = regexp.MustCompile(`^(` + porterC + `)?` + porterV + porterC + porterV + porterC)
	hasVowel   = regexp.MustCompile(`^(` + porterC + `)?[aeiouy]`)
	shortCVC   = regexp.MustCompile(`^` + porterC + `[aeiouy][^aeiouwxy]$`)
	step2      = regexp.MustCompile(`(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|ator|alism|iveness|fulness|ousness|aliti|iviti|biliti|logi)$`)
	step3      = regexp.MustCompile(`(icate|ative|alize|iciti|ical|ful|ness)$`)
	step4      = regexp.MustCompile(`(al|ance|ence|er|ic|able|ible|ant|ement|ou|ism|ate|iti|ous|ive|ize)$`)
	step4ion   = regexp.MustCompile(`(s|t)(ion)$`)
	step2Map   = map[string]string{"ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize", "bli": "ble",
		"alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize", "ation": "ate", "ator": "ate", "alism": "al",
		"iveness": "ive", "fulness": "ful", "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log"}
	step3Map = map[string]string{"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "", "ness": ""}
)
