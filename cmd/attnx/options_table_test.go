package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// optionRow is one row of docs/options.md's tables.
type optionRow struct {
	option, status, attnx, why string
	line                       int
}

// optionSection is one toolkit release's table of docs/options.md.
type optionSection struct {
	title, tsv string
	summary    [4]int // options, supported, missing, n.a.
	hasSummary bool
	rows       []optionRow
}

var (
	optionHeading = regexp.MustCompile(`^## (.+) \(([a-z0-9.-]+\.tsv)\)$`)
	optionSummary = regexp.MustCompile(`^Summary: (\d+) options: (\d+) supported, (\d+) missing, (\d+) n\.a\.$`)
	optionRowLine = regexp.MustCompile("^\\| `([^`]+)` \\| ([a-z.]+) \\| (.*) \\| (.*) \\|$")
	optionCode    = regexp.MustCompile("`([^`]+)`")
	// A flag's line in pflag's usage: "  -x, --name ..." or "      --name ...";
	// the continuation lines of a usage text are indented further.
	helpFlagLine = regexp.MustCompile(`(?m)^(?:  -([a-zA-Z]), |      )--([a-z0-9-]+)`)
)

// readOptionsDoc parses docs/options.md's sections.
func readOptionsDoc(t *testing.T, path string) []*optionSection {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*optionSection
	var cur *optionSection
	for i, line := range strings.Split(string(data), "\n") {
		if m := optionHeading.FindStringSubmatch(line); m != nil {
			cur = &optionSection{title: m[1], tsv: m[2]}
			out = append(out, cur)
			continue
		}
		if cur == nil {
			continue
		}
		if m := optionSummary.FindStringSubmatch(line); m != nil {
			if cur.hasSummary {
				t.Errorf("%s line %d: a second summary line in %s", path, i+1, cur.title)
			}
			cur.hasSummary = true
			for k := range cur.summary {
				cur.summary[k], _ = strconv.Atoi(m[k+1])
			}
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		m := optionRowLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s line %d: %q is not a row | `option` | status | attnx | why |", path, i+1, line)
			continue
		}
		cur.rows = append(cur.rows, optionRow{option: m[1], status: m[2], attnx: strings.TrimSpace(m[3]), why: strings.TrimSpace(m[4]), line: i + 1})
	}
	return out
}

// readOptionsTSV returns the options of a testdata/options TSV, each with
// its spellings: the option first, then its aliases.
func readOptionsTSV(t *testing.T, path string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string][]string{}
	header := false
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !header {
			if line != "option\taliases\tsource\tdefault\thelp" {
				t.Fatalf("%s line %d: header %q, want option, aliases, source, default, help", path, i+1, line)
			}
			header = true
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 5 || fields[0] == "" {
			t.Fatalf("%s line %d: %d fields, want 5 with an option first: %q", path, i+1, len(fields), line)
		}
		if _, dup := opts[fields[0]]; dup {
			t.Fatalf("%s line %d: option %s listed twice", path, i+1, fields[0])
		}
		spellings := []string{fields[0]}
		if fields[1] != "" {
			spellings = append(spellings, strings.Split(fields[1], ",")...)
		}
		opts[fields[0]] = spellings
	}
	return opts
}

// commandFlags returns the long and short flags attnx NAME's --help lists
// ("--name" and "-x" each), nil when there is no such command.
func commandFlags(t *testing.T, name string, cache map[string]map[string]bool) map[string]bool {
	t.Helper()
	if f, ok := cache[name]; ok {
		return f
	}
	if lookup(name) == nil {
		cache[name] = nil
		return nil
	}
	code, out, errs := attnx(name, "--help")
	if code != 0 || !strings.Contains(out, "\nFlags:\n") {
		t.Fatalf("attnx %s --help: exit %d, %q", name, code, errs)
	}
	_, usage, _ := strings.Cut(out, "\nFlags:\n")
	flags := map[string]bool{}
	for _, m := range helpFlagLine.FindAllStringSubmatch(usage, -1) {
		flags["--"+m[2]] = true
		if m[1] != "" {
			flags["-"+m[1]] = true
		}
	}
	if len(flags) == 0 {
		t.Fatalf("attnx %s --help lists no flags", name)
	}
	cache[name] = flags
	return flags
}

