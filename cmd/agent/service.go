package main

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
	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/internal/metrics"
	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/sim/runner"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
	"github.com/persona-runtime/agent/pkg/tools"
)

// chatAPI is what the service needs of the chat platform's Web API.
type chatAPI interface {
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
}

// service is the running runtime: everything `agent start` builds.
type service struct {
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
	chat     chatAPI
	onDrop   func(ev *pipeline.Event, reason string)
	skills   *tools.Skills
	inbox    *inbox.Recorder
	gateway  *gateway.Gateway
	started  time.Time
	// ingress adds the HTTP ingress's routes when events come over HTTP.
	ingress func(chi.Router)
	// fleet is set when replicas share the store (Postgres; fleet.go).
	fleet *store.Fleet
	// attachQuota holds the attachments of all threads to
	// AGENT_ATTACHMENTS_MAX_GB; prune deletes the old ones.
	attachQuota *tools.AttachQuota
	// yields: event id → when it first let an older message go first.
	yields sync.Map
	engine *agent.Engine
	// runCtx is run's context: the service's life.
	runCtx context.Context
	// noBypass is why no thread may run in bypass here ("" when it may;
	// doors.go).
	noBypass string
	// schedBook is the book of schedules of the commands and the tools
	// (schedules.go); the scheduler sets its Notify and Now.
	schedBook *commands.Schedules

	// clock is the service's clock for what waits on it (the scheduler);
	// the simulator's moves only when told (serviceDeps.clock).
	clock clock.Clock
	// scheduler is the single timer of scheduled work: call its Notify
	// after a schedule is created, removed, paused or resumed.
	scheduler *schedule.Scheduler
	// schedules turns the scheduler's due runs into events and gates them
	// (schedule_run.go).
	schedules *scheduleRuns
	schedWG   sync.WaitGroup
	// onScheduleRun: serviceDeps.onScheduleRun.
	onScheduleRun func(ev *pipeline.Event)
	// memory is memory across threads (memory.go); memoryIDs:
	// serviceDeps.memoryIDs.
	memory    *memory.Memories
	memoryIDs func() string

	closers []func(context.Context) error
}

// platform connects the service to a chat platform: the transport events
// come from and the API replies go to.
type platform func(log *slog.Logger) (gateway.Transport, chatAPI)

// serviceDeps are what newService takes besides the config.
type serviceDeps struct {
	stderr   io.Writer
	getenv   func(string) string
	platform platform
	// model replaces the Messages API client (the simulator's stub).
	model agent.Model
	// preflight, when set, checks the credentials with the platform and
	// the provider before the service connects (`agent start`, `dev`).
	preflight func(ctx context.Context, log *slog.Logger) error
	// spans are span processors added to the tracer provider (--trace).
	spans []sdktrace.SpanProcessor
	// onToolCall observes every tool call, its input and result redacted
	// (the simulator's transcripts).
	onToolCall func(name, input, result, outcome string)
	// onHandled and onDrop observe the gateway (the simulator's waits).
	onHandled func(ev *pipeline.Event, err error)
	onDrop    func(ev *pipeline.Event, reason string)
	// stores, when set, gives the in-memory database (the simulator's
	// scenarios: one emptied by the scenario before, with its parsed
	// schema and prepared statements; after a restart the one it had) and
	// takes it back at close.
	stores runner.Stores
	// scheduleIDs, when set, makes the new schedules' ids (the
	// simulator's: the same at every run, so that a scenario can name one).
	scheduleIDs func() string
	// soul, when set, is the SOUL.md, and the home is made only when
	// something is written there (the simulator's scenarios): nothing is
	// read from it or seeded in it at start.
	soul []byte
	// clock, when set, is the service's clock (the simulator's, moved by
	// its advance step); nil: the real one.
	clock clock.Clock
	// onScheduleRun is told of each scheduled run before its delivery,
	// onSchedulerIdle each time the scheduler sleeps (the simulator's
	// waits).
	onScheduleRun   func(ev *pipeline.Event)
	onSchedulerIdle func(until time.Time)
	// memoryIDs, when set, makes the new memories' ids, so that a
	// scenario can name a memory. Nil: random ids.
	memoryIDs func() string
}
