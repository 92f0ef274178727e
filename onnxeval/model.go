package onnxeval

import (
	"context"
	"errors"
	"fmt"
	"github.com/attnx/attnx/internal/kernel"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/attnx/attnx/internal/idlemem"
	"github.com/attnx/attnx/onnxfile"
)

// Options configures a Model.
type Options struct {
	// Threads bounds the goroutines one product may use; 0 means one per
	// CPU (runtime.GOMAXPROCS), 1 runs everything on the calling goroutine.
	Threads int
	// MaxRunBytes bounds the tensor memory one run allocates (buffers its
	// arena reuses are not counted again); a run that needs more fails
	// naming the node. 0 means DefaultRunBytes(): half the process's
	// memory limit (GOMEMLIMIT or the cgroup's memory.max) when it has
	// one, at most DefaultMaxRunBytes.
	MaxRunBytes int64
	// MaxLoopIterations bounds the iterations of one Loop node; a Loop
	// that would run longer fails naming the node. 0 means
	// DefaultMaxLoopIterations.
	MaxLoopIterations int64
}

// Defaults of Options' limits. A translation's Loop runs once per output
// token (a few hundred); its run needs a few hundred MiB at the most.
const (
	DefaultMaxRunBytes       = 8 << 30
	DefaultMaxLoopIterations = 1 << 20
)

// LimitError is a run stopped by one of Options' limits.
type LimitError struct {
	// What says which limit and what needed more.
	What string
}

// Error says which limit stopped the run and what needed more.
func (e *LimitError) Error() string { return e.What }

// Model is a loaded ONNX model ready to run: its graph checked against the
// operators the evaluator implements and planned once (evaluation order,
// each value's slot, when its buffer returns to the run's arena, weights
// repacked for the kernels). Run may be called from many goroutines at once.
// Close ends its use of the evaluator's shared goroutines and buffers.
type Model struct {
	name    string
	main    *plan
	inputs  []onnxfile.ValueInfo
	outputs []onnxfile.ValueInfo
	threads int
	arenas  *arenaPool
	hold    *kernelHold // nil with one thread
	closed  atomic.Bool

	maxRunBytes, maxLoop int64
}

// UnsupportedError reports a node whose operator, or whose use of an
// operator, the evaluator does not implement.
type UnsupportedError struct {
	// Node names the node ("" when unnamed), Op its operator with domain.
	Node, Op string
	// Why says what is missing.
	Why string
}

// Error says which node and operator, and what is missing.
func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("native evaluator: node %s (%s): %s", nodeName(e.Node), e.Op, e.Why)
}

// Open loads the model file at path, external data included.
func Open(path string, opt Options) (*Model, error) {
	mp, err := onnxfile.LoadWith(path, onnxfile.LoadOptions{LoadExternalData: true})
	if err != nil {
		return nil, fmt.Errorf("native evaluator: %w", err)
	}
	// The file's bytes are garbage now: collect them before the kernels
	// lay out their weights, which then reuse that memory instead of
	// growing the process (a model's peak memory would otherwise be its
	// file, its decoded tensors and its packed weights at once).
	runtime.GC()
	g, err := onnxfile.ReadGraph(mp)
	if err != nil {
		return nil, fmt.Errorf("native evaluator: %s: %w", path, err)
	}
	// Likewise the protobuf message, now that g holds the tensors.
	mp = nil
	runtime.GC()
	m, err := FromGraph(path, g, opt)
	// And the decoded tensors, now that the kernels hold their layouts:
	// without this collection the collector's next goal stays at GOGC
	// percent above the loading's peak (file tensors and packed weights
	// at once), and garbage from the first runs fills the heap up to it.
	g = nil
	runtime.GC()
	return m, err
}

// OpenBytes loads a model from the bytes of an .onnx file (without external
// data).
func OpenBytes(data []byte, opt Options) (*Model, error) {
	mp, err := onnxfile.LoadBytes(data)
	if err != nil {
		return nil, fmt.Errorf("native evaluator: %w", err)
	}
	g, err := onnxfile.ReadGraph(mp)
	if err != nil {
		return nil, fmt.Errorf("native evaluator: %w", err)
	}
	return FromGraph("model bytes", g, opt)
}

