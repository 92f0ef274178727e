package checkpoint

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
)

// testLayouts are the layouts of every architecture attnx knows, as
// package attention describes them.
func testLayouts() []Layout { return attention.Layouts() }

func renamed(ks []KeyShape, r ...Rename) []KeyShape {
	out := make([]KeyShape, len(ks))
	copy(out, ks)
	for _, rn := range r {
		for i := range out {
			if rn.matches(out[i].Key) {
				out[i].Key = rn.apply(out[i].Key)
			}
		}
	}
	return out
}

func TestDiagnose(t *testing.T) {
	load := func(f Files) []KeyShape {
		sd, err := LoadModel(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sd.KeyShapes()
	}
	wrongShape := renamed(s2sKeys)
	wrongShape[15].Shape = []int64{6, 3}
	missingExtra := append(append([]KeyShape{}, s2sKeys[:16]...), KeyShape{"decoder.bias_extra", []int64{6}})
	cases := []struct {
		name      string
		found     []KeyShape
		layout    string
		close     bool
		fit       int
		misnamed  int
		maps      []Rename
		fixes     bool
		missing   []string
		extra     []string
		wrong     []string
		ambiguous int
	}{
		{name: "exact", found: s2sKeys, layout: "bahdanau/lstm", close: true, fit: 17},
		{name: "article attention as W1/W2/V", found: load(Files{Path: "testdata/s2s_renamed.pt"}), layout: "bahdanau/lstm", close: true, fit: 14, misnamed: 3,
			maps:  []Rename{{"decoder.attention.W1", "decoder.fc_hidden"}, {"decoder.attention.W2", "decoder.fc_encoder"}, {"decoder.attention.V", "decoder"}},
			fixes: true, ambiguous: 1},
		{name: "tutorial attention as W1/W2/V", found: load(Files{Encoder: "testdata/tut_encoder.pt", Decoder: "testdata/tut_decoder_w1w2v.pt"}),
			layout: "tutorial-bahdanau/gru", close: true, fit: 12, misnamed: 6,
			maps:  []Rename{{"decoder.attention.W1", "decoder.attention.Wa"}, {"decoder.attention.W2", "decoder.attention.Ua"}, {"decoder.attention.V", "decoder.attention.Va"}},
			fixes: true, ambiguous: 1},
		{name: "wrapper with other names", found: renamed(s2sKeys, Rename{"encoder.", "net.enc."}, Rename{"decoder.", "net.dec."}), layout: "bahdanau/lstm", close: true, fit: 0, misnamed: 17,
			maps: []Rename{{"net.enc", "encoder"}, {"net.dec", "decoder"}}, fixes: true},
		{name: "cell renamed", found: renamed(s2sKeys, Rename{"encoder.lstm", "encoder.rnn"}, Rename{"decoder.lstm", "decoder.rnn"}), layout: "bahdanau/lstm", close: true, fit: 9, misnamed: 8,
			maps: []Rename{{"encoder.rnn", "encoder.lstm"}, {"decoder.rnn", "decoder.lstm"}}, fixes: true},
		{name: "wrong shape", found: wrongShape, layout: "bahdanau/lstm", close: true, fit: 16,
			wrong: []string{"decoder.classifier.weight [6 3] want [Vt H] = [6 2]"}},
		{name: "missing and extra", found: missingExtra, layout: "bahdanau/lstm", close: true, fit: 16,
			missing: []string{"decoder.classifier.bias [Vt]"}, extra: []string{"decoder.bias_extra"}},
		{name: "unrelated model", found: load(Files{Path: "testdata/tiny_resnet.pt"}), layout: "luong-dot/lstm", close: false, fit: 0, misnamed: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Diagnose(c.found, testLayouts())
			if err != nil {
				t.Fatal(err)
			}
			var missing, extra, wrong []string
			for _, m := range d.Missing {
				missing = append(missing, m.String())
			}
			for _, e := range d.Extra {
				extra = append(extra, e.Key)
			}
			for _, w := range d.WrongShapes {
				wrong = append(wrong, fmt.Sprintf("%s %v want [%s] = %s", w.Found.Key, w.Found.Shape, strings.Join(w.Want.Shape, " "), w.Resolved))
			}
			got := []any{d.Layout, d.Close, d.Fit, len(d.Misnamed), d.Fixes, len(d.Ambiguous)}
			want := []any{c.layout, c.close, c.fit, c.misnamed, c.fixes, c.ambiguous}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("layout, close, fit, misnamed, fixes, ambiguous = %v, want %v\n%s", got, want, d)
			}
			if c.close && !reflect.DeepEqual(d.Maps, c.maps) {
				t.Errorf("maps %v, want %v", d.Maps, c.maps)
			}
			if !c.close { // all of the layout is missing, nearly all the keys extra
				missing, extra = nil, nil
			}
			if !reflect.DeepEqual(missing, c.missing) || !reflect.DeepEqual(extra, c.extra) || !reflect.DeepEqual(wrong, c.wrong) {
				t.Errorf("missing %q extra %q wrong %q, want %q %q %q", missing, extra, wrong, c.missing, c.extra, c.wrong)
			}
			if !d.Fixes {
				return
			}
			// The maps really fix it: applied with Rename, nothing is left.
			sd := &StateDict{}
			for _, k := range c.found {
				sd.Keys = append(sd.Keys, k.Key)
			}
			sd.Tensors = fakeTensors(c.found)
			if err := sd.Rename(d.Maps); err != nil {
				t.Fatal(err)
			}
			after, err := Diagnose(sd.KeyShapes(), testLayouts())
			if err != nil {
				t.Fatal(err)
			}
			if after.Layout != c.layout || after.Fit != len(c.found) || len(after.Misnamed)+len(after.Missing)+len(after.Extra)+len(after.WrongShapes) != 0 {
				t.Errorf("after the maps:\n%s", after)
			}
		})
	}
}

