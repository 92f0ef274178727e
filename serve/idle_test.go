package serve

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/idlemem"
)

// TestServeIdleBuffersBounded: with batching off, a burst of concurrent
// beam-search requests leaves at most --max-idle-memory in idle buffers
// (evaluator arenas and decoding executors of every model together; each
// model kept up to 64 arenas and 256 MiB of executors before, 705 MB live
// after issue 36's burst), /metrics reports them, and after --idle-release
// without requests they are dropped.
func TestServeIdleBuffersBounded(t *testing.T) {
	const maxIdle = 4 << 20
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "demo", Dir: demoModel(t)}}, Batching: false,
		MaxIdleMemory: maxIdle, IdleRelease: time.Hour, MaxConcurrent: 8})
	inputs := make([]string, 16)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("March %d, 20%02d", i%28+1, i)
	}
	body, _ := json.Marshal(map[string]any{"inputs": inputs, "beam": 4})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if code, resp := post(t, hs.URL+PathTranslate, string(body)); code != 200 {
				t.Errorf("%d %s", code, resp)
			}
		})
	}
	wg.Wait()
	held := idlemem.Bytes()
	gauge := gathered(t, s, MetricIdleBufferBytes, nil).GetGauge().GetValue()
	t.Logf("after 8 concurrent requests of 16 inputs at beam 4: %d bytes idle (limit %d)", held, maxIdle)
	if held <= 0 || held > maxIdle || int64(gauge) != held {
		t.Errorf("idle buffers: %d bytes, %s %v; want some, at most %d", held, MetricIdleBufferBytes, gauge, maxIdle)
	}
	idlemem.SetTimeout(20 * time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for idlemem.Bytes() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := idlemem.Bytes(); n != 0 {
		t.Errorf("after the idle time: %d bytes still idle", n)
	}
	if d := counterValue(t, s, MetricIdleBufferDropped, nil); d < float64(held) {
		t.Errorf("%s %v, want at least the %d bytes held", MetricIdleBufferDropped, d, held)
	}
}