// FromGraph plans g (a main graph read by onnxfile.ReadGraph) for running,
// with the operators' semantics of g.Opset (17 when 0). name labels errors.
func FromGraph(name string, g *onnxfile.Graph, opt Options) (*Model, error) {
	if err := kernel.PathError(); err != nil {
		return nil, err
	}
	opset := g.Opset
	if opset == 0 {
		opset = 17
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
	}
	m := &Model{name: name, threads: threads, maxRunBytes: opt.MaxRunBytes, maxLoop: opt.MaxLoopIterations, arenas: newArenaPool()}
	if m.maxRunBytes <= 0 {
		m.maxRunBytes = DefaultRunBytes()
	}
	if m.maxLoop <= 0 {
		m.maxLoop = DefaultMaxLoopIterations
	}
	for _, v := range g.Inputs {
		if !inits[v.Name] {
			m.inputs = append(m.inputs, v)
		}
	}
	m.outputs = g.Outputs
	c := &compiler{opset: opset}
	p, err := c.plan(g, nil, m.inputNames())
	if err != nil {
		return nil, err
	}
	m.main = p
	if threads > 1 {
		m.hold = &kernelHold{}
		kernel.Acquire()
		runtime.AddCleanup(m, (*kernelHold).release, m.hold)
	}
	return m, nil
}

// ErrClosed is the error of a run of a closed Model.
var ErrClosed = errors.New("the model is closed")

// Close drops the model's idle run buffers and ends its hold on the
// kernels' helper goroutines: once every model is closed (or collected),
// the evaluator keeps no goroutine and no idle buffer. Runs in progress
// finish; later ones fail with ErrClosed. Calling Close again does
// nothing; it returns nil.
func (m *Model) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.arenas.close()
	if m.hold != nil {
		m.hold.release()
	}
	return nil
}

// kernelHold is a model's use of the kernels' helpers (kernel.Acquire),
// released once: by Close, or when the model is collected unclosed.
type kernelHold struct{ once sync.Once }

func (h *kernelHold) release() { h.once.Do(kernel.Release) }

func (m *Model) inputNames() []string {
	names := make([]string, len(m.inputs))
	for i, v := range m.inputs {
		names[i] = v.Name
	}
	return names
}

// Inputs returns the model's inputs (initializers left out).
func (m *Model) Inputs() []onnxfile.ValueInfo { return append([]onnxfile.ValueInfo(nil), m.inputs...) }

// Outputs returns the model's outputs.
func (m *Model) Outputs() []onnxfile.ValueInfo {
	return append([]onnxfile.ValueInfo(nil), m.outputs...)
}

