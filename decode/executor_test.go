package decode_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/attnx/attnx/onnxrun"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/bench"
	"github.com/attnx/attnx/internal/fixtures"
)

const sos, eos = 1, 2

// testPairs are the models the executor tests run on: attnx's LSTM graphs
// (hidden and cell) of two architectures and layer counts, and a GRU
// decoder (hidden only).
func testPairs(t *testing.T) []*pair {
	return []*pair{
		lstmPair(t, attention.Bahdanau, 8, 2, 13, 11, 1),
		lstmPair(t, attention.LuongGeneral, 6, 1, 13, 11, 2),
		gruPair(t, 7, 2, 13, 11, 3),
	}
}

func greedies(limits []int, keepAttention bool) ([]*decode.Greedy, []decode.Search) {
	gs := make([]*decode.Greedy, len(limits))
	ss := make([]decode.Search, len(limits))
	for i, n := range limits {
		gs[i] = &decode.Greedy{SOS: sos, EOS: eos, MaxLen: n, KeepAttention: keepAttention}
		ss[i] = gs[i]
	}
	return gs, ss
}

// checkLone compares a finished Greedy with the row decoded alone.
func checkLone(t *testing.T, p *pair, row int, src []int64, g *decode.Greedy) {
	t.Helper()
	want, wantAtt := p.loneGreedy(t, src, sos, eos, g.MaxLen)
	if !slices.Equal(g.Tokens(), want) {
		t.Errorf("%s row %d (source %v, max %d): tokens %v, alone %v", p.name, row, src, g.MaxLen, g.Tokens(), want)
		return
	}
	got := g.Attention()
	if len(got) != len(wantAtt) {
		t.Errorf("%s row %d: %d attention rows, want %d", p.name, row, len(got), len(wantAtt))
		return
	}
	for i := range got {
		if !within(got[i], wantAtt[i]) {
			t.Errorf("%s row %d step %d: attention %v, alone %v", p.name, row, i, got[i], wantAtt[i])
		}
	}
}

// TestDecodeMatchesLoneRows decodes ragged batches with rows of different
// length limits, so rows leave the batch at different steps, and checks
// each row against the same row decoded alone by a plain Session.Run loop.
func TestDecodeMatchesLoneRows(t *testing.T) {
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 7))
			rows := randomRows(r, 9, p.vs, 7)
			limits := make([]int, len(rows))
			for i := range limits {
				limits[i] = []int{0, 1, 3, 12, 5}[i%5]
			}
			ex, err := p.m.NewExecutor(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			for round := 0; round < 2; round++ { // the second reuses the grown executor
				gs, ss := greedies(limits, true)
				if err := decode.Decode(context.Background(), ex, rows, ss); err != nil {
					t.Fatal(err)
				}
				for i, g := range gs {
					checkLone(t, p, i, rows[i], g)
				}
			}
			if ex.Len() != 0 {
				t.Errorf("%d slots left after Decode", ex.Len())
			}
		})
	}
}

// TestJoinAndRemoveBetweenSteps adds rows to a running batch (one with a
// longer source than the batch's, which re-lays the batch out, and a
// shorter one), removes one, and checks every remaining row against its
// lone decode: what a continuous-batching scheduler does.
func TestJoinAndRemoveBetweenSteps(t *testing.T) {
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, 9))
			first := randomRows(r, 3, p.vs, 3)
			long := randomRows(r, 2, p.vs, 4)
			long[1] = append(long[1], 5, 6, 7, 8) // longer than any of first
			short := [][]int64{{4}}
			ex, err := p.m.NewExecutor(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			b := decode.NewBatch(ex)
			g1, s1 := greedies([]int{9, 2, 10}, true)
			g2, s2 := greedies([]int{6, 8}, true)
			g3, s3 := greedies([]int{7}, true)
			step := func(n int) {
				for i := 0; i < n; i++ {
					if _, err := b.Step(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := b.Add(first, s1); err != nil {
				t.Fatal(err)
			}
			step(2)
			srcBefore := ex.SrcLen()
			if err := b.Add(long, s2); err != nil {
				t.Fatal(err)
			}
			if ex.SrcLen() <= srcBefore {
				t.Fatalf("src_len %d -> %d: the longer source did not widen the batch", srcBefore, ex.SrcLen())
			}
			step(1)
			if !b.Remove(s1[0]) {
				t.Fatal("Remove of a live row returned false")
			}
			if b.Remove(s1[0]) {
				t.Error("Remove of a removed row returned true")
			}
			if err := b.Add(short, s3); err != nil {
				t.Fatal(err)
			}
			if err := b.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			for i, g := range g1[1:] {
				checkLone(t, p, i+1, first[i+1], g)
			}
			for i, g := range g2 {
				checkLone(t, p, 3+i, long[i], g)
			}
			checkLone(t, p, 5, short[0], g3[0])
		})
	}
}

