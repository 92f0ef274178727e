package serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond every millisecond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type answer struct {
	code int
	body string
}

// postAsync sends body in the background; the answer comes on the channel.
func postAsync(t *testing.T, url, body string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			ch <- answer{-1, err.Error()}
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			ch <- answer{-1, err.Error()}
			return
		}
		ch <- answer{resp.StatusCode, string(data)}
	}()
	return ch
}

// TestQueueFull: with one request decoding and one waiting, the next gets
// 429 at once; the two admitted ones are then answered.
func TestQueueFull(t *testing.T) {
	b := newBlockingBackend()
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), MaxConcurrent: 1, MaxQueue: 1})
	url := hs.URL + PathTranslate
	first := postAsync(t, url, `{"ids": [[3, 4]]}`)
	<-b.entered
	second := postAsync(t, url, `{"ids": [[5]]}`)
	waitFor(t, "the second request to queue", func() bool { return s.models["m"].lim.depth() == 1 })

	resp, err := http.Post(url, "application/json", strings.NewReader(`{"ids": [[6]]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"error":"model \"m\" is busy (queue full: 1 requests decoding and 1 waiting): retry later"}` + "\n"
	if resp.StatusCode != 429 || string(body) != want || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("third request: %d %q Retry-After %q\nwant 429 %q Retry-After 1", resp.StatusCode, body, resp.Header.Get("Retry-After"), want)
	}

	b.release <- struct{}{}
	if a := <-first; a.code != 200 || a.body != `{"model":"m","results":[{"input":"3 4","source_ids":[3,4],"tokens":[4,3,2],"text":""}]}`+"\n" {
		t.Errorf("first request: %d %s", a.code, a.body)
	}
	<-b.entered
	b.release <- struct{}{}
	if a := <-second; a.code != 200 {
		t.Errorf("second request: %d %s", a.code, a.body)
	}
	if d := s.models["m"].lim.depth(); d != 0 {
		t.Errorf("queue depth %d after everything was answered", d)
	}
}

// TestRequestTimeout: a request that waits longer than RequestTimeout gets
// 504; one whose client goes away is counted as 499 and frees its place.
func TestRequestTimeout(t *testing.T) {
	b := newBlockingBackend()
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), RequestTimeout: 50 * time.Millisecond})
	code, body := post(t, hs.URL+PathTranslate, `{"ids": [[3]]}`)
	<-b.entered
	if code != 504 || body != `{"error":"not answered within the request timeout of 50ms"}`+"\n" {
		t.Errorf("got %d %s", code, body)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL+PathTranslate, strings.NewReader(`{"ids": [[3]]}`))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		done <- err
	}()
	<-b.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v", err)
	}
	waitFor(t, "the server to count the request as 499", func() bool {
		return counterValue(t, s, MetricRequests, map[string]string{"model": "m", "code": "499"}) == 1
	})
	if n := counterValue(t, s, MetricRequests, map[string]string{"model": "m", "code": "504"}); n != 1 {
		t.Errorf("%s{code=504} = %v, want 1", MetricRequests, n)
	}
}

