package runner

import (
	"context"
	"io"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Boot builds the production service from cfg, on the simulated platform
// and with the hooks of d. cmd/agent gives it: the service is wired there.
type Boot func(ctx context.Context, cfg *config.Config, d Deps) (Service, error)

// Service is the service a Boot built, as the simulator uses it.
type Service interface {
	// Run runs the service until ctx is done, then shuts it down.
	Run(ctx context.Context) error
	// Persona is the persona the service runs (the REPL's roles and
	// layers).
	Persona() *persona.Persona
	// AddSchedule stores a new schedule under id (schedule.New at the
	// simulated clock's time, in UTC) and wakes the scheduler, as the
	// schedule commands do.
	AddSchedule(ctx context.Context, id string, req schedule.Request) (schedule.Schedule, error)
	// WakeScheduler makes the scheduler read the due schedules again.
	WakeScheduler()
}

// Stores gives the service its database and takes it back when the
// service closes: store.InMemoryPool's methods.
type Stores interface {
	Get(ctx context.Context, opts store.Options) (*store.Store, error)
	Put(ctx context.Context, s *store.Store) error
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

// Deps are what the simulator gives the service besides its configuration.
type Deps struct {
	// Platform is both the transport events come from and the chat API
	// replies go to.
	Platform *platform.Chat
	// Model replaces the Messages API client.
	Model agent.Model
	// Log receives the service's logs (text).
	Log    io.Writer
	Getenv func(string) string
	// Spans are span processors added to the tracer provider (--trace).
	Spans []sdktrace.SpanProcessor
	// Soul, when set, is the SOUL.md, and the home is made only when
	// something is written there: nothing is read from it or seeded in it
	// at start.
	Soul []byte
	// Stores gives the in-memory database of a scenario with a temporary
	// home: at the first start one emptied by the scenario before, with
	// its parsed schema and prepared statements; after a restart the one
	// the service had. It is taken back at close.
	Stores Stores
	// Counts number what the service names in the simulation (schedules,
	// memories), one count per kind kept across restarts, so that a
	// transcript names them the same on every run.
	Counts *Counts
	// Started is when the simulation started (real time): what the
	// service dates by the simulated clock plus the real time elapsed
	// counts from it at every start.
	Started time.Time
	// OnHandled and OnDrop observe the gateway: the runner's waits and the
	// transcripts' drops.
	OnHandled func(ev *pipeline.Event, err error)
	OnDrop    func(ev *pipeline.Event, reason string)
	// OnToolCall observes every tool call, its input and result redacted
	// (the golden transcripts).
	OnToolCall func(name, input, result, outcome string)
	// Clock is the scheduler's clock: the simulation moves it (advance).
	Clock clock.Clock
	// OnScheduleRun is told of each scheduled run before it is delivered,
	// and OnSchedulerIdle each time the scheduler sleeps (schedule.Deps.Idle).
	OnScheduleRun   func(ev *pipeline.Event)
	OnSchedulerIdle func(until time.Time)
}
