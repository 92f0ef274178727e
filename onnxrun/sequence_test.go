//go:build cgo

package onnxrun

import (
	"reflect"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
)

func TestSequenceIOInfo(t *testing.T) {
	s := openModel(t, "sequence", Options{Backend: BackendORT})
	var got []string
	for _, io := range append(s.Inputs(), s.Outputs()...) {
		got = append(got, io.Name+" "+io.Kind+" "+io.String())
	}
	want := []string{
		"xs sequence seq(float32)", "y tensor float32[n]",
		"ys sequence seq(float32)", "count tensor int64[]", "first tensor float32[m]", "empty sequence seq(float32)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("IO = %q, want %q", got, want)
	}
}

func TestRunDataSequence(t *testing.T) {
	s := openModel(t, "sequence", Options{Backend: BackendORT})
	xs := NewSequence(
		NewFloat32([]int64{2}, []float32{1, 2}),
		NewFloat32([]int64{1, 3}, []float32{3, 4, 5}),
	)
	y := NewFloat32([]int64{1}, []float32{9})
	out, err := s.RunData(map[string]Datum{"xs": xs, "y": y})
	if err != nil {
		t.Fatalf("RunData: %v", err)
	}
	ys, ok := out["ys"].(*Sequence)
	if !ok {
		t.Fatalf("ys = %T, want *Sequence", out["ys"])
	}
	wantYs := []*Tensor{xs.Tensors[0], xs.Tensors[1], y}
	if ys.Len() != len(wantYs) {
		t.Fatalf("ys = %s, want 3 tensors", ys)
	}
	for i, w := range wantYs {
		if !reflect.DeepEqual(ys.Tensors[i].Shape, w.Shape) || !reflect.DeepEqual(ys.Tensors[i].Data, w.Data) {
			t.Errorf("ys[%d] = %v %v, want %v %v", i, ys.Tensors[i].Shape, ys.Tensors[i].Data, w.Shape, w.Data)
		}
	}
	if got := ys.String(); got != "seq(float32)[float32[2],float32[1,3],float32[1]]" {
		t.Errorf("ys.String() = %q", got)
	}
	count := out["count"].(*Tensor)
	if !reflect.DeepEqual(count.Data, []int64{2}) || len(count.Shape) != 0 {
		t.Errorf("count = %v %v, want scalar 2", count.Shape, count.Data)
	}
	first := out["first"].(*Tensor)
	if !reflect.DeepEqual(first.Data, []float32{1, 2}) {
		t.Errorf("first = %v, want [1 2]", first.Data)
	}
	empty := out["empty"].(*Sequence)
	if empty.Len() != 0 || empty.DType() != Undefined || empty.String() != "seq[]" {
		t.Errorf("empty = %s (len %d), want an empty sequence", empty, empty.Len())
	}
}

func TestSequenceInputErrors(t *testing.T) {
	s := openModel(t, "sequence", Options{Backend: BackendORT})
	y := NewFloat32([]int64{1}, []float32{9})
	f := NewFloat32([]int64{2}, []float32{1, 2})
	tests := []struct {
		name string
		xs   Datum
		want string
	}{
		{"tensor for a sequence", f, `input "xs": got float32[2], model expects a seq(float32): pass a *Sequence`},
		{"empty", NewSequence(), `input "xs": empty sequence, model expects seq(float32): onnxruntime_go v1.27.0 cannot create an empty sequence`},
		{"element type", NewSequence(f, NewInt64([]int64{1}, []int64{1})), `input "xs": element 1: got int64[1], model expects seq(float32): element type int64, want float32`},
		{"nil element", NewSequence(f, nil), `input "xs": element 1 is a nil tensor`},
		{"bad length", NewSequence(NewFloat32([]int64{3}, []float32{1})), `element 0: got float32[3], model expects seq(float32): shape holds 3 elements but data has 1`},
		{"nil sequence", (*Sequence)(nil), `input "xs": nil sequence`},
		{"missing", nil, `input "xs": got nil, model expects a seq(float32)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.RunData(map[string]Datum{"xs": tc.xs, "y": y})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// A sequence where a tensor is expected.
	_, err := s.RunData(map[string]Datum{"xs": NewSequence(f), "y": NewSequence(f)})
	if want := `input "y": got seq(float32)[float32[2]], model expects float32[n]`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
	// Run cannot return sequences.
	_, err = s.Run(map[string]*Tensor{"y": y})
	if want := `output "ys" is a seq(float32), which Run cannot return; use RunData`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Run: err = %v, want it to contain %q", err, want)
	}
}

// TestRunDataReleasesSequenceElements counts the ORT values RunData
// releases: its inputs, its outputs and the tensor values it made for the
// elements of an input sequence (those used to leak, one OrtValue per
// element per call).
func TestRunDataReleasesSequenceElements(t *testing.T) {
	s := openModel(t, "sequence", Options{Backend: BackendORT})
	destroyed := 0
	destroyHook = func(ort.Value) { destroyed++ }
	t.Cleanup(func() { destroyHook = nil })
	for _, n := range []int{1, 2, 5} {
		xs := NewSequence()
		for i := range n {
			xs.Tensors = append(xs.Tensors, NewFloat32([]int64{1}, []float32{float32(i)}))
		}
		destroyed = 0
		if _, err := s.RunData(map[string]Datum{"xs": xs, "y": NewFloat32([]int64{1}, []float32{9})}); err != nil {
			t.Fatalf("RunData: %v", err)
		}
		want := len(s.Inputs()) + len(s.Outputs()) + n
		if destroyed != want {
			t.Errorf("sequence of %d: RunData released %d ORT values, want %d (%d inputs, %d outputs, %d sequence elements)",
				n, destroyed, want, len(s.Inputs()), len(s.Outputs()), n)
		}
	}
}