// TestServeShutdown: when Serve's context ends, readiness fails, the
// request in flight is answered, new connections are refused and Serve
// returns nil.
func TestServeShutdown(t *testing.T) {
	b := newBlockingBackend()
	s, err := New(Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	waitFor(t, "readiness", s.Ready)
	if code, body := get(t, url+PathReady); code != 200 || body != `{"status":"ready"}`+"\n" {
		t.Errorf("readyz: %d %s", code, body)
	}

	inFlight := postAsync(t, url+PathTranslate, `{"ids": [[7, 8, 9]]}`)
	<-b.entered
	stop()
	waitFor(t, "readiness to fail", func() bool { return !s.Ready() })
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	b.release <- struct{}{}
	if a := <-inFlight; a.code != 200 || !strings.Contains(a.body, `"tokens":[9,8,7,2]`) {
		t.Errorf("request in flight: %d %s", a.code, a.body)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestHealthAndReadiness: liveness answers from the start, readiness only
// between Load and Close.
func TestHealthAndReadiness(t *testing.T) {
	b := newBlockingBackend()
	s, err := New(Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener()})
	if err != nil {
		t.Fatal(err)
	}
	check := func(when, path string, code int, body string) {
		t.Helper()
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != code || rec.Body.String() != body {
			t.Errorf("%s: GET %s = %d %q, want %d %q", when, path, rec.Code, rec.Body.String(), code, body)
		}
	}
	check("before Load", PathHealth, 200, `{"status":"alive"}`+"\n")
	check("before Load", PathReady, 503, `{"status":"loading models"}`+"\n")
	check("before Load", PathModels, 503, `{"error":"not ready: the models are loading"}`+"\n")
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	check("after Load", PathReady, 200, `{"status":"ready"}`+"\n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check("after Close", PathReady, 503, `{"status":"shutting down"}`+"\n")
	check("after Close", PathHealth, 200, `{"status":"alive"}`+"\n")
}

// stalledPost opens a connection to addr, sends the headers of a POST to
// /v1/translate announcing a body of 100 bytes, and one byte of it.
func stalledPost(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "POST "+PathTranslate+" HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	return c
}

// readStatus reads the status line the server answers on c (waiting up
// to 60 s, far past what the server should take).
func readStatus(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "no answer: " + err.Error()
	}
	return strings.TrimSpace(line)
}

// TestStalledBody: a client that sends its headers and one byte of body
// is answered 408 when the request timeout (here 300 ms) runs out, rather
// than holding the connection; the answer names the timeout.
func TestStalledBody(t *testing.T) {
	b := newBlockingBackend()
	sv := serveLoopback(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), RequestTimeout: 300 * time.Millisecond})
	c := stalledPost(t, sv.addr)
	if got := readStatus(t, c); got != "HTTP/1.1 408 Request Timeout" {
		t.Errorf("stalled body: %q", got)
	}
}

// TestShutdownCutsStalledBodies: with a client stalled in its body and a
// request decoding, a shutdown answers the decoding request, answers the
// stalled one 503 at once instead of waiting for it (the shutdown timeout
// is 60 s here: waiting would make Serve return an error), and Serve
// returns nil.
func TestShutdownCutsStalledBodies(t *testing.T) {
	b := newBlockingBackend()
	sv := serveLoopback(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), ShutdownTimeout: 60 * time.Second})
	s, url := sv.s, "http://"+sv.addr
	c := stalledPost(t, sv.addr)
	waitFor(t, "the stalled request to be reading its body", func() bool {
		s.readersMu.Lock()
		defer s.readersMu.Unlock()
		return len(s.readers) == 1
	})
	inFlight := postAsync(t, url+PathTranslate, `{"ids": [[7, 8, 9]]}`)
	<-b.entered
	sv.stop()
	if got := readStatus(t, c); got != "HTTP/1.1 503 Service Unavailable" {
		t.Errorf("stalled body at shutdown: %q", got)
	}
	b.release <- struct{}{}
	if a := <-inFlight; a.code != 200 {
		t.Errorf("request in flight: %d %s", a.code, a.body)
	}
	select {
	case err := <-sv.served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		sv.served <- nil // for the cleanup
	case <-time.After(50 * time.Second):
		t.Fatal("Serve did not return")
	}
}

// TestListenerFailureWhileLoading: when the listener fails while a model
// is being opened, Serve waits for it, opens no further model and closes
// every backend it opened before returning the listener's error.
func TestListenerFailureWhileLoading(t *testing.T) {
	var opened, closed atomic.Int32
	entered, release := make(chan struct{}, 2), make(chan struct{})
	open := func(string, *Config, BatchObserver) (Backend, error) {
		entered <- struct{}{}
		<-release
		opened.Add(1)
		return &countingBackend{blockingBackend: newBlockingBackend(), closed: &closed}, nil
	}
	s, err := New(Config{Models: []ModelDir{{Name: "a"}, {Name: "b"}}, Open: open})
	if err != nil {
		t.Fatal(err)
	}
	ln := &failingListener{fail: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), ln) }()
	<-entered
	close(ln.fail) // the listener fails while model "a" is being opened
	close(release)
	err = <-served
	if err == nil || !strings.Contains(err.Error(), "the listener failed") {
		t.Errorf("Serve: %v, want the listener's error", err)
	}
	// Model "b" may or may not have been started, depending on when Serve
	// saw the failure; every backend opened must be closed.
	if o, c := opened.Load(), closed.Load(); o < 1 || c != o {
		t.Errorf("%d backends opened, %d closed; want each one opened closed", o, c)
	}
}

