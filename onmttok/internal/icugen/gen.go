//go:build ignore

// gen writes onmttok's scripts_table.go from icudump's output: ICU's script
// codes and names, and the script extensions of the characters of the
// Common script (what uscript_getScriptExtensions returns, which Go's
// unicode package lacks). It also writes casing_table.go, what ICU's
// language-specific string casing reads of each code point: whether it is
// cased or case-ignorable or soft-dotted, its canonical combining class,
// its full case mappings where they are not the simple ones, and for the
// Greek letters the base letter's capital and the accents, dialytika and
// ypogegrammeni of their decomposition (ICU's Greek uppercasing). It first checks that Go's unicode tables give
// every code point the general category, simple case mappings and script
// that ICU gives it: the tokenizer takes those from Go, and a Go release
// on another Unicode version than the ICU it is compared with must not
// pass unnoticed.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// ICU's UCharCategory order.
var categories = []*unicode.RangeTable{nil, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo,
	unicode.Mn, unicode.Me, unicode.Mc, unicode.Nd, unicode.Nl, unicode.No, unicode.Zs, unicode.Zl,
	unicode.Zp, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Pd, unicode.Ps, unicode.Pe,
	unicode.Pc, unicode.Po, unicode.Sm, unicode.Sc, unicode.Sk, unicode.So, unicode.Pi, unicode.Pf}

