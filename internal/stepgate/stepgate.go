// Package stepgate pauses a continuous-batching scheduler before its
// decoder steps, so that a test can see each step's size and decide when
// it runs. A Gate's Observe is a decode.SchedulerConfig.Observe.
package stepgate

import "sync/atomic"

// Gate pauses the scheduler's goroutine before each decoder step while
// armed: Observe announces the step's slots to Entered and waits for
// Release. Once Open has been called nothing waits any more.
type Gate struct {
	armed   atomic.Bool
	entered chan int
	release chan struct{}
}

// New returns a disarmed Gate.
func New() *Gate {
	return &Gate{entered: make(chan int), release: make(chan struct{})}
}

// Arm makes the scheduler pause before its steps (on) or not.
func (g *Gate) Arm(on bool) { g.armed.Store(on) }

// Observe is called by the scheduler before each step with its slots.
func (g *Gate) Observe(slots int) {
	if g.armed.Load() {
		select {
		case g.entered <- slots:
		case <-g.release:
		}
		<-g.release
	}
}

// Entered waits for the scheduler to pause before a step and returns the
// step's slots.
func (g *Gate) Entered() int { return <-g.entered }

// Release lets the paused step run.
func (g *Gate) Release() { g.release <- struct{}{} }

// Step lets the paused step run and returns the slots of the next one.
func (g *Gate) Step() int {
	g.Release()
	return g.Entered()
}

// Open disarms the gate for good and lets every pause pass: call it before
// closing the scheduler, which waits for its steps.
func (g *Gate) Open() {
	g.armed.Store(false)
	close(g.release)
}