// tracker is a beam-shaped Search: it keeps up to width slots, expands from
// one, reorders and duplicates them through parents and shrinks, and logs
// each slot's input history with the log_probs the executor gave it, for
// checking against a lone run of that history.
type tracker struct {
	width, steps int
	step         int
	hist         [][]int64
	log          []trackRecord
	err          error
}

type trackRecord struct {
	inputs   []int64
	logProbs []float32
}

func (k *tracker) Width() int   { return k.width }
func (k *tracker) First() int64 { return sos }

func (k *tracker) Advance(s decode.Slots, inputs []int64, parents []int) int {
	if k.hist == nil {
		k.hist = [][]int64{{sos}}
	}
	if s.Len() != len(k.hist) && k.err == nil {
		k.err = fmt.Errorf("step %d: %d slots, expected %d", k.step, s.Len(), len(k.hist))
		return 0
	}
	for i := range k.hist {
		k.log = append(k.log, trackRecord{slices.Clone(k.hist[i]), slices.Clone(s.LogProbs(i))})
	}
	k.step++
	if k.step >= k.steps {
		return 0
	}
	var ps []int
	switch n := s.Len(); {
	case n == 1:
		ps = slices.Repeat([]int{0}, k.width)
	case k.step%3 == 0:
		ps = []int{n - 1, n - 1} // shrink to two copies of the last
	case k.step%2 == 1:
		ps = []int{n - 1, 0, 0}[:min(k.width, 3)]
	default:
		ps = []int{1, 0, 1}[:min(k.width, 3)]
	}
	next := make([][]int64, len(ps))
	for j, p := range ps {
		tok := (decode.Argmax(s.LogProbs(p)) + int64(j)) % int64(s.Vocab())
		inputs[j], parents[j] = tok, p
		next[j] = append(slices.Clone(k.hist[p]), tok)
	}
	k.hist = next
	return len(ps)
}

// TestBeamShapedReorder runs rows whose slots expand, reorder, duplicate
// and shrink between steps, as beam search's do, beside a greedy row, and
// checks the log_probs of every slot at every step against a lone run of
// that slot's input history: the states and encoder outputs follow the
// parents exactly.
func TestBeamShapedReorder(t *testing.T) {
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 5))
			rows := randomRows(r, 4, p.vs, 6)
			ks := []*tracker{{width: 3, steps: 6}, {width: 3, steps: 4}, {width: 3, steps: 7}}
			g := &decode.Greedy{SOS: sos, EOS: -1, MaxLen: 5}
			ss := []decode.Search{ks[0], g, ks[1], ks[2]}
			ex, err := p.m.NewExecutor(1, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			if err := decode.Decode(context.Background(), ex, rows, ss); err != nil {
				t.Fatal(err)
			}
			checked := 0
			for i, k := range []*tracker{ks[0], nil, ks[1], ks[2]} {
				if k == nil {
					continue
				}
				if k.err != nil {
					t.Errorf("row %d: %v", i, k.err)
				}
				for _, rec := range k.log {
					want := p.forced(t, rows[i], rec.inputs)
					if !within(rec.logProbs, want) {
						t.Errorf("row %d, inputs %v: log_probs differ from the lone run", i, rec.inputs)
					}
					checked++
				}
			}
			want, _ := p.loneGreedy(t, rows[1], sos, -1, 5)
			if !slices.Equal(g.Tokens(), want) {
				t.Errorf("greedy row beside the beams: %v, alone %v", g.Tokens(), want)
			}
			t.Logf("%d slot-steps checked", checked)
		})
	}
}

