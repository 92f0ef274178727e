package bench

import (
	"context"
	"fmt"
	"time"
)

// measure runs the enabled engines at one configuration. The ORT engines
// are timed interleaved, one batch of each in turn, so that the load of a
// shared machine falls on all of them alike; each one's peak RSS is taken
// before, with that engine alone loaded. PyTorch runs in its own process.
func (c *Config) measure(ctx context.Context, work string, m *model, S, B, T int) ([]Result, string, error) {
	ids, lens := randomSources(B, S, m.cfg.SrcVocab, c.Seed+uint64(1000*S+B))
	p := &point{ctx: ctx, m: m, S: S, B: B, T: T, steps: c.Steps, ids: ids, lens: lens, rows: make([][]int64, B)}
	for r := range p.rows {
		p.rows[r] = ids[r*S : (r+1)*S]
	}
	key := configKey(string(m.arch), S, B, T)
	mk := func(name string) Result {
		return Result{Name: name, Arch: string(m.arch), SrcLen: S, Batch: B, Threads: T}
	}
	c.logf("bench: %s", key)
	steps := c.Steps

	// Peak RSS, each ORT engine alone: set up, warm up, read, close.
	rss := map[string]float64{}
	na := map[string]string{}
	var ortEngines []string
	for _, e := range Engines {
		if !c.enabled(e) || e == EnginePyTorch {
			continue
		}
		resetPeakRSS()
		r, why, err := p.setup(e)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", e, key, err)
		}
		if why != "" {
			na[e] = why
			continue
		}
		for i := 0; i < max(1, c.Warmup); i++ {
			if _, _, err := r.run(); err != nil {
				r.close()
				return nil, "", fmt.Errorf("bench: %s at %s: %w", e, key, err)
			}
		}
		rss[e] = peakRSSMB()
		r.close()
		ortEngines = append(ortEngines, e)
	}

	// Timing, interleaved.
	var runners []*runner
	defer func() {
		for _, r := range runners {
			r.close()
		}
	}()
	for _, e := range ortEngines {
		r, _, err := p.setup(e)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", e, key, err)
		}
		runners = append(runners, r)
	}
	encs := make([][]float64, len(runners))
	decs := make([][]float64, len(runners))
	for i := 0; i < c.Warmup; i++ {
		for _, r := range runners {
			if _, _, err := r.run(); err != nil {
				return nil, "", fmt.Errorf("bench: %s at %s: %w", r.name, key, err)
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
				return nil, "", fmt.Errorf("bench: %s at %s: %w", r.name, key, err)
			}
			encs[i] = append(encs[i], float64(e)/1e6)
			decs[i] = append(decs[i], float64(d)/1e6)
		}
	}
	var encMs float64
	for i, r := range runners {
		if r.name == EngineLean {
			encMs = quantile(encs[i], 0.5)
		}
	}
	byName := map[string]Result{}
	for i, r := range runners {
		res := mk(r.name)
		if r.withEncoder {
			for j := range decs[i] {
				decs[i][j] -= encMs
				encs[i][j] = encMs
			}
		}
		res.fill(encs[i], decs[i], steps)
		res.PeakRSSMB = rss[r.name]
		res.tokens = r.tokens
		res.Note = r.note
		byName[r.name] = res
	}

	var torchVer string
	if c.enabled(EnginePyTorch) {
		res, ver, err := c.pytorch(work, m, S, B, T, ids, lens)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", EnginePyTorch, key, err)
		}
		res.Arch, res.SrcLen, res.Batch, res.Threads = string(m.arch), S, B, T
		byName[EnginePyTorch], torchVer = res, ver
	}
	var out []Result
	for _, e := range Engines {
		if why, ok := na[e]; ok {
			r := mk(e)
			r.NA = why
			out = append(out, r)
		} else if r, ok := byName[e]; ok {
			out = append(out, r)
		}
	}
	annotate(out)
	for _, r := range out {
		c.logf("bench:   %-18s %s", r.Name, r.brief())
	}
	return out, torchVer, nil
}
