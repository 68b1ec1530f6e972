package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// A request through the proxy (a new connection to it each time, as a
// command's curl makes; the allowlist, the resolution and the dial of the
// upstream on a kept-alive pool) against the same request made directly.
func BenchmarkRequestDirect(b *testing.B) {
	up := benchUpstream(b)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for b.Loop() {
		benchGet(b, c, up.URL+"/")
	}
}

func BenchmarkRequestThroughProxy(b *testing.B) {
	up := benchUpstream(b)
	port := strconv.Itoa(up.Listener.Addr().(*net.TCPAddr).Port)
	w := newProxyWorld(b, []string{"up.test:" + port}, "up.test=127.0.0.1", nil, nil)
	w.client.Transport.(*http.Transport).DisableKeepAlives = true
	for b.Loop() {
		benchGet(b, w.client, "http://up.test:"+port+"/")
	}
}

func benchUpstream(b *testing.B) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { io.WriteString(rw, "ok") }))
	b.Cleanup(up.Close)
	return up
}

func benchGet(b *testing.B, c *http.Client, u string) {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
}
