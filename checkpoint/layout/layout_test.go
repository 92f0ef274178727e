package layout

import (
	"reflect"
	"testing"
)

func TestParseDim(t *testing.T) {
	cases := []struct {
		in   string
		want Dim
		err  bool
	}{
		{"H", Dim{Terms: []Term{{1, "H"}}}, false},
		{"4H", Dim{Terms: []Term{{4, "H"}}}, false},
		{"12", Dim{Terms: []Term{{12, ""}}}, false},
		{"E+H", Dim{Terms: []Term{{1, "E"}, {1, "H"}}}, false},
		{"2E+3H+1", Dim{Terms: []Term{{2, "E"}, {3, "H"}, {1, ""}}}, false},
		{"*", Dim{Any: true}, false},
		{"", Dim{}, true},
		{"E+", Dim{}, true},
		{"0H", Dim{}, true},
		{"H-1", Dim{}, true},
	}
	for _, c := range cases {
		got, err := ParseDim(c.in)
		if (err != nil) != c.err || !c.err && !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseDim(%q) = %+v, %v; want %+v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// TestUnify: a dimension fixes its one unknown symbol, checks a known
// one, and with two unknown symbols accepts any size above its constant.
func TestUnify(t *testing.T) {
	cases := []struct {
		dim   string
		n     int64
		sizes Sizes
		sym   string
		v     int64
		ok    bool
	}{
		{"4H", 20, nil, "H", 5, true},
		{"4H", 21, nil, "", 0, false},
		{"4H", 20, Sizes{"H": 5}, "", 0, true},
		{"4H", 24, Sizes{"H": 5}, "", 0, false},
		{"E+H", 9, Sizes{"H": 5}, "E", 4, true},
		{"E+H", 5, Sizes{"H": 5}, "", 0, false}, // E would be 0
		{"E+H", 9, Sizes{"E": 4, "H": 5}, "", 0, true},
		{"E+H", 9, nil, "", 0, true},
		{"3", 3, nil, "", 0, true},
		{"3", 4, nil, "", 0, false},
		{"*", 7, nil, "", 0, true},
	}
	for _, c := range cases {
		d, err := ParseDim(c.dim)
		if err != nil {
			t.Fatal(err)
		}
		sym, v, ok := d.Unify(c.n, c.sizes)
		if sym != c.sym || v != c.v || ok != c.ok {
			t.Errorf("%q.Unify(%d, %v) = %q, %d, %v; want %q, %d, %v", c.dim, c.n, c.sizes, sym, v, ok, c.sym, c.v, c.ok)
		}
	}
}

func TestResolveAndWhat(t *testing.T) {
	k := Key{Name: "decoder.gru.weight_ih_l0", Shape: []string{"3H", "E+H"}, Note: "[embedding; context]"}
	dims, err := Resolve(k.Shape, Sizes{"H": 5, "E": 3})
	if err != nil || !reflect.DeepEqual(dims, []int64{15, 8}) {
		t.Errorf("Resolve = %v, %v; want [15 8]", dims, err)
	}
	if _, err := Resolve(k.Shape, Sizes{"H": 5}); err == nil || err.Error() != `dimension "E+H" of shape [3H E+H]: size not known` {
		t.Errorf("Resolve without E: %v", err)
	}
	if w := k.What(); w != "3H x (E+H): [embedding; context]" {
		t.Errorf("What = %q", w)
	}
	if w := (Key{Shape: []string{"E+H"}}).What(); w != "E+H" {
		t.Errorf("What of one sum = %q", w)
	}
	if s := k.String(); s != "decoder.gru.weight_ih_l0 [3H E+H]" {
		t.Errorf("String = %q", s)
	}
}
