package httppool_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/httppool"
)

// TestNewKeepsDefaultTransportsSettings: a pool is DefaultTransport's
// settings with more idle connections kept, and each New is a pool of
// its own.
func TestNewKeepsDefaultTransportsSettings(t *testing.T) {
	def := http.DefaultTransport.(*http.Transport)
	a, ok := httppool.New().(*http.Transport)
	if !ok {
		t.Fatalf("New() is %T, want *http.Transport", httppool.New())
	}
	if a.MaxIdleConnsPerHost != httppool.IdleConnsPerHost {
		t.Errorf("MaxIdleConnsPerHost = %d, want %d", a.MaxIdleConnsPerHost, httppool.IdleConnsPerHost)
	}
	if a.Proxy == nil || !a.ForceAttemptHTTP2 || a.IdleConnTimeout != def.IdleConnTimeout ||
		a.TLSHandshakeTimeout != def.TLSHandshakeTimeout || a.MaxIdleConns != def.MaxIdleConns {
		t.Errorf("New() lost DefaultTransport's settings: %+v", a)
	}
	if b := httppool.New(); b == http.RoundTripper(a) || a == def {
		t.Error("New() shares a pool")
	}
	if def.MaxIdleConnsPerHost != 0 {
		t.Errorf("DefaultTransport changed: MaxIdleConnsPerHost = %d", def.MaxIdleConnsPerHost)
	}
}

// TestPoolKeepsAndClosesItsConnections: calls in flight together reuse
// the connections of the calls before them (net/http's two kept per host
// opened the ones past two again each round: the test server speaks
// HTTP/1.1), and CloseIdle closes every one of them once the calls are
// done.
func TestPoolKeepsAndClosesItsConnections(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond) // the calls of a round overlap
		_, _ = io.WriteString(w, "ok")
	}))
	conns := fake.CountConns(srv)
	srv.Start()
	t.Cleanup(srv.Close)
	pool := httppool.New()
	client := &http.Client{Transport: pool}
	const calls, rounds = 6, 10
	fake.InRounds(t, rounds, calls, func(int) error {
		resp, err := client.Get(srv.URL)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	})
	// At most calls are open at once; a call may start just before
	// another's connection is back in the pool, hence the room.
	n := conns.Opened()
	if n > 2*calls {
		t.Errorf("%d rounds of %d calls at once opened %d connections, want at most %d", rounds, calls, n, 2*calls)
	}
	httppool.CloseIdle(pool)
	if !fake.Eventually(5*time.Second, func() bool { return conns.Closed() == n }) {
		t.Errorf("after CloseIdle the server saw %d of %d connections closed", conns.Closed(), n)
	}
}

// TestCloseIdleOfAnotherTransport: a round tripper without idle
// connections of its own is left alone.
func TestCloseIdleOfAnotherTransport(t *testing.T) {
	httppool.CloseIdle(roundTripper(func(*http.Request) (*http.Response, error) { return nil, nil }))
	httppool.CloseIdle(nil)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