// TestOptionsTable: docs/options.md has a row for every inference option
// of the toolkits' releases as testdata/options' TSVs list them (made from
// the releases' sources by extract_options.py) and none for an option they
// lack; a supported row names attnx commands and flags that exist (the
// flags their --help lists); a missing or n.a. row says why; each
// section's summary line counts its rows.
func TestOptionsTable(t *testing.T) {
	sections := readOptionsDoc(t, "../../docs/options.md")
	tsvs, _ := filepath.Glob("../../testdata/options/*.tsv")
	if len(tsvs) != 4 {
		t.Fatalf("testdata/options holds %d TSVs, want 4 (OpenNMT-py 3.5.1 and 2.3.0, fairseq 0.12.2, JoeyNMT 2.3)", len(tsvs))
	}
	bySection := map[string]*optionSection{}
	for _, s := range sections {
		if bySection[s.tsv] != nil {
			t.Errorf("docs/options.md: two sections for %s", s.tsv)
		}
		bySection[s.tsv] = s
	}
	flags := map[string]map[string]bool{}
	for _, path := range tsvs {
		name := filepath.Base(path)
		s := bySection[name]
		if s == nil {
			t.Errorf("docs/options.md has no section for testdata/options/%s", name)
			continue
		}
		delete(bySection, name)
		listed := readOptionsTSV(t, path)
		var count [4]int
		rowOf := map[string]int{}
		for _, r := range s.rows {
			where := "docs/options.md line " + strconv.Itoa(r.line) + " (" + s.title + ", " + r.option + ")"
			if prev, ok := rowOf[r.option]; ok {
				t.Errorf("%s: a second row for the option (the first at line %d)", where, prev)
			}
			rowOf[r.option] = r.line
			if listed[r.option] == nil {
				t.Errorf("%s: %s lists no such option", where, name)
			}
			count[0]++
			switch r.status {
			case "supported":
				count[1]++
				checkSupportedRow(t, where, r, flags)
				checkToolkitHint(t, where, r, listed[r.option])
			case "missing", "n.a.":
				if r.status == "missing" {
					count[2]++
				} else {
					count[3]++
				}
				if r.why == "" {
					t.Errorf("%s: %s with no reason", where, r.status)
				}
				if r.attnx != "—" {
					t.Errorf("%s: %s, yet its attnx column is %q (want —)", where, r.status, r.attnx)
				}
			default:
				t.Errorf("%s: status %q, want supported, missing or n.a.", where, r.status)
			}
		}
		for o := range listed {
			if _, ok := rowOf[o]; !ok {
				t.Errorf("docs/options.md, %s: no row for %s's option %s", s.title, name, o)
			}
		}
		if !s.hasSummary {
			t.Errorf("docs/options.md, %s: no summary line", s.title)
		} else if s.summary != count {
			t.Errorf("docs/options.md, %s: summary says %d options, %d supported, %d missing, %d n.a.; the rows are %d, %d, %d, %d",
				s.title, s.summary[0], s.summary[1], s.summary[2], s.summary[3], count[0], count[1], count[2], count[3])
		}
		t.Logf("%s: %d options: %d supported, %d missing, %d n.a.", s.title, count[0], count[1], count[2], count[3])
	}
	for name := range bySection {
		t.Errorf("docs/options.md has a section for %s, which testdata/options lacks", name)
	}
}

// checkSupportedRow checks that a supported row's attnx column names, in
// code spans, commands attnx has and flags those commands have.
func checkSupportedRow(t *testing.T, where string, r optionRow, cache map[string]map[string]bool) {
	t.Helper()
	spans := optionCode.FindAllStringSubmatch(r.attnx, -1)
	if len(spans) == 0 {
		t.Errorf("%s: supported, with no attnx command in `code`: %q", where, r.attnx)
		return
	}
	for _, sp := range spans {
		words := strings.Fields(sp[1])
		have := commandFlags(t, words[0], cache)
		if have == nil {
			t.Errorf("%s: `%s`: attnx has no command %q", where, sp[1], words[0])
			continue
		}
		for _, w := range words[1:] {
			if strings.HasPrefix(w, "-") && !have[w] {
				t.Errorf("%s: `%s`: attnx %s has no flag %s", where, sp[1], words[0], w)
			}
		}
	}
}

// checkToolkitHint checks a supported row against toolkitflags.go: where
// attnx answers one of the option's spellings with a flag of its own
// (translate's), the row names that flag too.
func checkToolkitHint(t *testing.T, where string, r optionRow, spellings []string) {
	t.Helper()
	for _, sp := range spellings {
		key := strings.ReplaceAll(strings.ToLower(strings.TrimLeft(strings.TrimPrefix(sp, "testing."), "-")), "_", "-")
		hint, ok := toolkitFlags[key]
		if !ok || !strings.HasPrefix(hint, "--") {
			continue
		}
		flag, _, _ := strings.Cut(hint, " ")
		named := false
		for _, m := range optionCode.FindAllStringSubmatch(r.attnx, -1) {
			for _, w := range strings.Fields(m[1])[1:] {
				named = named || w == flag
			}
		}
		if !named {
			t.Errorf("%s: toolkitflags.go answers %s with %s, which the row's attnx column (%s) does not name", where, sp, flag, r.attnx)
		}
	}
}