// Ops returns the operators the model uses, main graph and subgraphs, sorted.
func (m *Model) Ops() []string {
	seen := map[string]bool{}
	m.main.ops(seen)
	out := make([]string, 0, len(seen))
	for op := range seen {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// Run evaluates the model on inputs (one tensor per input, by name) and
// returns every output by name. The returned tensors belong to the caller.
func (m *Model) Run(inputs map[string]*Tensor) (map[string]*Tensor, error) {
	in := make([]*Tensor, len(m.inputs))
	for i, v := range m.inputs {
		t, ok := inputs[v.Name]
		if !ok {
			return nil, fmt.Errorf("native evaluator: %s: input %q is missing", m.name, v.Name)
		}
		in[i] = t
	}
	for name := range inputs {
		if m.inputIndex(name) < 0 {
			return nil, fmt.Errorf("native evaluator: %s: no input called %q (inputs: %s)", m.name, name, strings.Join(m.inputNames(), ", "))
		}
	}
	out, err := m.RunOrdered(in)
	if err != nil {
		return nil, err
	}
	res := make(map[string]*Tensor, len(out))
	for i, v := range m.outputs {
		res[v.Name] = out[i]
	}
	return res, nil
}

// Recycle hands back tensors that Run returned and the caller is done
// with (it copied them out): later runs reuse their buffers instead of
// allocating. The caller must not touch them afterwards.
func (m *Model) Recycle(ts ...*Tensor) {
	a := m.arenas.get()
	for _, t := range ts {
		a.take(t)
	}
	m.arenas.put(a)
}

func (m *Model) inputIndex(name string) int {
	for i, v := range m.inputs {
		if v.Name == name {
			return i
		}
	}
	return -1
}

// RunOrdered evaluates the model on inputs given in the order of Inputs and
// returns the outputs in the order of Outputs.
func (m *Model) RunOrdered(in []*Tensor) (out []*Tensor, err error) {
	return m.RunContext(context.Background(), in)
}

// RunInto is RunOrdered with destinations for float32 outputs: where
// dst[i] has the length of output i, the node that computes it may write
// it there, and out[i].Data is then dst[i] itself (OutputIn says whether
// it is); the caller copies the others. A destination is never kept or
// reused by the model.
func (m *Model) RunInto(in []*Tensor, dst [][]float32) (out []*Tensor, err error) {
	return m.run(context.Background(), in, dst)
}

// OutputIn reports whether t's data is dst's buffer (RunInto wrote the
// output in place).
func OutputIn(t *Tensor, dst []float32) bool {
	d, ok := t.Data.([]float32)
	return ok && len(d) == len(dst) && len(d) > 0 && &d[0] == &dst[0]
}

// RunContext is RunOrdered until ctx is done: the run stops before its
// next node (or Loop iteration) and returns ctx's error.
func (m *Model) RunContext(ctx context.Context, in []*Tensor) (out []*Tensor, err error) {
	return m.run(ctx, in, nil)
}

func (m *Model) run(ctx context.Context, in []*Tensor, dst [][]float32) (out []*Tensor, err error) {
	if m.closed.Load() {
		return nil, fmt.Errorf("native evaluator: %s: %w", m.name, ErrClosed)
	}
	if len(in) != len(m.inputs) {
		return nil, fmt.Errorf("native evaluator: %s: %d inputs for %d", m.name, len(in), len(m.inputs))
	}
	for i, t := range in {
		if err := m.checkInput(i, t); err != nil {
			return nil, err
		}
	}
	a := m.arenas.get()
	r := &runner{ctx: ctx, arena: a, threads: m.threads, budget: m.maxRunBytes, maxLoop: m.maxLoop}
	defer func() {
		if p := recover(); p != nil {
			// A refused shape or limit met inside a kernel: the run fails
			// naming the node, and the arena is still sound.
			var se *ShapeError
			var le *LimitError
			if e, ok := p.(error); ok && (errors.As(e, &se) || errors.As(e, &le)) {
				out, err = nil, fmt.Errorf("native evaluator: %s: node %s (%s): %w", m.name, nodeName(r.node), r.op, e)
				m.arenas.put(a)
				return
			}
			// A kernel indexing past a malformed input must not take the
			// process down: the run fails, naming the node. The arena is
			// dropped, as it may hold buffers still in use.
			out, err = nil, fmt.Errorf("native evaluator: %s: node %s (%s): internal error: %v", m.name, r.node, r.op, p)
			return
		}
		m.arenas.put(a)
	}()
	r.dst = dst
	out, err = m.main.run(r, in, nil)
	if err != nil {
		return nil, fmt.Errorf("native evaluator: %s: %w", m.name, err)
	}
	return out, nil
}

func (m *Model) checkInput(i int, t *Tensor) error {
	v := m.inputs[i]
	if t == nil {
		return fmt.Errorf("native evaluator: %s: input %q is nil", m.name, v.Name)
	}
	if elem, ok := v.Type.TensorElem(); ok && elem != t.DType {
		return fmt.Errorf("native evaluator: %s: input %q is %v, the model wants %v", m.name, v.Name, t.DType, elem)
	}
	if t.Len() != dataLen(t.Data) {
		return fmt.Errorf("native evaluator: %s: input %q has shape %v (%d elements) but %d values", m.name, v.Name, t.Shape, t.Len(), dataLen(t.Data))
	}
	if sh := v.Type.Shape; sh != nil {
		if len(sh) != len(t.Shape) {
			return fmt.Errorf("native evaluator: %s: input %q has rank %d (%v), the model wants %v", m.name, v.Name, len(t.Shape), t.Shape, sh)
		}
		for k, d := range sh {
			if d.Known() && d.Value != t.Shape[k] {
				return fmt.Errorf("native evaluator: %s: input %q has shape %v, the model wants %v", m.name, v.Name, t.Shape, sh)
			}
		}
	}
	return nil
}

func dataLen(d any) int {
	switch x := d.(type) {
	case []float32:
		return len(x)
	case []float64:
		return len(x)
	case []int64:
		return len(x)
	case []int32:
		return len(x)
	case []int16:
		return len(x)
	case []int8:
		return len(x)
	case []uint8:
		return len(x)
	case []uint16:
		return len(x)
	case []uint32:
		return len(x)
	case []uint64:
		return len(x)
	case []bool:
		return len(x)
	}
	return -1
}

// runner is one Run's context: its arena, thread budget and limits.
type runner struct {
	ctx      context.Context
	arena    *arena
	threads  int
	node, op string // the node running, for internal errors
	// budget is the bytes the run may still allocate; maxLoop bounds a
	// Loop's iterations.
	budget, maxLoop int64
	// dst are RunInto's destinations (by output), dest the one the running
	// node may take.
	dst  [][]float32
	dest []float32
	// temp is the bytes of the running node's temporary buffers (tmp),
	// given back to budget when the node returns.
	temp int64
}

// fresh returns n zeroed elements of T, charged to the run's budget: for
// data that outlives the node (its outputs).
func fresh[T any](r *runner, n int) []T {
	var z T
	r.charge(int64(n) * int64(unsafe.Sizeof(z)))
	return make([]T, n)
}

// tmp returns n zeroed elements of T for the running node alone (index
// maps, scratch): charged to the run's budget while the node runs, given
// back when it returns. Call it outside the node's worker goroutines.
func tmp[T any](r *runner, n int) []T {
	var z T
	r.chargeTemp(int64(n) * int64(unsafe.Sizeof(z)))
	return make([]T, n)
}

// chargeTemp charges n bytes of temporary buffers the running node makes
// itself (its workers' scratch), given back when the node returns.
func (r *runner) chargeTemp(n int64) {
	r.charge(n)
	r.temp += n
}

// charge takes n bytes of a new allocation from the run's budget, or
// panics with a *LimitError (RunContext reports it for the node).
func (r *runner) charge(n int64) {
	if n > r.budget {
		panic(&LimitError{What: fmt.Sprintf("the run needs more than its memory limit (%d more bytes with %d left; onnxeval.Options.MaxRunBytes)", n, r.budget)})
	}
	r.budget -= n
}

func nodeName(n string) string {
	if n == "" {
		return "(unnamed)"
	}
	return n
}

// arenaPool keeps the arenas of finished runs for the next ones, as ONNX
// Runtime keeps its arena: a sync.Pool would drop them at every garbage
// collection, and each step would then fault in fresh buffers. It keeps
// as many as runs have been concurrent, at most maxArenas, within the
// process's bound on idle buffers (package idlemem, which also drops
// them after an idle time).
type arenaPool struct {
	mu     sync.Mutex
	idle   []*arena
	acct   *idlemem.Account
	closed bool // the model is closed: arenas are no longer kept
}

const maxArenas = 64

func newArenaPool() *arenaPool {
	p := &arenaPool{}
	p.acct = idlemem.Register(p)
	return p
}

func (p *arenaPool) get() *arena {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		a := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.acct.Release(a.bytes())
		return a
	}
	return &arena{}
}

func (p *arenaPool) put(a *arena) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && len(p.idle) < maxArenas && p.acct.Keep(a.bytes()) {
		p.idle = append(p.idle, a)
	}
}

