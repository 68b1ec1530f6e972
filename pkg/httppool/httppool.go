package httppool

import "net/http"

// IdleConnsPerHost is how many idle connections a pool keeps per host:
// more than the turns that run at once by default, so that the calls of
// turns running together reuse each other's connections. It bounds what
// a burst leaves open; the idle release lets that go.
const IdleConnsPerHost = 32

// New returns a new pool: a clone of http.DefaultTransport that keeps
// IdleConnsPerHost idle connections per host. If the program has replaced
// http.DefaultTransport with a transport of another type, New returns it
// as it is (it cannot be cloned).
func New() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = IdleConnsPerHost
	return t
}

// CloseIdle closes the idle connections of pool (as made by New); calls in
// flight keep theirs. A pool that has no idle connections of its own is
// left alone.
func CloseIdle(pool http.RoundTripper) {
	if p, ok := pool.(interface{ CloseIdleConnections() }); ok {
		p.CloseIdleConnections()
	}
}
