package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/attnx/attnx/quant"
)

// engineRank is e's position in Engines.
func engineRank(e string) int {
	for i, x := range Engines {
		if x == e {
			return i
		}
	}
	return len(Engines)
}

// job is one engine at one weights precision and beam width (beam 1:
// greedy decoding).
type job struct {
	engine  string
	weights quant.Precision
	beam    int
}

func (j job) String() string {
	s := j.engine
	if perWeights(j.engine) {
		s += " (" + string(j.weights) + ")"
	}
	if j.beam > 1 {
		s += " beam " + strconv.Itoa(j.beam)
	}
	return s
}

// jobs lists the enabled engines, each attnx engine once per weights
// precision, each engine with beam search once more per beam width, in the
// order they print.
func (c *Config) jobs() []job {
	var out []job
	for _, e := range Engines {
		if !c.enabled(e) {
			continue
		}
		ws := []quant.Precision{quant.PrecisionFP32}
		if perWeights(e) {
			ws = c.weights()
		}
		for _, w := range ws {
			out = append(out, job{e, w, 1})
			if slices.Contains(beamEngines, e) {
				for _, k := range c.Beams {
					out = append(out, job{e, w, k})
				}
			}
		}
	}
	return out
}

// pyTorchInfo is what bench.py says of the PyTorch it ran.
type pyTorchInfo struct {
	Version string
	BLAS    *BLASInfo
}

// measure runs the enabled engines at one configuration, greedily and with
// each beam width where the engine has beam search. The ORT engines (each
// attnx engine once per weights precision) are timed interleaved, one
// batch of each in turn, so that the load of a shared machine falls on all
// of them alike; each one's peak RSS is taken before, with that engine
// alone loaded. PyTorch runs in its own process.
func (c *Config) measure(ctx context.Context, work string, m *model, S, B, T int) ([]Result, pyTorchInfo, error) {
	ids, lens := randomSources(B, S, m.cfg.SrcVocab, c.Seed+uint64(1000*S+B))
	p := &point{ctx: ctx, m: m, S: S, B: B, T: T, steps: c.Steps, ids: ids, lens: lens, rows: make([][]int64, B)}
	for r := range p.rows {
		p.rows[r] = ids[r*S : (r+1)*S]
	}
	key := configKey(string(m.arch), S, B, T)
	mk := func(j job) Result {
		r := Result{Name: j.engine, Weights: string(j.weights), Arch: string(m.arch), SrcLen: S, Batch: B, Threads: T}
		if j.beam > 1 {
			r.Beam = j.beam
		}
		e := j.engine
		if nativeOf[e] != "" {
			e = nativeOf[e]
		}
		switch {
		case e == EngineLean || e == EngineSteps:
			r.ModelBytes = m.bytes[j.weights].steps
		case e == EngineLoop && j.beam > 1:
			r.ModelBytes = m.bytes[j.weights].beam
		case e == EngineLoop:
			r.ModelBytes = m.bytes[j.weights].loop
		}
		return r
	}
	var none pyTorchInfo
	c.logf("bench: %s", key)
	steps := c.Steps
	jobs := c.jobs()

	// Peak RSS, each ORT engine alone: set up, warm up, read, close.
	rss := map[job]float64{}
	na := map[job]string{}
	var ortJobs []job
	for _, j := range jobs {
		if j.engine == EnginePyTorch {
			continue
		}
		resetPeakRSS()
		r, why, err := p.setup(j)
		if err != nil {
			return nil, none, fmt.Errorf("bench: %s at %s: %w", j, key, err)
		}
		if why != "" {
			na[j] = why
			continue
		}
		for i := 0; i < max(1, c.Warmup); i++ {
			if _, _, err := r.run(); err != nil {
				r.close()
				return nil, none, fmt.Errorf("bench: %s at %s: %w", j, key, err)
			}
		}
		rss[j] = peakRSSMB()
		r.close()
		ortJobs = append(ortJobs, j)
	}

	// Timing, interleaved.
	var runners []*runner
	defer func() {
		for _, r := range runners {
			r.close()
		}
	}()
	for _, j := range ortJobs {
		r, _, err := p.setup(j)
		if err != nil {
			return nil, none, fmt.Errorf("bench: %s at %s: %w", j, key, err)
		}
		runners = append(runners, r)
	}
	encs := make([][]float64, len(runners))
	decs := make([][]float64, len(runners))
	for i := 0; i < c.Warmup; i++ {
		for _, r := range runners {
			if _, _, err := r.run(); err != nil {
				return nil, none, fmt.Errorf("bench: %s at %s: %w", r.job(), key, err)
			}
		}
	}
	start := time.Now()
	for n := 0; n < c.MaxReps && (n < c.MinReps || time.Since(start) < c.MinTime*time.Duration(max(1, len(runners)))); n++ {
		if err := ctx.Err(); err != nil {
			return nil, none, err
		}
		for i, r := range runners {
			e, d, err := r.run()
			if err != nil {
				return nil, none, fmt.Errorf("bench: %s at %s: %w", r.job(), key, err)
			}
			encs[i] = append(encs[i], float64(e)/1e6)
			decs[i] = append(decs[i], float64(d)/1e6)
		}
	}
	// The encoder time translate's engines include is the greedy lean
	// loop's at the same precision: its fastest run, the same work with
	// the least interference (a median taken while another process ran
	// could exceed a whole call of a small model and leave a negative
	// decode).
	encMs := map[quant.Precision]float64{}
	for i, r := range runners {
		if r.name == EngineLean && r.beam <= 1 {
			encMs[r.weights] = slices.Min(encs[i])
		}
	}
	byJob := map[job]Result{}
	for i, r := range runners {
		j := r.job()
		res := mk(j)
		if r.withEncoder {
			for k := range decs[i] {
				decs[i][k] -= encMs[r.weights]
				encs[i][k] = encMs[r.weights]
			}
		}
		res.fill(encs[i], decs[i], steps)
		res.PeakRSSMB = rss[j]
		res.tokens = r.tokens
		res.Note = r.note
		byJob[j] = res
	}

	var py pyTorchInfo
	for _, j := range jobs {
		if j.engine != EnginePyTorch {
			continue
		}
		res, info, err := c.pytorch(work, m, S, B, T, ids, lens, j.beam)
		if err != nil {
			return nil, none, fmt.Errorf("bench: %s at %s: %w", j, key, err)
		}
		res.Arch, res.SrcLen, res.Batch, res.Threads = string(m.arch), S, B, T
		byJob[j], py = res, info
	}
	var out []Result
	for _, j := range jobs {
		if why, ok := na[j]; ok {
			r := mk(j)
			r.NA = why
			out = append(out, r)
		} else if r, ok := byJob[j]; ok {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return engineRank(out[a].Name) < engineRank(out[b].Name) })
	annotate(out)
	for _, r := range out {
		c.logf("bench:   %-25s %-5s %s", r.engineName(), r.Weights, r.brief())
	}
	return out, py, nil
}