// close drops the idle arenas, keeps none later and unregisters the pool.
func (p *arenaPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.DropIdle()
	p.acct.Close()
}

// DropIdle lets every idle arena go (idlemem.Dropper).
func (p *arenaPool) DropIdle() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, a := range p.idle {
		n += a.bytes()
	}
	p.acct.Release(n)
	p.idle = nil
	return n
}

// arena recycles the float32 buffers of values whose last use has passed,
// within one run and, through Model's pool, across runs.
type arena struct {
	free [][]float32
}

// bytes is what the arena's free buffers hold.
func (a *arena) bytes() int64 {
	var n int64
	for _, b := range a.free {
		n += 4 * int64(cap(b))
	}
	return n
}

func (a *arena) get(r *runner, n int) []float32 {
	// The smallest free buffer that fits, unless it is more than twice
	// the size: a large buffer given to a small value would be missing
	// when a large one is next needed, and the arena would grow.
	best := -1
	for i, b := range a.free {
		if cap(b) >= n && cap(b) <= 2*n+1024 && (best < 0 || cap(b) < cap(a.free[best])) {
			best = i
		}
	}
	if best < 0 {
		r.charge(4 * int64(n))
		return make([]float32, n)
	}
	b := a.free[best]
	last := len(a.free) - 1
	a.free[best] = a.free[last]
	a.free = a.free[:last]
	return b[:n]
}

func (a *arena) put(b []float32) {
	if cap(b) == 0 || len(a.free) >= 64 {
		return
	}
	a.free = append(a.free, b)
}

// f32 returns an owned float32 tensor of shape from the arena; its contents
// are not zeroed. While a node that computes a graph output with a
// destination runs, its first tensor of the destination's length is the
// destination itself, not owned (the arena never takes it).
func (r *runner) f32(shape []int64) *Tensor {
	n := numel(shape)
	if d := r.dest; d != nil && len(d) == n {
		r.dest = nil
		return &Tensor{DType: dtFloat, Shape: shape, Data: d}
	}
	return &Tensor{DType: dtFloat, Shape: shape, Data: r.arena.get(r, n), owned: true}
}

// alloc returns a zeroed tensor of dt and shape.
func (r *runner) alloc(dt dtype, shape []int64) (*Tensor, error) {
	if dt == dtFloat {
		t := r.f32(shape)
		clear(t.Data.([]float32))
		return t, nil
	}
	n := numel(shape)
	r.charge(int64(n) * int64(dt.Size()))
	d, err := makeData(dt, n)
	if err != nil {
		return nil, err
	}
	return &Tensor{DType: dt, Shape: shape, Data: d}, nil
}

func (r *runner) release(t *Tensor) { r.arena.take(t) }

// take puts t's buffer in the arena when t owns one (once: t no longer
// owns it after).
func (a *arena) take(t *Tensor) {
	if t != nil && t.owned {
		t.owned = false
		a.put(t.Data.([]float32))
	}
}