// fakeTensors gives each key a zero float32 tensor of its shape.
func fakeTensors(ks []KeyShape) map[string]*builder.Tensor {
	out := map[string]*builder.Tensor{}
	for _, k := range ks {
		out[k.Key] = &builder.Tensor{Name: k.Key, DType: builder.Float, Dims: k.Shape, Raw: make([]byte, 4*builder.NumElements(k.Shape))}
	}
	return out
}

// The two messages issue 13 asks to see: the tutorial's model with its
// attention's Wa/Ua/Va called W1/W2/V, and an unrelated model's state dict.
func TestDiagnosisMessages(t *testing.T) {
	cases := []struct {
		files Files
		want  string
	}{
		{Files{Encoder: "testdata/tut_encoder.pt", Decoder: "testdata/tut_decoder_w1w2v.pt"}, `the checkpoint has 18 keys:
  encoder.embedding.weight [5 3]
  encoder.gru.weight_ih_l0 [9 3]
  encoder.gru.weight_hh_l0 [9 3]
  encoder.gru.bias_ih_l0 [9]
  encoder.gru.bias_hh_l0 [9]
  decoder.embedding.weight [6 3]
  decoder.attention.W1.weight [3 3]
  decoder.attention.W1.bias [3]
  decoder.attention.W2.weight [3 3]
  decoder.attention.W2.bias [3]
  decoder.attention.V.weight [1 3]
  decoder.attention.V.bias [1]
  decoder.gru.weight_ih_l0 [9 6]
  decoder.gru.weight_hh_l0 [9 3]
  decoder.gru.bias_ih_l0 [9]
  decoder.gru.bias_hh_l0 [9]
  decoder.out.weight [6 3]
  decoder.out.bias [6]
closest known layout: tutorial-bahdanau/gru (12 keys fit as named, 6 under other names)
  misnamed: decoder.attention.W1.weight [3 3] would be decoder.attention.Wa.weight
  misnamed: decoder.attention.W1.bias [3] would be decoder.attention.Wa.bias
  misnamed: decoder.attention.W2.weight [3 3] would be decoder.attention.Ua.weight
  misnamed: decoder.attention.W2.bias [3] would be decoder.attention.Ua.bias
  misnamed: decoder.attention.V.weight [1 3] would be decoder.attention.Va.weight
  misnamed: decoder.attention.V.bias [1] would be decoder.attention.Va.bias
renaming fixes it: --map decoder.attention.W1=decoder.attention.Wa --map decoder.attention.W2=decoder.attention.Ua --map decoder.attention.V=decoder.attention.Va
  check: decoder.attention.W1 and decoder.attention.W2 paired with decoder.attention.Wa and decoder.attention.Ua by name and order only: they have the same keys and shapes; if your model uses them the other way round, swap the --map targets`},
		{Files{Path: "testdata/tiny_resnet.pt"}, `the checkpoint has 20 keys:
  conv1.weight [4 3 3 3]
  bn1.weight [4]
  bn1.bias [4]
  bn1.running_mean [4]
  bn1.running_var [4]
  bn1.num_batches_tracked []
  layer1.0.conv1.weight [4 4 3 3]
  layer1.0.bn1.weight [4]
  layer1.0.bn1.bias [4]
  layer1.0.bn1.running_mean [4]
  layer1.0.bn1.running_var [4]
  layer1.0.bn1.num_batches_tracked []
  layer1.0.conv2.weight [4 4 3 3]
  layer1.0.bn2.weight [4]
  layer1.0.bn2.bias [4]
  layer1.0.bn2.running_mean [4]
  layer1.0.bn2.running_var [4]
  layer1.0.bn2.num_batches_tracked []
  fc.weight [3 4]
  fc.bias [3]
no known layout is close (bahdanau/lstm, bahdanau/gru, luong-dot/lstm, luong-dot/gru, luong-general/lstm, luong-general/gru, luong-concat/lstm, luong-concat/gru, tutorial-location/lstm, tutorial-location/gru, tutorial-bahdanau/lstm, tutorial-bahdanau/gru, bentrevett/2020-names, bentrevett/2023-names, bentrevett/2018-names, bentrevett/2019-names): this looks like another kind of model.
The nearest, luong-dot/lstm, would use 2 of these keys (2 of them under other names) and lacks 10 of its own: encoder.embedding.weight [Vs E], encoder.lstm.weight_ih_l0 [4H E], encoder.lstm.weight_hh_l0 [4H H], encoder.lstm.bias_ih_l0 [4H], encoder.lstm.bias_hh_l0 [4H], decoder.embedding.weight [Vt E] and 4 more`},
	}
	for _, c := range cases {
		sd, err := LoadModel(c.files, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Diagnose(sd.KeyShapes(), testLayouts())
		if err != nil {
			t.Fatal(err)
		}
		if got := d.String(); got != c.want {
			t.Errorf("%s: message\n%s\nwant\n%s", c.files, got, c.want)
		}
	}
}
