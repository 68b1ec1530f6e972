package service

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/agentview"
	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/internal/fleet"
	"github.com/persona-runtime/agent/internal/home"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/internal/metrics"
	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
	"github.com/persona-runtime/agent/pkg/tools"
)

// ChatAPI is what the service needs of the chat platform's Web API.
type ChatAPI interface {
	pipeline.Poster
	PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error
	Upload(ctx context.Context, u pipeline.Upload) error
	tools.Downloader
	SetStatus(ctx context.Context, channelID, threadTS, status string) error
	AuthTest(ctx context.Context) (pipeline.Identity, error)
	// The reads and reactions of the agent's chat tools.
	tools.ChatReader
	pipeline.ThreadReader // a thread's messages the bot has not seen (unseen.go)
	// The platform's agent surface: a thread's agent session, the DM's
	// suggested prompts.
	SetSessionStatus(ctx context.Context, u pipeline.SessionUpdate) error
	agentview.Chat
	// A turn's work shown as tasks in a streamed message.
	pipeline.TaskPoster
	// A person's App Home tab (internal/home).
	pipeline.HomePublisher
}

// Service is the running runtime: everything `agent start` builds.
type Service struct {
	cfg      *config.Config
	log      *slog.Logger
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	store    *store.Store
	persona  *persona.Persona
	metrics  *metrics.Metrics
	sessions *session.Manager
	redactor *redact.Redactor
	self     pipeline.Identity
	handler  pipeline.Handler
	gate     *approval.Gate
	builtins *tools.Builtins
	chat     ChatAPI
	home     *home.Home // the App Home tab (home.go)
	onDrop   func(ev *pipeline.Event, reason string)
	skills   *tools.Skills
	inbox    *inbox.Recorder
	gateway  *gateway.Gateway
	started  time.Time
	// ingress adds the HTTP ingress's routes when events come over HTTP.
	ingress func(chi.Router)
	// fleet and replica are set when replicas share the store (Postgres;
	// fleet.go): the store's fleet and this process's part in it.
	fleet   *store.Fleet
	replica *fleet.Replica
	// attachQuota holds the attachments of all threads to
	// AGENT_ATTACHMENTS_MAX_GB; prune deletes the old ones.
	attachQuota *tools.AttachQuota
	engine      *agent.Engine
	// runCtx is run's context: the service's life.
	runCtx context.Context
	// noBypass is why no thread may run in bypass here, "" when it may
	// (the sandbox's Status.BypassRefusal, set by newSandbox).
	noBypass string
	// schedBook is the book of schedules of the commands and the tools
	// (schedules.go); the scheduler sets its Notify and Now.
	schedBook *schedule.Book

	// idle closes the HTTP pools' idle connections once no session is
	// live (idle.go).
	idle *idleRelease
	// Clock is the service's clock for what waits on it (the scheduler);
	// the simulator's moves only when told (Deps.Clock).
	clock clock.Clock
	// scheduler is the single timer of scheduled work: call its Notify
	// after a schedule is created, removed, paused or resumed.
	scheduler *schedule.Scheduler
	// schedules turns the scheduler's due runs into events and gates them
	// (internal/schedule's run side).
	schedules *schedule.Runs
	schedWG   sync.WaitGroup
	// OnScheduleRun: Deps.OnScheduleRun.
	onScheduleRun func(ev *pipeline.Event)
	// memory is memory across threads (memory.go); memoryIDs:
	// Deps.MemoryIDs.
	memory    *memory.Memories
	memoryIDs func() string
	// landlockABI: Deps.LandlockABI.
	landlockABI func() int
	// deps are the dependencies New was given.
	deps Deps
	// connect is each person's sign-in to the "auth": "oauth" tool
	// servers (connect.go); mcp and registry are the mounted servers and
	// the tools, which a first sign-in may extend.
	connect  *connect.Connect
	mcp      *tools.MCPMount
	registry *tools.Registry

	closers []func(context.Context) error

	// git is the runtime's own git (runtimeGit): the knowledge bases and
	// the skills sync.
	git deps.Git
}

