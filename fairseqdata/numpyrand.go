package fairseqdata

// numpyPermutation is numpy's legacy np.random.seed(seed) followed by
// np.random.permutation(n): an MT19937 generator seeded by init_genrand,
// and a Fisher-Yates shuffle of 0..n-1 from the last element down, each
// j drawn by random_interval (32-bit draws masked to the smallest
// all-ones mask over i, drawn again while above i).
func numpyPermutation(seed uint32, n int) []int {
	mt := newMT19937(seed)
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	for i := n - 1; i >= 1; i-- {
		j := mt.interval(uint32(i))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// mt19937 is the Mersenne Twister numpy's RandomState runs.
type mt19937 struct {
	key [624]uint32
	pos int
}

func newMT19937(seed uint32) *mt19937 {
	m := &mt19937{pos: 624}
	m.key[0] = seed
	for i := 1; i < 624; i++ {
		prev := m.key[i-1]
		m.key[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	return m
}

func (m *mt19937) next() uint32 {
	if m.pos == 624 {
		const upper, lower = 0x80000000, 0x7fffffff
		mag := [2]uint32{0, 0x9908b0df}
		for i := 0; i < 624; i++ {
			y := m.key[i]&upper | m.key[(i+1)%624]&lower
			m.key[i] = m.key[(i+397)%624] ^ y>>1 ^ mag[y&1]
		}
		m.pos = 0
	}
	y := m.key[m.pos]
	m.pos++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// interval is numpy's random_interval(max) for max below 2^32.
func (m *mt19937) interval(max uint32) uint32 {
	if max == 0 {
		return 0
	}
	mask := max
	mask |= mask >> 1
	mask |= mask >> 2
	mask |= mask >> 4
	mask |= mask >> 8
	mask |= mask >> 16
	for {
		if v := m.next() & mask; v <= max {
			return v
		}
	}
}
