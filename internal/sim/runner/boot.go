package runner

import (
	"context"
	"encoding/base32"
	"strings"
	"sync"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/pkg/persona"
)

// Boot builds the service the simulation runs from cfg and d. Nil: the
// production service (service.New); the runner's own tests give a
// stand-in.
type Boot func(ctx context.Context, cfg *config.Config, d service.Deps) (Service, error)

// Service is the service a Boot built, as the simulator uses it:
// *service.Service's methods.
type Service interface {
	// Run runs the service until ctx is done, then shuts it down.
	Run(ctx context.Context) error
	// Persona is the persona the service runs (the REPL's roles and
	// layers).
	Persona() *persona.Persona
	// AddSchedule stores a new schedule under id (schedule.New at the
	// service's clock's time, in UTC) and wakes the scheduler, as the
	// schedule commands do.
	AddSchedule(ctx context.Context, id string, req schedule.Request) (schedule.Schedule, error)
	// WakeScheduler makes the scheduler read the due schedules again.
	WakeScheduler()
}

var _ Service = (*service.Service)(nil)

// bootService is the production service.
func bootService(ctx context.Context, cfg *config.Config, d service.Deps) (Service, error) {
	return service.New(ctx, cfg, d)
}

// Counts numbers things by kind; safe for concurrent use.
type Counts struct {
	mu sync.Mutex
	n  map[string]uint64
}

// Next returns kind's next number, from 1.
func (c *Counts) Next(kind string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]uint64{}
	}
	c.n[kind]++
	return c.n[kind]
}

// ids numbers a simulation's things of kind in store.NewID's shape with
// prefix (saaaaaaab, saaaaaaac, … for the schedules), counted by counts
// across restarts, so that a golden file holds the same ids at every run
// and a scenario's steps can name them.
func ids(prefix, kind string, counts *Counts) func() string {
	return func() string {
		v := counts.Next(kind)
		b := []byte{byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	}
}
