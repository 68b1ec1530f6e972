package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/persona-runtime/agent/internal/httpapi"
)

// The run loop: what the service does once New has built it.

// run serves HTTP and runs the gateway until ctx is done, then shuts down:
// the gateway drains its running turns, sessions close, the store closes.
func (s *Service) Run(ctx context.Context) error {
	// With a fleet, lost locks cancel everything below, the HTTP servers
	// included; ctx is replaced before any goroutine reads it.
	var cancel context.CancelFunc
	if s.fleet != nil {
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
	}
	var wg sync.WaitGroup
	servers := s.httpServers()
	httpErr := make(chan error, len(servers))
	serve := func(port int, h http.Handler) error {
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return fmt.Errorf("listen on port %d: %w", port, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := httpapi.Serve(ctx, ln, h, s.log); err != nil && !errors.Is(err, http.ErrServerClosed) {
				httpErr <- err
			}
		}()
		return nil
	}
	for _, sv := range servers {
		if err := serve(sv.port, sv.handler); err != nil {
			return err
		}
	}
	lost := make(chan error, 1)
	if s.fleet != nil {
		// Without its locks this replica could run what another takes
		// over: stop (the orchestrator restarts it) when they are lost.
		go func() {
			select {
			case <-s.fleet.Lost():
				lost <- errors.New("fleet: the database connection holding this replica's locks failed")
				s.gateway.Halt() // no grace: another replica takes these over
				cancel()
			case <-ctx.Done():
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.replica.Listen(ctx, s.gate, s.engine)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.pruneLoop(ctx)
	}()
	s.runCtx = ctx
	// Start-up leaves garbage (package init, the persona, the tools'
	// schemas, the first connections) and the pages it read cached in
	// the store's connection: free them and give the pages back
	// once the service is up, rather than when the scavenger gets to them.
	// Wall time on purpose, not s.clock: this is the process's memory, not
	// the persona's behaviour, and a simulated clock's jumps would force a
	// collection in the middle of a scenario. A failure only leaves the
	// caches as they were.
	releaseStartup := time.AfterFunc(time.Second, func() {
		if err := s.store.ReleaseMemory(ctx); err != nil && ctx.Err() == nil {
			s.log.DebugContext(ctx, "release the store's caches", "err", err)
		}
		debug.FreeOSMemory()
	})
	defer releaseStartup.Stop()
	defer s.idle.stop()
	stopWaits := context.AfterFunc(ctx, s.gate.Close)
	defer stopWaits()
	err := s.gateway.Run(ctx)
	s.schedWG.Wait() // the scheduler stops with ctx
	s.sessions.Close()
	wg.Wait()
	select {
	case herr := <-httpErr:
		err = errors.Join(err, fmt.Errorf("http: %w", herr))
	default:
	}
	s.close(context.Background())
	select {
	case lerr := <-lost:
		err = errors.Join(err, lerr)
	default:
	}
	return err
}

// close releases what New opened, last opened first.
func (s *Service) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](ctx); err != nil && s.log != nil {
			s.log.Warn("shutdown", "err", err)
		}
	}
	s.closers = nil
}