// TestDecodeMatchesPyTorchFixtures decodes every PyTorch fixture with the
// core: the tokens are PyTorch's greedy tokens.
func TestDecodeMatchesPyTorchFixtures(t *testing.T) {
	needORT(t)
	for _, f := range fixtures.List(t) {
		t.Run(f.Name, func(t *testing.T) {
			w := fixtures.Weights(t, f.Path(t, "checkpoint.pt"))
			enc, err := attention.Encoder(w, attention.BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dec, err := attention.Decoder(w, attention.BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p := open(t, f.Name, enc, dec, w.Config.SrcVocab, w.Config.TgtVocab)
			d := fixtures.Load(t, f.Path(t, ""))
			src, want := d.Rows(t), d.GreedyTokens(t)
			searches := make([]decode.Search, len(src))
			gs := make([]*decode.Greedy, len(src))
			for i := range src {
				gs[i] = &decode.Greedy{SOS: f.SOS, EOS: f.EOS, MaxLen: f.MaxLen}
				searches[i] = gs[i]
			}
			ex, err := p.m.NewExecutor(len(src), len(src)*8)
			if err != nil {
				t.Fatal(err)
			}
			defer ex.Close()
			if err := decode.Decode(context.Background(), ex, src, searches); err != nil {
				t.Fatal(err)
			}
			for i, g := range gs {
				if !reflect.DeepEqual(g.Tokens(), want[i]) {
					t.Errorf("row %d: %v, PyTorch %v", i, g.Tokens(), want[i])
				}
			}
		})
	}
}

// TestStepDoesNotAllocate: once warmed up, a whole decode (encoding, steps
// with rows leaving, a second group of rows joining a running batch with a
// longer source) allocates nothing on the Go heap.
func TestStepDoesNotAllocate(t *testing.T) {
	if testBackend != onnxrun.BackendORT {
		t.Skip("zero allocations per step is ONNX Runtime's IoBinding; the native backend makes its results' tensor headers and shape slices per step (its arena reuses the float32 data)")
	}
	for _, p := range testPairs(t) {
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 3))
			rows := randomRows(r, 6, p.vs, 5)
			later := [][]int64{{3, 4, 5, 6, 7, 8, 9}, {5}}
			gs, ss := greedies([]int{3, 9, 5, 12, 1, 7}, false)
			gl, sl := greedies([]int{4, 6}, false)
			var resets []func()
			for _, g := range append(gs, gl...) {
				resets = append(resets, g.Reset)
			}
			checkNoAllocs(t, p, rows, ss, later, sl, resets)
		})
	}
}

