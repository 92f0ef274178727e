package checkpoint

import (
	"reflect"
	"strings"
	"testing"
)

func stateDictOf(keys ...string) *StateDict {
	ks := make([]KeyShape, len(keys))
	for i, k := range keys {
		ks[i] = KeyShape{Key: k, Shape: []int64{1}}
	}
	sd := &StateDict{Keys: keys, Tensors: fakeTensors(ks)}
	return sd
}

func TestStripPrefix(t *testing.T) {
	cases := []struct {
		name  string
		keys  []string
		want  []string
		notes []string
	}{
		{"in place", []string{"encoder.a", "decoder.b", "module.c"}, []string{"encoder.a", "decoder.b", "module.c"}, nil},
		{"DDP", []string{"module.encoder.a", "module.decoder.b"}, []string{"encoder.a", "decoder.b"},
			[]string{`removed the prefix "module." in front of encoder./decoder.: the model was wrapped in DataParallel or DistributedDataParallel`}},
		{"nested wrappers", []string{"model.module.encoder.a", "model.module.decoder.b"}, []string{"encoder.a", "decoder.b"},
			[]string{`removed the prefix "model.module." in front of encoder./decoder.: the model was wrapped in DataParallel or DistributedDataParallel`}},
		{"siblings kept, others dropped", []string{"net.encoder.a", "net.attention.W1", "criterion.weight", "net.decoder.b"}, []string{"encoder.a", "attention.W1", "decoder.b"}, []string{
			`removed the prefix "net." in front of encoder./decoder.: the model was an attribute of a wrapper module`,
			"dropped 1 key outside net.: criterion.weight"}},
		{"two wrappers: ambiguous", []string{"model.encoder.a", "ema.encoder.a"}, []string{"model.encoder.a", "ema.encoder.a"}, nil},
		{"no root at all", []string{"conv1.weight", "fc.bias"}, []string{"conv1.weight", "fc.bias"}, nil},
		{"root as a leaf only", []string{"x.encoder", "x.y"}, []string{"x.encoder", "x.y"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := stateDictOf(c.keys...)
			changed := sd.StripPrefix(EncoderRoot, DecoderRoot)
			if !reflect.DeepEqual(sd.Keys, c.want) || !reflect.DeepEqual(sd.Notes, c.notes) || changed != (c.notes != nil) {
				t.Errorf("keys %q notes %q changed %v, want %q %q", sd.Keys, sd.Notes, changed, c.want, c.notes)
			}
			for _, k := range sd.Keys {
				if tn := sd.Tensors[k]; tn == nil || tn.Name != k {
					t.Errorf("tensor %q missing or misnamed", k)
				}
			}
			if len(sd.Tensors) != len(sd.Keys) {
				t.Errorf("%d tensors for %d keys", len(sd.Tensors), len(sd.Keys))
			}
		})
	}
}

func TestRename(t *testing.T) {
	keys := []string{"decoder.attention.W1.weight", "decoder.attention.W10.weight", "decoder.attention.W1", "encoder.x"}
	cases := []struct {
		maps []string
		want []string
		err  string
	}{
		{[]string{"decoder.attention.W1=decoder.fc_hidden"}, []string{"decoder.fc_hidden.weight", "decoder.attention.W10.weight", "decoder.fc_hidden", "encoder.x"}, ""},
		{[]string{"decoder.attention.=decoder."}, []string{"decoder.W1.weight", "decoder.W10.weight", "decoder.W1", "encoder.x"}, ""},
		{[]string{"=model."}, []string{"model.decoder.attention.W1.weight", "model.decoder.attention.W10.weight", "model.decoder.attention.W1", "model.encoder.x"}, ""},
		{[]string{"encoder.=", "x=y"}, []string{"decoder.attention.W1.weight", "decoder.attention.W10.weight", "decoder.attention.W1", "y"}, ""},
		{[]string{"decoder.attention.W10=decoder.attention.W1"}, nil,
			"map decoder.attention.W10=decoder.attention.W1: decoder.attention.W1.weight and decoder.attention.W10.weight would both be named decoder.attention.W1.weight"},
		{[]string{"encoder.x="}, nil, "map encoder.x=: would leave encoder.x with an empty name"},
		{[]string{"attention=attn"}, nil, `map attention=attn: no key starts with "attention" (keys: decoder.attention.W1, decoder.attention.W1.weight, decoder.attention.W10.weight, encoder.x)`},
	}
	for _, c := range cases {
		sd := stateDictOf(keys...)
		var rs []Rename
		for _, m := range c.maps {
			r, err := ParseRename(m)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		err := sd.Rename(rs)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("maps %q: error %v, want %q", c.maps, err, c.err)
			}
			if !reflect.DeepEqual(sd.Keys, keys) {
				t.Errorf("maps %q: a failed rename changed the keys to %q", c.maps, sd.Keys)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(sd.Keys, c.want) || len(sd.Notes) != len(c.maps) {
			t.Errorf("maps %q: keys %q notes %q err %v, want %q", c.maps, sd.Keys, sd.Notes, err, c.want)
		}
	}
	for _, bad := range []string{"a.b", "x=x", ""} {
		if _, err := ParseRename(bad); err == nil {
			t.Errorf("ParseRename(%q) accepted", bad)
		}
	}
}

func TestFilesCheck(t *testing.T) {
	for _, c := range []struct {
		f    Files
		want string
	}{
		{Files{Path: "m.pt"}, ""},
		{Files{Encoder: "e.pt", Decoder: "d.pt"}, ""},
		{Files{}, "no checkpoint given"},
		{Files{Path: "m.pt", Encoder: "e.pt"}, "not both"},
		{Files{Encoder: "e.pt"}, "give both"},
		{Files{Decoder: "d.pt"}, "give both"},
	} {
		err := c.f.Check()
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
		if _, lerr := LoadModel(c.f, nil); c.want != "" && (lerr == nil || lerr.Error() != err.Error()) {
			t.Errorf("%+v: LoadModel: %v", c.f, lerr)
		}
	}
	if s := (Files{Encoder: "a/e.pt", Decoder: "b/d.pt"}).Base(); s != "e.pt + d.pt" {
		t.Errorf("Base %q", s)
	}
}