func main() {
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// caseInfo is a K line: flags (1 cased, 2 case-ignorable, 4 soft-dotted),
// combining class, simple titlecase, and the full mappings that are not
// the simple ones ("" where they are).
type caseInfo struct {
	flags, ccc           int
	title                rune
	lower, upper, title2 string
}

type point struct {
	c, cat, lower, upper rune
	script               int
	ext                  []int
}

func run(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var version string
	names := map[int][2]string{}
	var points []point
	infos := map[rune]caseInfo{}
	decomp := map[rune][]rune{}
	seq := func(s string) []rune {
		var r []rune
		for _, h := range strings.Split(s, ".") {
			v, _ := strconv.ParseInt(h, 16, 32)
			r = append(r, rune(v))
		}
		return r
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		switch fl[0] {
		case "K":
			c, t := seq(fl[1])[0], seq(fl[4])[0]
			in := caseInfo{title: t}
			in.flags, _ = strconv.Atoi(fl[2])
			in.ccc, _ = strconv.Atoi(fl[3])
			for _, m := range fl[5:] {
				switch m[0] {
				case 'L':
					in.lower = string(seq(m[2:]))
				case 'U':
					in.upper = string(seq(m[2:]))
				case 'T':
					in.title2 = string(seq(m[2:]))
				}
			}
			infos[c] = in
			continue
		case "G":
			decomp[seq(fl[1])[0]] = seq(fl[2][2:])
			continue
		case "V":
			version = "ICU " + fl[1] + ", Unicode " + fl[2]
			continue
		case "S":
			i, _ := strconv.Atoi(fl[1])
			names[i] = [2]string{fl[2], fl[3]}
			continue
		}
		hex := func(s string) rune { v, _ := strconv.ParseInt(s, 16, 32); return rune(v) }
		dec := func(s string) int { v, _ := strconv.Atoi(s); return v }
		p := point{c: hex(fl[0]), cat: rune(dec(fl[1])), lower: hex(fl[2]), upper: hex(fl[3]), script: dec(fl[4])}
		for _, e := range fl[5:] {
			p.ext = append(p.ext, dec(e))
		}
		points = append(points, p)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(points) != unicode.MaxRune+1 {
		return fmt.Errorf("%d code points in the dump, want %d", len(points), unicode.MaxRune+1)
	}
	// Go's tables must agree with ICU's.
	for _, p := range points {
		cat := rune(0)
		for i, t := range categories {
			if t != nil && unicode.Is(t, p.c) {
				cat = rune(i)
			}
		}
		script := "Unknown"
		for n, t := range unicode.Scripts {
			if unicode.Is(t, p.c) {
				script = n
			}
		}
		switch {
		case cat != p.cat:
			return fmt.Errorf("U+%04X: general category %d in Go's unicode %s, %d in %s", p.c, cat, unicode.Version, p.cat, version)
		case unicode.ToLower(p.c) != p.lower || unicode.ToUpper(p.c) != p.upper:
			return fmt.Errorf("U+%04X: case mappings differ between Go's unicode %s and %s", p.c, unicode.Version, version)
		case script != names[p.script][0]:
			return fmt.Errorf("U+%04X: script %s in Go's unicode %s, %s in %s", p.c, script, unicode.Version, names[p.script][0], version)
		}
	}
	for _, p := range points {
		want := p.c
		if in, ok := infos[p.c]; ok {
			want = in.title
		}
		if unicode.ToTitle(p.c) != want {
			return fmt.Errorf("U+%04X: titlecase mappings differ between Go's unicode %s and %s", p.c, unicode.Version, version)
		}
	}
	if err := writeCasing(filepath.Join(dir, "casing_table.go"), version, infos, decomp); err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(dir, "scripts_table.go"))
	if err != nil {
		return err
	}
	defer out.Close()
	codes := make([]int, 0, len(names))
	for i := range names {
		codes = append(codes, i)
	}
	sort.Ints(codes)
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "// Code generated by internal/icugen/gen.sh from %s; DO NOT EDIT.\n\npackage onmttok\n\n", version)
	fmt.Fprintf(w, "// unicodeVersion is the Unicode version of the ICU the tables were taken\n// from; Go's unicode package must have the same (TestUnicodeVersion).\nconst unicodeVersion = %q\n\n", strings.Fields(version)[3])
	fmt.Fprintf(w, "// icuScripts are ICU's scripts (UScriptCode order): long and short names.\nvar icuScripts = [...][2]string{\n")
	for i, c := range codes {
		if c != i {
			return fmt.Errorf("script codes are not 0..%d", len(codes)-1)
		}
		fmt.Fprintf(w, "\t{%q, %q},\n", names[c][0], names[c][1])
	}
	fmt.Fprintf(w, "}\n\n// commonExtensions are the script extensions of the Common characters\n// that have others than Common, in ICU's order (ascending codes).\nvar commonExtensions = []extensionRange{\n")
	same := func(a, b []int) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(points); {
		p := points[i]
		if p.script != 0 || (len(p.ext) == 1 && p.ext[0] == 0) {
			i++
			continue
		}
		j := i + 1
		for j < len(points) && points[j].script == 0 && same(points[j].ext, p.ext) {
			j++
		}
		ext := make([]string, len(p.ext))
		for k, e := range p.ext {
			ext[k] = strconv.Itoa(e)
		}
		fmt.Fprintf(w, "\t{0x%04X, 0x%04X, []int16{%s}},\n", p.c, points[j-1].c, strings.Join(ext, ", "))
		i = j
	}
	fmt.Fprintf(w, "}\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Close()
}

// writeCasing writes casing_table.go.
func writeCasing(path, version string, infos map[rune]caseInfo, decomp map[rune][]rune) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "// Code generated by internal/icugen/gen.sh from %s; DO NOT EDIT.\n\npackage onmttok\n\n", version)
	cs := make([]rune, 0, len(infos))
	for c := range infos {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	fmt.Fprintf(w, "// caseProps are the ranges of code points that are cased,\n// case-ignorable or soft-dotted, or have a combining class.\nvar caseProps = []casePropRange{\n")
	for i := 0; i < len(cs); {
		in := infos[cs[i]]
		if in.flags == 0 && in.ccc == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(cs) && cs[j] == cs[j-1]+1 && infos[cs[j]].flags == in.flags && infos[cs[j]].ccc == in.ccc {
			j++
		}
		fmt.Fprintf(w, "\t{0x%04X, 0x%04X, %d, %d},\n", cs[i], cs[j-1], in.flags, in.ccc)
		i = j
	}
	fmt.Fprintf(w, "}\n\n// fullCase are the full case mappings (of the root locale, out of\n// context) that are not the simple ones: lower, upper, title, \"\" where\n// the simple one holds.\nvar fullCase = map[rune][3]string{\n")
	for _, c := range cs {
		in := infos[c]
		if in.lower != "" || in.upper != "" || in.title2 != "" {
			fmt.Fprintf(w, "\t0x%04X: {%+q, %+q, %+q},\n", c, in.lower, in.upper, in.title2)
		}
	}
	fmt.Fprintf(w, "}\n\n// greekLetters are the Greek letters with their base letter's capital\n// and what their decomposition has of accents, dialytika and\n// ypogegrammeni (greek* flags).\nvar greekLetters = map[rune]greekLetter{\n")
	for c := rune(0x370); c <= 0x2126; c++ {
		if c == 0x400 {
			c = 0x1F00
		} else if c == 0x2000 {
			c = 0x2126
		}
		if !unicode.IsLetter(c) || !unicode.Is(unicode.Greek, c) {
			continue
		}
		d := decomp[c]
		if d == nil {
			d = []rune{c}
		}
		up := unicode.ToUpper(d[0])
		var flags []string
		if strings.ContainsRune("\u0391\u0395\u0397\u0399\u039F\u03A5\u03A9", up) {
			flags = append(flags, "greekVowel")
		}
		for _, m := range d[1:] {
			switch m {
			case 0x300, 0x301, 0x342:
				flags = append(flags, "greekAccent")
			case 0x308:
				flags = append(flags, "greekDialytika")
			case 0x345:
				flags = append(flags, "greekYpogegrammeni")
			}
		}
		if len(flags) == 0 {
			flags = []string{"0"}
		}
		fmt.Fprintf(w, "\t0x%04X: {0x%04X, %s},\n", c, up, strings.Join(flags, " | "))
	}
	fmt.Fprintf(w, "}\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Close()
}