// checkNoAllocs decodes rows with searches, later ones joining after the
// first step, twice to warm up, then checks that a whole decode (the
// searches reset) allocates nothing.
func checkNoAllocs(t *testing.T, p *pair, rows [][]int64, searches []decode.Search, later [][]int64, laterSearches []decode.Search, resets []func()) {
	t.Helper()
	ex, err := p.m.NewExecutor(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	b := decode.NewBatch(ex)
	ctx := context.Background()
	run := func() {
		b.Reset()
		for _, f := range resets {
			f()
		}
		if err := b.Add(rows, searches); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Step(); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(later, laterSearches); err != nil {
			t.Fatal(err)
		}
		if err := b.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run()
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("%v allocations per decode once warmed up, want 0", n)
	}
}

func TestModelErrors(t *testing.T) {
	lstm := lstmPair(t, attention.LuongDot, 4, 1, 7, 9, 1)
	gru := gruPair(t, 4, 1, 7, 9, 1)
	cases := []struct {
		name string
		make func() (*decode.Model, error)
		want string
	}{
		{"swapped graphs", func() (*decode.Model, error) { return decode.NewModel(lstm.dec, lstm.enc, decode.Dims{}) }, `lack encoder input "source_ids"`},
		{"wrong H", func() (*decode.Model, error) {
			return decode.NewModel(lstm.enc, lstm.dec, decode.Dims{EncoderWidth: 5})
		}, "encoder output size at 4, but it is 5"},
		{"wrong Vt", func() (*decode.Model, error) { return decode.NewModel(lstm.enc, lstm.dec, decode.Dims{TgtVocab: 8}) }, "target vocabulary Vt at 9, but it is 8"},
		{"LSTM encoder, GRU decoder", func() (*decode.Model, error) { return decode.NewModel(lstm.enc, gru.dec, decode.Dims{}) }, `encoder output "cell" is not part of the interface`},
		{"GRU encoder, LSTM decoder", func() (*decode.Model, error) { return decode.NewModel(gru.enc, lstm.dec, decode.Dims{}) }, `decoder state "cell" has no encoder output`},
	}
	for _, c := range cases {
		_, err := c.make()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if got := lstm.m.States(); !slices.Equal(got, []string{"hidden", "cell"}) {
		t.Errorf("LSTM states %v", got)
	}
	if got := gru.m.States(); !slices.Equal(got, []string{"hidden"}) {
		t.Errorf("GRU states %v", got)
	}
}

func TestExecutorErrors(t *testing.T) {
	p := lstmPair(t, attention.LuongDot, 4, 1, 7, 9, 1)
	ex, err := p.m.NewExecutor(2, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if _, err := ex.Join([][]int64{{1}, {}}, []int64{sos, sos}, 0); err == nil || !strings.Contains(err.Error(), "source row 1 is empty") {
		t.Errorf("empty row: %v", err)
	}
	if _, err := ex.Join([][]int64{{1}, {2}, {3}}, []int64{sos, sos, sos}, 0); !errors.Is(err, decode.ErrCapacity) {
		t.Errorf("3 rows into 2 slots: %v", err)
	}
	if _, err := ex.Join([][]int64{{1, 2, 3, 4}, {2}}, []int64{sos, sos}, 0); !errors.Is(err, decode.ErrCapacity) {
		t.Errorf("2 x 4 positions into 6: %v", err)
	}
	if err := ex.Step(); err == nil {
		t.Error("Step on an empty batch succeeded")
	}
	if _, err := ex.Join([][]int64{{1, 2}, {3}}, []int64{sos, sos}, 0); err != nil {
		t.Fatal(err)
	}
	if err := ex.Next([]int{2}, []int64{5}); err == nil || !strings.Contains(err.Error(), "not a live slot") {
		t.Errorf("parent 2 of 2 slots: %v", err)
	}
	if err := ex.Next([]int{1, 0}, []int64{5, 5}); err == nil || !strings.Contains(err.Error(), "keep their order") {
		t.Errorf("rows swapped: %v", err)
	}
	if err := ex.Next([]int{0, 0, 1}, []int64{5, 5, 5}); !errors.Is(err, decode.ErrCapacity) {
		t.Errorf("3 slots in 2: %v", err)
	}
	b := decode.NewBatch(ex)
	if err := b.Add([][]int64{{1}}, []decode.Search{&decode.Greedy{MaxLen: 1}, &decode.Greedy{}}); err == nil {
		t.Error("Add with 1 source and 2 searches succeeded")
	}
	bad := &tracker{width: 0}
	if err := b.Add([][]int64{{1}}, []decode.Search{bad}); err == nil || !strings.Contains(err.Error(), "width 0") {
		t.Errorf("width 0: %v", err)
	}
}

// BenchmarkDecode decodes a batch of 12-token sources for 20 steps (EOS
// suppressed, so every row runs all of them) greedily and, at the
// realistic size, with beam search of width 4 and 8: ms per step, per
// token and per sentence, and allocs/op, which must be 0 once warmed up.
func BenchmarkDecode(b *testing.B) {
	needORT(b)
	const srcLen, steps = 12, 20
	for _, size := range []struct {
		name          string
		hidden, vocab int
		beams         []int
	}{{"tiny", 16, 64, []int{1}}, {"realistic", 256, 10000, []int{1, 4, 8}}} {
		sd, err := bench.RandomStateDict(attention.Config{Arch: attention.Bahdanau, Hidden: size.hidden, Layers: 1, SrcVocab: size.vocab, TgtVocab: size.vocab}, 1)
		if err != nil {
			b.Fatal(err)
		}
		if sd, err = bench.SuppressEOS(sd, eos); err != nil {
			b.Fatal(err)
		}
		w, _, err := attention.FromStateDict(sd, attention.Options{})
		if err != nil {
			b.Fatal(err)
		}
		enc, _ := attention.Encoder(w, attention.BuildOptions{})
		dec, _ := attention.Decoder(w, attention.BuildOptions{})
		p := open(b, size.name, enc, dec, size.vocab, size.vocab)
		for _, batch := range []int{1, 32} {
			for _, k := range size.beams {
				b.Run(fmt.Sprintf("size=%s/batch=%d/K=%d", size.name, batch, k), func(b *testing.B) {
					benchDecode(b, p, batch, k, srcLen, steps)
				})
			}
		}
	}
}

// benchDecode times decoding batch random rows greedily (k = 1) or with
// beam search of width k.
func benchDecode(b *testing.B, p *pair, batch, k, srcLen, steps int) {
	r := rand.New(rand.NewPCG(uint64(batch), 1))
	rows := make([][]int64, batch)
	for i := range rows {
		rows[i] = make([]int64, srcLen)
		for j := range rows[i] {
			rows[i][j] = int64(4 + r.IntN(p.vt-4))
		}
	}
	limits := slices.Repeat([]int{steps}, batch)
	var ss []decode.Search
	var resets []func()
	var outputs []func() int
	if k == 1 {
		gs, s := greedies(limits, false)
		for _, g := range gs {
			resets, outputs = append(resets, g.Reset), append(outputs, func() int { return len(g.Tokens()) })
		}
		ss = s
	} else {
		bs, s := beams(limits, k, 1, false)
		for _, x := range bs {
			resets, outputs = append(resets, x.Reset), append(outputs, func() int { return len(x.AppendTokens(nil, 0)) })
		}
		ss = s
	}
	ex, err := p.m.NewExecutor(batch*k, batch*k*srcLen)
	if err != nil {
		b.Fatal(err)
	}
	defer ex.Close()
	bt := decode.NewBatch(ex)
	ctx := context.Background()
	run := func() {
		bt.Reset()
		for _, f := range resets {
			f()
		}
		if err := bt.Add(rows, ss); err != nil {
			b.Fatal(err)
		}
		if err := bt.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	run()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	ms := float64(b.Elapsed().Microseconds()) / 1000 / float64(b.N*steps)
	b.ReportMetric(ms, "ms/step")
	b.ReportMetric(ms/float64(batch), "ms/token")
	b.ReportMetric(ms*float64(steps)/float64(batch), "ms/sentence")
	for _, n := range outputs {
		if got := n(); got != steps {
			b.Fatalf("a row decoded %d tokens, want %d", got, steps)
		}
	}
}

// TestRowIDsPastInt32 starts an executor's row ids just below 2^31, where
// a 32-bit id wrapped (after 2.6 days of continuous batching every step
// then failed), and joins rows in three rounds across that boundary, with
// rows leaving between steps: every row decodes as it does alone, and the
// ids keep increasing.
func TestRowIDsPastInt32(t *testing.T) {
	p := testPairs(t)[0]
	r := rand.New(rand.NewPCG(21, 21))
	ex, err := p.m.NewExecutor(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	ex.SetNextRow(1<<31 - 3)
	b := decode.NewBatch(ex)
	var all []*decode.Greedy
	var sources [][]int64
	last := decode.RowID(-1)
	for round := range 3 {
		rows := randomRows(r, 2, p.vs, 5)
		gs, ss := greedies([]int{4, 9}, true)
		if err := b.Add(rows, ss); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for j := range ex.Len() {
			if id := ex.Row(j); j > 0 && id <= ex.Row(j-1) {
				t.Fatalf("round %d: slot %d has row id %d after %d", round, j, id, ex.Row(j-1))
			}
		}
		if id := ex.Row(ex.Len() - 1); id <= last {
			t.Fatalf("round %d: newest row id %d, not above %d", round, id, last)
		} else {
			last = id
		}
		all, sources = append(all, gs...), append(sources, rows...)
		for range 3 {
			if b.Rows() == 0 {
				break
			}
			if _, err := b.Step(); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	if err := b.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if int64(last) < 1<<31 {
		t.Fatalf("the last row id is %d: the test did not pass 2^31", last)
	}
	for i, g := range all {
		checkLone(t, p, i, sources[i], g)
	}
}

// TestBindingCacheEvictsLeastRecentlyUsed: with room for two bindings,
// the shape used all the time stays cached while others come and go (A B A
// C A D A: 3 hits); a cache emptied when full made A a miss each time it
// was full.
func TestBindingCacheEvictsLeastRecentlyUsed(t *testing.T) {
	p := testPairs(t)[0]
	ex, err := p.m.NewExecutor(4, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	ex.SetMaxBindings(2)
	for i, b := range []int{1, 2, 1, 3, 1, 4, 1} {
		if err := ex.BindDecoder(b, 3); err != nil {
			t.Fatalf("lookup %d (%d slots): %v", i, b, err)
		}
	}
	if hits, misses := ex.BindingStats(); hits != 3 || misses != 4 {
		t.Errorf("%d hits, %d misses; want 3 and 4", hits, misses)
	}
}