// Platform connects the service to a chat platform: the transport events
// come from and the API replies go to.
type Platform func(log *slog.Logger) (gateway.Transport, ChatAPI)

// Deps are what New takes besides the config.
type Deps struct {
	Stderr   io.Writer
	Getenv   func(string) string
	Platform Platform
	// Model replaces the Messages API client (the simulator's stub).
	Model agent.Model
	// Preflight, when set, checks the credentials with the platform and
	// the provider before the service connects (`agent start`, `dev`).
	Preflight func(ctx context.Context, log *slog.Logger) error
	// Spans are span processors added to the tracer provider (--trace).
	Spans []sdktrace.SpanProcessor
	// OnToolCall observes every tool call, its input and result redacted
	// (the simulator's transcripts).
	OnToolCall func(name, input, result, outcome string)
	// OnHandled and OnDrop observe the gateway (the simulator's waits).
	OnHandled func(ev *pipeline.Event, err error)
	OnDrop    func(ev *pipeline.Event, reason string)
	// Stores, when set, gives the in-memory database (the simulator's
	// scenarios: one emptied by the scenario before, with its parsed
	// schema and prepared statements; after a restart the one it had) and
	// takes it back at close.
	Stores Stores
	// ScheduleIDs, when set, makes the new schedules' ids (the
	// simulator's: the same at every run, so that a scenario can name one).
	ScheduleIDs func() string
	// Soul, when set, is the SOUL.md, and the home is made only when
	// something is written there (the simulator's scenarios): nothing is
	// read from it or seeded in it at start.
	Soul []byte
	// Clock, when set, is the service's clock (the simulator's, moved by
	// its advance step); nil: the real one.
	Clock clock.Clock
	// OnScheduleRun is told of each scheduled run before its delivery,
	// OnSchedulerIdle each time the scheduler sleeps (the simulator's
	// waits).
	OnScheduleRun   func(ev *pipeline.Event)
	OnSchedulerIdle func(until time.Time)
	// MemoryIDs, when set, makes the new memories' ids, so that a
	// scenario can name a memory. Nil: random ids.
	MemoryIDs func() string
	// ConnectStates, when set, makes the sign-in links' states (the
	// simulator's, so that its transcripts hold no random ids).
	ConnectStates func() string
	// LandlockABI, when set, is the kernel's Landlock ABI as the sandbox
	// sees it (a test playing a kernel without Landlock); nil asks the
	// kernel.
	LandlockABI func() int
	// StoreRetry is the retry policy of the stages' store calls (the zero
	// value: store.RetryPauses, on the system clock, logged to the
	// service's log); tests set its pauses and its fault.
	StoreRetry store.Retry
	// PruneEvery, when set, is how often the old inbox rows, event keys
	// and attachments are pruned (an hour).
	PruneEvery time.Duration
	// Metrics, when set, are the instruments the service reports to,
	// shared with other services (the simulator's scenarios, whose
	// metrics nobody scrapes: making a set with its series at zero was
	// a twentieth of a scenario's work). Nil: a set of its own, which
	// its metrics port serves.
	Metrics *metrics.Metrics
}

// Stores gives the service its database and takes it back when the
// service closes (store.InMemoryPool's methods: the simulator's scenarios).
type Stores interface {
	Get(ctx context.Context, opts store.Options) (*store.Store, error)
	Put(ctx context.Context, s *store.Store) error
}

// Config is the configuration the service runs with.
func (s *Service) Config() *config.Config { return s.cfg }

// Replicated reports whether the service shares its store with other
// replicas (a fleet, on Postgres).
func (s *Service) Replicated() bool { return s.fleet != nil }

// Workspace is the workspace of a thread, made if it does not exist yet.
func (s *Service) Workspace(threadKey string) (string, error) { return s.builtins.Workspace(threadKey) }
