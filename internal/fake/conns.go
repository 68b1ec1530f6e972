package fake

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// Conns counts the connections clients open to an httptest server and
// those the server saw closed: what a test of a client's connection pool
// checks.
type Conns struct{ opened, closed atomic.Int64 }

// CountConns counts srv's connections. It sets srv.Config.ConnState, so it
// is called before srv starts (httptest.NewUnstartedServer).
func CountConns(srv *httptest.Server) *Conns {
	c := &Conns{}
	c.watch(srv)
	return c
}

// watch counts srv's connections in c (srv not started yet).
func (c *Conns) watch(srv *httptest.Server) {
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			c.opened.Add(1)
		case http.StateClosed:
			c.closed.Add(1)
		}
	}
}

// Opened returns how many connections clients have opened.
func (c *Conns) Opened() int64 { return c.opened.Load() }

// Closed returns how many of them the server has seen closed.
func (c *Conns) Closed() int64 { return c.closed.Load() }

// InRounds makes rounds of calls in flight together: each round runs
// call(0) … call(calls-1) at once and waits for them all. The first error
// fails t, from the test's own goroutine.
func InRounds(t testing.TB, rounds, calls int, call func(i int) error) {
	t.Helper()
	for range rounds {
		var wg sync.WaitGroup
		errs := make([]error, calls)
		for i := range calls {
			wg.Go(func() { errs[i] = call(i) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}
