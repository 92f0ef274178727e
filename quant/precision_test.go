package quant

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePrecision(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Precision
		err  string
	}{
		{"", PrecisionFP32, ""},
		{"fp32", PrecisionFP32, ""},
		{" int8 ", PrecisionInt8, ""},
		{"int4", PrecisionInt4, ""},
		{"int2", "", `unknown weights precision "int2" (want fp32, int8 or int4)`},
		{"INT8", "", `unknown weights precision "INT8"`},
	} {
		got, err := ParsePrecision(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParsePrecision(%q) = %q, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParsePrecision(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestParsePrecisions(t *testing.T) {
	got, err := ParsePrecisions("fp32, int8,,int4")
	if err != nil || !slices.Equal(got, Precisions) {
		t.Errorf("ParsePrecisions = %v, %v; want %v", got, err, Precisions)
	}
	for in, want := range map[string]string{
		"int8,int8": `weights precision int8 listed twice in "int8,int8"`,
		" , ":       `no weights precision in " , "`,
		"fp32,fp16": `unknown weights precision "fp16"`,
	} {
		if _, err := ParsePrecisions(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePrecisions(%q): error %v, want %q", in, err, want)
		}
	}
}

func TestPrecisionProperties(t *testing.T) {
	for _, c := range []struct {
		p                 Precision
		or                Precision
		reduced, standard bool
	}{
		{"", PrecisionFP32, false, true},
		{PrecisionFP32, PrecisionFP32, false, true},
		{PrecisionInt8, PrecisionInt8, true, true},
		{PrecisionInt4, PrecisionInt4, true, false},
	} {
		if c.p.OrFP32() != c.or || c.p.Reduced() != c.reduced || c.p.StandardOps() != c.standard {
			t.Errorf("%q: OrFP32 %q, Reduced %v, StandardOps %v; want %q, %v, %v", c.p, c.p.OrFP32(), c.p.Reduced(), c.p.StandardOps(), c.or, c.reduced, c.standard)
		}
	}
}
