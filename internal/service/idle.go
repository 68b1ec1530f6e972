package service

import (
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
)

// idleQuiet is how long no session must have been live before the HTTP
// pools' idle connections are closed (idleRelease): the calls of the last
// session's close finish well inside it.
const idleQuiet = 2 * time.Second

// idler is an HTTP client's pool of idle connections (pkg/httppool): the
// chat platform's (slackio.Chat), the model's (llm.Client) and the tool
// servers' over HTTP (tools.MCPMount). The simulator's in-process platform
// and model have none; its tool servers over HTTP have theirs, released
// on the scenario's clock.
type idler interface{ CloseIdleConnections() }

// idleRelease closes the idle connections of the chat's, the model's and
// the tool servers' HTTP pools once no session has been live for
// idleQuiet. The pools keep up to 32 connections per host for the turns
// running together (over HTTP/1.1 each call in flight holds one); a
// persona at rest keeps its socket and nothing more, not those
// connections until net/http's 90 seconds pass.
type idleRelease struct {
	live  func() int
	pools []idler
	clock clock.Clock

	mu    sync.Mutex
	timer clock.Timer
}

// newIdleRelease returns the release of those of clients that have a
// pool; live counts the live sessions.
func newIdleRelease(live func() int, c clock.Clock, clients ...any) *idleRelease {
	r := &idleRelease{live: live, clock: clock.Or(c)}
	for _, p := range clients {
		r.add(p)
	}
	return r
}

// add releases client's pool too, if it has one. It is called while the
// service is built, before any session is.
func (r *idleRelease) add(client any) {
	if p, ok := client.(idler); ok {
		r.pools = append(r.pools, p)
	}
}

// sessionClosed arms the release when no session is live any more, or
// arms it again for idleQuiet from now.
func (r *idleRelease) sessionClosed() {
	if len(r.pools) == 0 || r.live() > 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer == nil {
		r.timer = r.clock.AfterFunc(idleQuiet, r.release)
		return
	}
	r.timer.Reset(idleQuiet)
}

// release closes the pools' idle connections unless a session is live
// again (its calls keep theirs). Connections in use are not touched.
func (r *idleRelease) release() {
	if r.live() > 0 {
		return
	}
	for _, p := range r.pools {
		p.CloseIdleConnections()
	}
}

// stop disarms the release (the service is stopping).
func (r *idleRelease) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
}
