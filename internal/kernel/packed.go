package kernel

// panel is the width of a packed panel: one AVX-512 register of float32.
const panel = 16

// Packed is a constant matrix W (n x k, the weights of a product A W^T)
// laid out for the products: on CPUs with AVX-512 or AVX2, panels of 16
// rows of W interleaved along k (panel p holds, for each k, W[16p..16p+15][k]
// together), so that a step multiplies 16 outputs at once and the whole
// matrix is read in one sequential pass; without assembly W as it is, for
// GemmNT. Either way it holds one copy of W.
type Packed struct {
	N, K  int
	p     []float32 // panels, ceil(N/16) of 16*K (padded with zeros)
	plain []float32 // W itself, when not packed
}

// Pack lays out w (n x k, rows k apart) for the products. w is kept as
// is (not copied) when the path has no assembly.
func Pack(w []float32, n, k int) *Packed {
	if !useAsm || k == 0 || n == 0 {
		return &Packed{N: n, K: k, plain: w[:n*k]}
	}
	np := (n + panel - 1) / panel
	p := make([]float32, np*panel*k)
	for j := 0; j < n; j++ {
		base := (j / panel) * panel * k
		col := j % panel
		row := w[j*k : (j+1)*k]
		for kk, v := range row {
			p[base+kk*panel+col] = v
		}
	}
	return &Packed{N: n, K: k, p: p}
}

// Owns reports whether the packed matrix holds its own copy of W (so that
// the caller may drop W): true when packed into panels.
func (w *Packed) Owns() bool { return w.plain == nil }

// Unpacked returns W as n x k rows (a copy when packed).
func (w *Packed) Unpacked() []float32 {
	if w.plain != nil {
		return w.plain
	}
	out := make([]float32, w.N*w.K)
	for j := 0; j < w.N; j++ {
		base := (j / panel) * panel * w.K
		for kk := 0; kk < w.K; kk++ {
			out[j*w.K+kk] = w.p[base+kk*panel+j%panel]
		}
	}
	return out
}

// Mul computes C = A W^T: A is m x K (rows lda apart), C m x N (rows ldc
// apart). Panels are split among up to threads goroutines when the
// product is large enough to pay for them.
func (w *Packed) Mul(m int, a []float32, lda int, c []float32, ldc int, threads int) {
	if m == 0 || w.N == 0 {
		return
	}
	if w.plain != nil {
		GemmNT(m, w.N, w.K, a, lda, w.plain, w.K, c, ldc, false, threads)
		return
	}
	if w.K == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+w.N])
		}
		return
	}
	_ = a[(m-1)*lda+w.K-1]
	_ = c[(m-1)*ldc+w.N-1]
	np := (w.N + panel - 1) / panel
	if !usePanels {
		t := min(threads, np, m*w.N*w.K/minWork)
		parallel(np, t, func(p0, p1 int) { w.mulAVX2(p0, p1, m, a, lda, c, ldc) })
		return
	}
	// Two or three rows left over from the blocks of four (or all the
	// rows there are): the 4-row kernel takes them with zero rows (a row's
	// sums do not depend on the others'), from this copy shared by the
	// threads; one row alone takes the one-row kernel. Two or three rows
	// through the one-row kernel read each panel again per row: at K =
	// 1,024 they took 1.4-1.7x the time of four rows in one tile.
	var pad []float32
	if m4 := m &^ 3; m-m4 >= 2 && np >= 3 {
		pad = make([]float32, 4*w.K)
		for r := 0; r < m-m4; r++ {
			copy(pad[r*w.K:(r+1)*w.K], a[(m4+r)*lda:(m4+r)*lda+w.K])
		}
	}
	t := min(threads, np, m*w.N*w.K/minWork)
	parallel(np, t, func(p0, p1 int) { w.mul(p0, p1, m, a, lda, c, ldc, pad) })
}

// mul computes the columns of panels p0..p1; pad, when not nil, holds the
// rows left over from the blocks of four, padded to four with zeros.
func (w *Packed) mul(p0, p1, m int, a []float32, lda int, c []float32, ldc int, pad []float32) {
	K := w.K
	full := p1 // panels whose 16 columns all exist
	if p1*panel > w.N {
		full = p1 - 1
	}
	p := p0
	if m%4 == 1 && m >= 5 {
		w.mulFive(p0, p1, full, m, a, lda, c, ldc)
		return
	}
	// Three full panels at a time for blocks of four rows: each A element
	// broadcast once for 48 columns. Every row's sums are in the same
	// order whichever kernel computes them.
	m4 := m &^ 3
	var tile [4 * 3 * panel]float32
	for ; p+3 <= full && (m4 > 0 || pad != nil); p += 3 {
		bp := &w.p[p*panel*K]
		j0 := p * panel
		for i := 0; i < m4; i += 4 {
			gemmPanel4x3Asm(&a[i*lda], lda, K, bp, &c[i*ldc+j0], ldc)
		}
		if pad != nil {
			gemmPanel4x3Asm(&pad[0], K, K, bp, &tile[0], 3*panel)
			for r := m4; r < m; r++ {
				copy(c[r*ldc+j0:r*ldc+j0+3*panel], tile[(r-m4)*3*panel:])
			}
			continue
		}
		for i := m4; i < m; i++ {
			gemvPanelAsm(&a[i*lda], K, bp, 3, &c[i*ldc+j0])
		}
	}
	w.mulPanels(p, p1, full, m, a, lda, c, ldc)
}

