package serve

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestCrossSiteRequests serves on a loopback address as attnx serve does.
// A POST whose body is not declared JSON (what any web page may send
// without asking) is refused 415; a request naming a Host that is not the
// server's (a DNS-rebinding page reading /metrics or /v1/models) is
// refused 403 naming --allow-host, on every route; localhost, the loopback
// address and the names allowed are served.
func TestCrossSiteRequests(t *testing.T) {
	b := newBlockingBackend()
	b.release <- struct{}{}
	srv := serveLoopback(t, Config{Models: []ModelDir{{Name: "m"}}, Open: b.opener(), AllowedHosts: []string{"Attnx.Internal"}})
	addr := srv.addr
	_, port, _ := net.SplitHostPort(addr)
	cases := []struct {
		name, method, path, host, ctype string
		code                            int
		err                             string
	}{
		{"text/plain POST", "POST", PathTranslate, addr, "text/plain", 415, `Content-Type \"text/plain\": send the body as JSON with Content-Type: application/json`},
		{"form POST", "POST", PathTranslate, addr, "application/x-www-form-urlencoded", 415, "send the body as JSON"},
		{"POST without Content-Type", "POST", PathTranslate, addr, "", 415, "send the body as JSON"},
		{"JSON with a charset", "POST", PathTranslate, addr, "application/json; charset=utf-8", 200, ""},
		{"metrics for a rebinding page", "GET", PathMetrics, "evil.example:" + port, "", 403, `Host \"evil.example:` + port + `\" is not a name of this server, which listens on a loopback address: start attnx serve with --allow-host evil.example to answer it`},
		{"models for a rebinding page", "GET", PathModels, "evil.example", "", 403, "--allow-host evil.example"},
		{"translate for a rebinding page", "POST", PathTranslate, "evil.example:" + port, "application/json", 403, "--allow-host evil.example"},
		{"localhost", "GET", PathModels, "localhost:" + port, "", 200, ""},
		{"the loopback address", "GET", PathMetrics, addr, "", 200, ""},
		{"an allowed name, any case", "GET", PathHealth, "attnx.internal:" + port, "", 200, ""},
	}
	for _, c := range cases {
		var body io.Reader
		if c.method == "POST" {
			body = strings.NewReader(`{"ids": [[3, 4]]}`)
		}
		req, err := http.NewRequest(c.method, "http://"+addr+c.path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = c.host
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(data), c.err) {
			t.Errorf("%s: %d %s, want %d %q", c.name, resp.StatusCode, data, c.code, c.err)
		}
		if c.code == 200 && c.method == "POST" {
			b.release <- struct{}{}
		}
	}
	// Refusals show on /metrics, with no model: three 415s, three 403s.
	for code, want := range map[string]float64{"415": 3, "403": 3} {
		if got := counterValue(t, srv.s, MetricRequests, map[string]string{"model": "", "code": code}); got != want {
			t.Errorf("%s{code=%s}: %v, want %v", MetricRequests, code, got, want)
		}
	}
	// Not on a loopback address (behind a load balancer, in a cluster):
	// every Host is served.
	if h := loopbackHosts(&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, nil); h != nil {
		t.Errorf("0.0.0.0: %v, want no Host check", h)
	}
	if h := loopbackHosts(&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, nil); !h["::1"] || !h["localhost"] {
		t.Errorf("[::1]: %v", h)
	}
}
