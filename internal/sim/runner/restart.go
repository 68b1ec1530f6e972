package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/store"
)

// Restart stops the service, moves the simulated clock on by down while
// it is down, and starts the service again on the same database, home,
// platform and model, as a deploy does: the stopping service ends its
// turns as on SIGTERM (a card still waiting expires, and the thread is
// told), the started one catches up on the scheduled runs it missed and
// resumes or tells what its inbox left unfinished. It returns once the
// service has read its schedules and what that set going has settled. The
// transcript shows the restart.
func (s *Sim) Restart(ctx context.Context, down time.Duration) error {
	if down < 0 {
		return errors.New("restart: the time down is negative")
	}
	if s.boot == nil {
		return errors.New("restart: the simulation was not started")
	}
	// What is sent while the service is down waits for it, as the
	// platform holds what nobody acknowledged.
	s.chat.Reopen()
	s.stores.hold(true)
	err := s.stop()
	s.stores.hold(false)
	if err != nil {
		return fmt.Errorf("restart: stop: %w", err)
	}
	s.clock.Advance(down)
	s.tools.addPlain(s.chat.Len(), golden.RestartLine(down, s.clock.Now()))
	s.mu.Lock()
	seq := s.idleSeq
	s.mu.Unlock()
	svc, err := s.boot()
	if err != nil {
		return fmt.Errorf("restart: start: %w", err)
	}
	s.start(svc)
	if err := s.schedulerCaughtUp(ctx, seq); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return s.Settle(ctx, Injected{})
}

// keptStore is a simulation's database: the pool's at the first start,
// kept while the service restarts, given back to the pool at the end.
type keptStore struct {
	pool *store.InMemoryPool

	mu      sync.Mutex
	holding bool         // a restart: what the service puts back is kept
	held    *store.Store // the database between a stop and the next start
	// current is the database the running service was given (nil before
	// the first start): the runner reads an approval's state from it.
	current *store.Store
	// seed, when set, writes what the scenario starts with into the
	// database of the first start (signin.go: the people connected to a
	// served tool server), before the service reads it.
	seed func(context.Context, *store.Store) error
}

// Get returns the database kept over a restart, else one from the pool.
// A kept store keeps the options of its first Get: the simulation's
// logger writer and clock, the same at every start.
func (k *keptStore) Get(ctx context.Context, opts store.Options) (*store.Store, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, err := k.get(ctx, opts)
	if err == nil {
		k.current = st
	}
	return st, err
}

// get is Get's store; k.mu is held.
func (k *keptStore) get(ctx context.Context, opts store.Options) (*store.Store, error) {
	if st := k.held; st != nil {
		k.held = nil
		return st, nil
	}
	st, err := k.pool.Get(ctx, opts)
	if err != nil || k.seed == nil {
		return st, err
	}
	seed := k.seed
	k.seed = nil
	if err := seed(ctx, st); err != nil {
		return nil, errors.Join(err, k.pool.Put(ctx, st))
	}
	return st, nil
}

// approvalDecided reports whether the approval id is decided in the
// running service's database; ok is false when it cannot tell (no
// database, no such approval).
func (k *keptStore) approvalDecided(ctx context.Context, id string) (decided, ok bool) {
	k.mu.Lock()
	st := k.current
	k.mu.Unlock()
	if st == nil || id == "" {
		return false, false
	}
	a, err := st.GetApproval(ctx, id)
	if err != nil {
		return false, false
	}
	return a.State != store.ApprovalRequested, true
}

// Put keeps st for the next start during a restart, else gives it back
// to the pool.
func (k *keptStore) Put(ctx context.Context, st *store.Store) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.current == st {
		k.current = nil
	}
	if k.holding {
		k.held = st
		return nil
	}
	return k.pool.Put(ctx, st)
}

// hold says whether a Put is a restart's.
func (k *keptStore) hold(on bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.holding = on
}

// release gives a store still kept (a restart whose start failed) back
// to the pool.
func (k *keptStore) release(ctx context.Context) error {
	k.mu.Lock()
	st := k.held
	k.held = nil
	k.mu.Unlock()
	if st == nil {
		return nil
	}
	return k.pool.Put(ctx, st)
}
