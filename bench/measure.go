package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// measure runs the enabled engines at one configuration, greedily and with
// each beam width where the engine has beam search. The ORT engines are
// timed interleaved, one batch of each in turn, so that the load of a
// shared machine falls on all of them alike; each one's peak RSS is taken
// before, with that engine alone loaded. PyTorch runs in its own process.
func (c *Config) measure(ctx context.Context, work string, m *model, S, B, T int) ([]Result, string, error) {
	ids, lens := randomSources(B, S, m.cfg.SrcVocab, c.Seed+uint64(1000*S+B))
	p := &point{ctx: ctx, m: m, S: S, B: B, T: T, steps: c.Steps, ids: ids, lens: lens, rows: make([][]int64, B)}
	for r := range p.rows {
		p.rows[r] = ids[r*S : (r+1)*S]
	}
	key := configKey(string(m.arch), S, B, T)
	mk := func(name string, k int) Result {
		r := Result{Name: name, Arch: string(m.arch), SrcLen: S, Batch: B, Threads: T}
		if k > 1 {
			r.Beam = k
		}
		return r
	}
	c.logf("bench: %s", key)
	steps := c.Steps

	// What runs: each engine greedily, and with every beam width where it
	// has beam search.
	type variant struct {
		engine string
		k      int
	}
	var variants []variant
	for _, e := range Engines {
		if !c.enabled(e) {
			continue
		}
		variants = append(variants, variant{e, 1})
		if slices.Contains(beamEngines, e) {
			for _, k := range c.Beams {
				variants = append(variants, variant{e, k})
			}
		}
	}

	// Peak RSS, each ORT engine alone: set up, warm up, read, close.
	rss := map[variant]float64{}
	na := map[variant]string{}
	var ortVariants []variant
	for _, v := range variants {
		if v.engine == EnginePyTorch {
			continue
		}
		name := variantName(v.engine, v.k)
		resetPeakRSS()
		r, why, err := p.setup(v.engine, v.k)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", name, key, err)
		}
		if why != "" {
			na[v] = why
			continue
		}
		for i := 0; i < max(1, c.Warmup); i++ {
			if _, _, err := r.run(); err != nil {
				r.close()
				return nil, "", fmt.Errorf("bench: %s at %s: %w", name, key, err)
			}
		}
		rss[v] = peakRSSMB()
		r.close()
		ortVariants = append(ortVariants, v)
	}

	// Timing, interleaved.
	var runners []*runner
	defer func() {
		for _, r := range runners {
			r.close()
		}
	}()
	for _, v := range ortVariants {
		r, _, err := p.setup(v.engine, v.k)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", variantName(v.engine, v.k), key, err)
		}
		runners = append(runners, r)
	}
	encs := make([][]float64, len(runners))
	decs := make([][]float64, len(runners))
	for i := 0; i < c.Warmup; i++ {
		for _, r := range runners {
			if _, _, err := r.run(); err != nil {
				return nil, "", fmt.Errorf("bench: %s at %s: %w", variantName(r.name, r.beam), key, err)
			}
		}
	}
	start := time.Now()
	for n := 0; n < c.MaxReps && (n < c.MinReps || time.Since(start) < c.MinTime*time.Duration(max(1, len(runners)))); n++ {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		for i, r := range runners {
			e, d, err := r.run()
			if err != nil {
				return nil, "", fmt.Errorf("bench: %s at %s: %w", variantName(r.name, r.beam), key, err)
			}
			encs[i] = append(encs[i], float64(e)/1e6)
			decs[i] = append(decs[i], float64(d)/1e6)
		}
	}
	var encMs float64
	for i, r := range runners {
		if r.name == EngineLean && r.beam <= 1 {
			encMs = quantile(encs[i], 0.5)
		}
	}
	byVariant := map[variant]Result{}
	for i, r := range runners {
		res := mk(r.name, r.beam)
		if r.withEncoder {
			for j := range decs[i] {
				decs[i][j] -= encMs
				encs[i][j] = encMs
			}
		}
		res.fill(encs[i], decs[i], steps)
		v := variant{r.name, max(r.beam, 1)}
		res.PeakRSSMB = rss[v]
		res.tokens = r.tokens
		res.Note = r.note
		byVariant[v] = res
	}

	var torchVer string
	for _, v := range variants {
		if v.engine != EnginePyTorch {
			continue
		}
		res, ver, err := c.pytorch(work, m, S, B, T, ids, lens, v.k)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", variantName(v.engine, v.k), key, err)
		}
		res.Arch, res.SrcLen, res.Batch, res.Threads = string(m.arch), S, B, T
		byVariant[v], torchVer = res, ver
	}
	var out []Result
	for _, v := range variants {
		if why, ok := na[v]; ok {
			r := mk(v.engine, v.k)
			r.NA = why
			out = append(out, r)
		} else if r, ok := byVariant[v]; ok {
			out = append(out, r)
		}
	}
	annotate(out)
	for _, r := range out {
		c.logf("bench:   %-25s %s", r.engineName(), r.brief())
	}
	return out, torchVer, nil
}
