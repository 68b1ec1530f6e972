package egress

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/persona"
)

// proxyWorld is a Proxy fed as the sandbox feeds it: each connection to a
// local listener is handed to ServeConn.
type proxyWorld struct {
	p        *Proxy
	requests *prometheus.CounterVec
	logs     *fake.LogBuffer
	client   *http.Client
}

func newProxyWorld(t testing.TB, allowed []string, hosts string, lookup func(context.Context, string) ([]netip.Addr, error), roots *tls.Config) *proxyWorld {
	t.Helper()
	var list []persona.NetHost
	for _, a := range allowed {
		h, err := persona.ParseNetHost(a)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, h)
	}
	m, err := ParseHosts(hosts)
	if err != nil {
		t.Fatal(err)
	}
	w := &proxyWorld{logs: &fake.LogBuffer{},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agent_egress_requests_total"}, []string{"outcome"})}
	w.p, err = New(Options{Allowed: func() []persona.NetHost { return list }, Hosts: m, Lookup: lookup,
		Requests: w.requests, Tracer: noop.NewTracerProvider().Tracer(""), Log: slog.New(slog.NewTextHandler(w.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.p.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go w.p.ServeConn(context.Background(), c)
		}
	}()
	proxyURL, _ := url.Parse("http://" + ln.Addr().String())
	w.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: roots}}
	return w
}

func (w *proxyWorld) get(t testing.TB, u string) (int, string) {
	t.Helper()
	resp, err := w.client.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxy(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.WriteString(rw, "plain upstream "+r.Host)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.WriteString(rw, "tls upstream")
	}))
	defer secure.Close()
	pport := strconv.Itoa(plain.Listener.Addr().(*net.TCPAddr).Port)
	sport := strconv.Itoa(secure.Listener.Addr().(*net.TCPAddr).Port)
	// rebind.test resolves to loopback in DNS (the lookup), not by the
	// operator's map.
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebind.test":
			return []netip.Addr{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("127.0.0.1")}, nil
		case "metadata.test":
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	roots := &tls.Config{RootCAs: secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, ServerName: "example.com"}
	w := newProxyWorld(t, []string{"listed.test:" + pport, "*.sub.test:" + sport, "rebind.test:" + pport, "metadata.test:" + pport, "127.0.0.1:" + pport},
		"listed.test=127.0.0.1, a.sub.test=127.0.0.1", lookup, roots)

	for _, tc := range []struct {
		name, url string
		status    int
		body      string
	}{
		{"listed host, plain", "http://listed.test:" + pport + "/x", 200, "plain upstream listed.test:" + pport},
		{"listed subdomain, CONNECT", "https://a.sub.test:" + sport + "/", 200, "tls upstream"},
		{"unlisted host", "http://other.test/", 403, "blocked by the persona's network allowlist: other.test"},
		{"unlisted host, CONNECT", "https://other.test/", 0, "Forbidden"},
		{"listed port only", "http://listed.test/", 403, "blocked by the persona's network allowlist: listed.test"},
		{"a name resolving to loopback", "http://rebind.test:" + pport + "/", 403, "allowlist: rebind.test:" + pport},
		{"a name resolving to the metadata service", "http://metadata.test:" + pport + "/", 403, "allowlist: metadata.test:" + pport},
		{"a loopback address", "http://127.0.0.1:" + pport + "/", 403, "allowlist: 127.0.0.1:" + pport},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := w.get(t, tc.url)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("got %d %q, want %d %q", status, body, tc.status, tc.body)
			}
		})
	}
	if a, r := testutil.ToFloat64(w.requests.WithLabelValues("allowed")), testutil.ToFloat64(w.requests.WithLabelValues("refused")); a != 2 || r != 6 {
		t.Errorf("counted allowed %v refused %v, want 2 and 6", a, r)
	}
	if n := strings.Count(w.logs.String(), "egress refused"); n != 6 {
		t.Errorf("%d refusal lines, want 6:\n%s", n, w.logs)
	}
}

func TestInternalAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		internal bool
	}{
		{"127.0.0.1", true}, {"10.1.2.3", true}, {"172.16.0.1", true}, {"192.168.1.1", true},
		{"169.254.169.254", true}, {"100.100.100.200", true}, {"0.0.0.0", true}, {"::1", true},
		{"fd00:ec2::254", true}, {"fe80::1", true}, {"::ffff:127.0.0.1", true}, {"224.0.0.1", true},
		{"203.0.113.7", false}, {"140.82.112.3", false}, {"2606:4700::1111", false},
	} {
		if got := internalAddr(netip.MustParseAddr(tc.addr)); got != tc.internal {
			t.Errorf("%s: internal %v, want %v", tc.addr, got, tc.internal)
		}
	}
}

func TestParseHosts(t *testing.T) {
	m, err := ParseHosts(" git.internal=10.0.0.5, git.internal=10.0.0.6,Mirror.Example.=::1 ")
	if err != nil {
		t.Fatal(err)
	}
	if len(m["git.internal"]) != 2 || m["mirror.example"][0] != netip.MustParseAddr("::1") {
		t.Fatalf("hosts %v", m)
	}
	for _, bad := range []string{"git.internal", "=10.0.0.1", "git.internal=nowhere"} {
		if _, err := ParseHosts(bad); err == nil || !strings.HasPrefix(err.Error(), "AGENT_EGRESS_HOSTS: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
