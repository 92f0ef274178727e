package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/attnx/attnx/serve"
)

// service stands for a Kubernetes Service in front of attnx serve pods, as
// kube-proxy makes one: a TCP proxy that sends each new connection to one
// of the endpoints that are ready, round robin, and pins it there (a
// client's keep-alive connection stays with its pod). Readiness is what
// each pod's /readyz answered at the last probe, every probePeriod, as the
// kubelet and the endpoints controller see it.
type service struct {
	ln  net.Listener
	mu  sync.Mutex
	eps []*endpoint
	rr  int
}

type endpoint struct {
	addr  string // host:port
	ready atomic.Bool
	conns atomic.Int64 // connections sent to it
	stop  chan struct{}
}

const probePeriod = 50 * time.Millisecond

func newService(t *testing.T) *service {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &service{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.forward(c)
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *service) url() string { return "http://" + s.ln.Addr().String() }

// add makes a pod an endpoint, probed from now on.
func (s *service) add(url string) *endpoint {
	ep := &endpoint{addr: strings.TrimPrefix(url, "http://"), stop: make(chan struct{})}
	probe := func() {
		c := &http.Client{Timeout: probePeriod}
		resp, err := c.Get(url + serve.PathReady)
		ok := err == nil && resp.StatusCode == http.StatusOK
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		ep.ready.Store(ok)
	}
	probe()
	go func() {
		tick := time.NewTicker(probePeriod)
		defer tick.Stop()
		for {
			select {
			case <-ep.stop:
				return
			case <-tick.C:
				probe()
			}
		}
	}()
	s.mu.Lock()
	s.eps = append(s.eps, ep)
	s.mu.Unlock()
	return ep
}

// remove takes a pod out of the endpoints (it is gone).
func (s *service) remove(ep *endpoint) {
	close(ep.stop)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.eps {
		if e == ep {
			s.eps = append(s.eps[:i], s.eps[i+1:]...)
			return
		}
	}
}

// pick returns the next ready endpoint, or nil when none is.
func (s *service) pick() *endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range s.eps {
		ep := s.eps[s.rr%len(s.eps)]
		s.rr++
		if ep.ready.Load() {
			return ep
		}
	}
	return nil
}

// forward pipes a client connection to a ready endpoint; with none, or
// when the endpoint refuses, the client's connection is closed (a
// failed request).
func (s *service) forward(c net.Conn) {
	defer c.Close()
	ep := s.pick()
	if ep == nil {
		return
	}
	b, err := net.Dial("tcp", ep.addr)
	if err != nil {
		return
	}
	defer b.Close()
	ep.conns.Add(1)
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, c); b.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, b); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// TestRollingUpdateUnderLoad simulates a rolling update of
// deploy/deployment.yaml (maxSurge 1, maxUnavailable 0, --drain-delay)
// under load: 2 attnx serve pods behind a Service, 8 clients each sending
// translation requests one after another on a keep-alive connection;
// each old pod in turn is replaced: a new pod starts, the update waits
// until the Service has it ready, then the old one gets SIGTERM and
// exits. No request fails, every answer is 200, the old pods exit 0,
// and the new pods answer requests by the end.
func TestRollingUpdateUnderLoad(t *testing.T) {
	model := demoLuong(t)
	serveFromTestBinary(t)
	start := func() *serveProcess {
		p, err := startServe([]string{"serve", "--model", "dates=" + model, "--addr", "127.0.0.1:0", "--threads", "1", "--drain-delay", "500ms", "--shutdown-timeout", "20s"}, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.cmd.Process.Kill() })
		return p
	}
	svc := newService(t)
	type pod struct {
		p  *serveProcess
		ep *endpoint
	}
	var old []pod
	for range 2 {
		p := start()
		old = append(old, pod{p, svc.add(p.url)})
	}

	var ok, failed atomic.Int64
	var failMu sync.Mutex
	var failures []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clients sync.WaitGroup
	body := `{"inputs": ["3rd of March 2021", "2030-08-14", "the 22nd of February, 1959"]}`
	for c := range 8 {
		clients.Go(func() {
			// A client of its own per goroutine: one keep-alive
			// connection, reused request after request.
			client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
			defer client.CloseIdleConnections()
			for ctx.Err() == nil {
				resp, err := client.Post(svc.url()+serve.PathTranslate, "application/json", strings.NewReader(body))
				var text []byte
				if err == nil {
					text, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != 200 || !strings.Contains(string(text), `"text":"2021-03-03"`)) {
						err = fmt.Errorf("status %d: %s", resp.StatusCode, text)
					}
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					failed.Add(1)
					failMu.Lock()
					failures = append(failures, fmt.Sprintf("client %d: %v", c, err))
					failMu.Unlock()
					continue
				}
				ok.Add(1)
			}
		})
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitUntil("200 answers from the old pods", func() bool { return ok.Load() >= 200 })
	var fresh []pod
	for i, o := range old {
		n := start()
		ep := svc.add(n.url)
		waitUntil("the new pod to be ready in the Service", ep.ready.Load)
		fresh = append(fresh, pod{n, ep})
		before := ok.Load()
		if err := o.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := o.p.wait(); err != nil {
			t.Fatalf("old pod %d: %v", i+1, err)
		}
		svc.remove(o.ep)
		if !strings.Contains(o.p.Log(), "shutting down: draining for 500ms") {
			t.Errorf("old pod %d's log lacks its drain:\n%s", i+1, o.p.Log())
		}
		t.Logf("old pod %d replaced: %d answers during its drain and shutdown", i+1, ok.Load()-before)
	}
	from := ok.Load()
	waitUntil("200 answers from the new pods", func() bool { return ok.Load() >= from+200 })
	cancel()
	clients.Wait()
	for _, f := range failures[:min(len(failures), 10)] {
		t.Error(f)
	}
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests failed during the rolling update", failed.Load(), failed.Load()+ok.Load())
	}
	for i, f := range fresh {
		if f.ep.conns.Load() == 0 {
			t.Errorf("new pod %d got no connection", i+1)
		}
		if err := f.p.stop(); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d requests answered 200, %d failed", ok.Load(), failed.Load())
}