// mulFive is mul for m = 4q + 1 rows (q >= 1): the last five (a beam of
// five for one sentence, or what blocks of four leave but one) go through
// the five-row tile two panels at a time, the others in blocks of four
// three panels at a time, six panels together so that each is read from
// memory once. The one row left over from blocks of four took a block's
// time or more through the one-row kernel, which reads every panel again:
// 9 rows 22-25% longer than 8 (K = 512 and 1,024, 16,000 columns), 5 rows
// 45% longer than 4.
func (w *Packed) mulFive(p0, p1, full, m int, a []float32, lda int, c []float32, ldc int) {
	K := w.K
	m4 := m - 5 // rows in blocks of four; the five from m4 on
	five := func(p int) {
		gemmPanel5x2Asm(&a[m4*lda], lda, K, &w.p[p*panel*K], &c[m4*ldc+p*panel], ldc)
	}
	p := p0
	for ; p+6 <= full; p += 6 {
		for i := 0; i < m4; i += 4 {
			gemmPanel4x3Asm(&a[i*lda], lda, K, &w.p[p*panel*K], &c[i*ldc+p*panel], ldc)
			gemmPanel4x3Asm(&a[i*lda], lda, K, &w.p[(p+3)*panel*K], &c[i*ldc+(p+3)*panel], ldc)
		}
		five(p)
		five(p + 2)
		five(p + 4)
	}
	for ; p+2 <= full; p += 2 {
		for i := 0; i < m4; i += 4 {
			gemmPanel4Asm(&a[i*lda], lda, K, &w.p[p*panel*K], &c[i*ldc+p*panel], ldc)
			gemmPanel4Asm(&a[i*lda], lda, K, &w.p[(p+1)*panel*K], &c[i*ldc+(p+1)*panel], ldc)
		}
		five(p)
	}
	w.mulPanels(p, p1, full, m, a, lda, c, ldc)
}

// mulPanels computes the columns of panels p..p1 one panel at a time
// (panels from full on lack some of their 16 columns): blocks of four
// rows, then single rows.
func (w *Packed) mulPanels(p, p1, full, m int, a []float32, lda int, c []float32, ldc int) {
	K, N := w.K, w.N
	var tmp [4 * panel]float32
	for ; p < p1; p++ {
		bp := &w.p[p*panel*K]
		j0 := p * panel
		i := 0
		for ; i+4 <= m; i += 4 {
			if p < full {
				gemmPanel4Asm(&a[i*lda], lda, K, bp, &c[i*ldc+j0], ldc)
				continue
			}
			gemmPanel4Asm(&a[i*lda], lda, K, bp, &tmp[0], panel)
			for r := 0; r < 4; r++ {
				copy(c[(i+r)*ldc+j0:(i+r)*ldc+N], tmp[r*panel:])
			}
		}
		for ; i < m; i++ {
			if p < full {
				gemvPanelAsm(&a[i*lda], K, bp, 1, &c[i*ldc+j0])
				continue
			}
			gemvPanelAsm(&a[i*lda], K, bp, 1, &tmp[0])
			copy(c[i*ldc+j0:i*ldc+N], tmp[:])
		}
	}
}

// mulAVX2 is mul on AVX2: blocks of four rows by one panel, then the rows
// left over one at a time across the panels (six at once); both kernels
// add each output's products in order of k into one accumulator, so a
// row's sums do not depend on the rows beside it.
func (w *Packed) mulAVX2(p0, p1, m int, a []float32, lda int, c []float32, ldc int) {
	K, N := w.K, w.N
	var tmp [4 * panel]float32
	full := p1 // panels whose 16 columns all exist
	if p1*panel > N {
		full = p1 - 1
	}
	m4 := m &^ 3
	for p := p0; p < p1; p++ {
		bp := &w.p[p*panel*K]
		j0 := p * panel
		for i := 0; i < m4; i += 4 {
			if p < full {
				gemmPanel4Avx2Asm(&a[i*lda], lda, K, bp, &c[i*ldc+j0], ldc)
				continue
			}
			gemmPanel4Avx2Asm(&a[i*lda], lda, K, bp, &tmp[0], panel)
			for r := 0; r < 4; r++ {
				copy(c[(i+r)*ldc+j0:(i+r)*ldc+N], tmp[r*panel:(r+1)*panel])
			}
		}
	}
	for i := m4; i < m; i++ {
		if full > p0 {
			gemvPanelAvx2Asm(&a[i*lda], K, &w.p[p0*panel*K], full-p0, &c[i*ldc+p0*panel])
		}
		if full < p1 {
			gemvPanelAvx2Asm(&a[i*lda], K, &w.p[full*panel*K], 1, &tmp[0])
			copy(c[i*ldc+full*panel:i*ldc+N], tmp[:panel])
		}
	}
}