// failingListener's Accept fails once fail is closed.
type failingListener struct{ fail chan struct{} }

func (l *failingListener) Accept() (net.Conn, error) {
	<-l.fail
	return nil, errors.New("the listener failed")
}
func (l *failingListener) Close() error   { return nil }
func (l *failingListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// countingBackend counts its Close calls.
type countingBackend struct {
	*blockingBackend
	closed *atomic.Int32
}

func (b *countingBackend) Close() error {
	b.closed.Add(1)
	return nil
}

// serving is a Server running Serve on a loopback listener of its own, as
// attnx serve runs it (readiness, shutdown and the checks that need a
// real listener), ready when serveLoopback returns.
type serving struct {
	s      *Server
	addr   string
	stop   context.CancelFunc
	served chan error
}

// serveLoopback makes a Server of cfg and runs Serve on 127.0.0.1 until
// the test stops it (shutdown) or ends (then Serve must return nil).
func serveLoopback(t *testing.T, cfg Config) *serving {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	sv := &serving{s: s, addr: ln.Addr().String(), stop: stop, served: make(chan error, 1)}
	go func() { sv.served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-sv.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	waitFor(t, "readiness", s.Ready)
	return sv
}

// TestReadinessSaturated: readiness fails while a model's queue is full
// (the next request would get 429), naming the model, and comes back when
// the queue has room; attnx_serve_rows_in_flight counts the rows of the
// admitted requests, waiting or decoding.
func TestReadinessSaturated(t *testing.T) {
	b := newBlockingBackend()
	s, hs := startServer(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), MaxConcurrent: 1, MaxQueue: 2})
	url := hs.URL + PathTranslate
	rows := func() float64 { return gathered(t, s, MetricRowsInFlight, nil).GetGauge().GetValue() }
	first := postAsync(t, url, `{"ids": [[3, 4], [5]]}`)
	<-b.entered
	second := postAsync(t, url, `{"ids": [[5]]}`)
	waitFor(t, "the second request to queue", func() bool { return s.models["m"].lim.depth() == 1 })
	if code, body := get(t, hs.URL+PathReady); code != 200 || body != `{"status":"ready"}`+"\n" {
		t.Errorf("readyz with room in the queue: %d %s", code, body)
	}
	third := postAsync(t, url, `{"ids": [[6], [7], [8]]}`)
	waitFor(t, "the third request to queue", func() bool { return s.models["m"].lim.depth() == 2 })
	if code, body := get(t, hs.URL+PathReady); code != 503 || body != `{"model":"m","queue_depth":2,"status":"saturated"}`+"\n" {
		t.Errorf("readyz with the queue full: %d %s", code, body)
	}
	if r := rows(); r != 6 {
		t.Errorf("%s = %v with 2+1+3 rows admitted, want 6", MetricRowsInFlight, r)
	}
	b.release <- struct{}{}
	<-b.entered
	waitFor(t, "room in the queue", func() bool { return s.models["m"].lim.depth() == 1 })
	if code, body := get(t, hs.URL+PathReady); code != 200 {
		t.Errorf("readyz once the queue has room: %d %s", code, body)
	}
	b.release <- struct{}{}
	<-b.entered
	b.release <- struct{}{}
	for i, ch := range []<-chan answer{first, second, third} {
		if a := <-ch; a.code != 200 {
			t.Errorf("request %d: %d %s", i+1, a.code, a.body)
		}
	}
	waitFor(t, "no rows in flight", func() bool { return rows() == 0 })
}
