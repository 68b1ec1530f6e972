package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/metrics"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// bot is the bot's identity in the simulator.
var bot = pipeline.Identity{UserID: sim.BotUser, BotID: "B0BOT", TeamID: "T0SIM"}

// simMetrics are the instruments every simulated service reports to: the
// simulator serves no metrics and reads none, so its scenarios share one
// set (each making its own, with every series at zero, was a twentieth
// of a scenario's work).
var simMetrics = sync.OnceValue(metrics.New)

// stepTimeout bounds every wait of a scenario step. The waits are
// event-driven: a passing step returns as soon as its condition holds.
const stepTimeout = 5 * time.Second

// pool holds the scenarios' in-memory databases, each handed to the next
// scenario emptied, with its parsed schema and prepared statements.
var pool store.InMemoryPool

// Options configure a simulation.
type Options struct {
	// Boot builds the service; nil: the production service.
	Boot Boot
	// LandlockABI is the kernel's Landlock ABI; nil asks the kernel.
	LandlockABI func() int
	// Soul is the SOUL.md to run; required with a temporary home.
	Soul []byte
	// Behaviour is the scripted model's behaviour ("": reply).
	Behaviour string
	// Recorded are the answers the scripted model plays when Behaviour is
	// scripted.Recorded (a recorded thread's scenario).
	Recorded [][]scripted.Answer
	// Model replaces the scripted model (a live model).
	Model agent.Model
	// Config is the shared configuration for a live model; nil: the sim
	// world's (bypass, the defaults).
	Config *config.Config
	// Home is the service's home; "": a temporary home, made only when
	// something is written there and removed at close.
	Home string
	// Log receives the service's logs (text); nil discards them.
	Log    io.Writer
	Getenv func(string) string
	// Observer sees every transcript entry (platform.Chat.Observer).
	Observer func(platform.Entry)
	// Spans are span processors added to the service's tracer (--trace).
	Spans []sdktrace.SpanProcessor
	// Scope is what a step waits for before it returns.
	Scope Scope
	// SettleTimeout bounds a step's wait; 0: 5 s, a scripted step's bound.
	SettleTimeout time.Duration
	// AgentView: the platform takes agent sessions and has their stop
	// button (platform.Chat.AgentView).
	AgentView bool
	// Tasks: the platform shows tasks (platform.Chat.Tasks).
	Tasks bool
	// SignIn are tool servers each person signs in to (sim.Scenario.SignIn).
	SignIn []string
	// Personas are the other personas of a team (sim.Scenario.Personas),
	// each booted as a service of its own on the same platform (team.go).
	Personas []TeamPersona
	// ToolServers are tool servers with per-person sign-in served here
	// (sim.Scenario.ToolServers): started only for a scenario that has
	// some.
	ToolServers []sim.ToolServer
}

// Scope is what a step waits for.
type Scope int

const (
	// All waits for every injected event: a scenario's world is its own,
	// and its transcript is the same on every run only when each step ends
	// what it set going before the next starts.
	All Scope = iota
	// Own waits for the step's own events only: in the REPL an earlier turn
	// may wait on a card for as long as nobody clicks.
	Own
)

// Sim is one running simulation: the production service on the simulated
// platform, with the scripted model or a live one.
type Sim struct {
	chat     *platform.Chat
	model    agent.Model
	scripted *scripted.Model
	home     string // a temporary home, removed at close; "" for none
	scope    Scope
	settle   time.Duration

	mu       sync.Mutex
	pending  map[string]bool   // injected event ids not handled yet
	drops    map[string]string // event id → drop reason
	stopped  map[string]bool   // the stop clicks that stopped a turn
	injected []injected        // every injected event, in order
	seq      int
	tools    toolLog // the tool calls, for the golden transcript
	// progress is closed and replaced whenever an event is handled (or
	// the scheduler goes to sleep).
	progress chan struct{}
	// clock is the service's clock (advance moves it: the scheduler, the
	// cards' timeouts, the stamps of what is stored); idleSeq counts the
	// scheduler's sleeps, idleUntil is what the last one sleeps until.
	clock     *clock.Manual
	idleSeq   int
	idleUntil time.Time
	schedules int      // made by schedule steps: their ids
	served    []served // the scenario's tool servers (signin.go)

	// boot builds the service again (a restart) in life, the context
	// Start was given: a restart's service lives as long as the first
	// would have, not as long as the step that restarted it. stores keeps
	// its database across restarts.
	boot   func() (Service, error)
	life   context.Context
	stores *keptStore
	// counts number what the service names (schedules, memories) across
	// restarts.
	counts *Counts

	// team are the other personas of a team, running (team.go); held are
	// the events the platform delivers of its own accord, waiting for the
	// simulation to be idle, and relays all of them, for the transcript.
	team   []*member
	held   []held
	relays []relayed

	// run guards the running service: a restart replaces it.
	run struct {
		sync.Mutex
		svc    Service
		cancel context.CancelFunc
		done   chan error
	}
}

// injected is an event the simulation handed to the service.
type injected struct {
	id, typ string
	thread  string // the thread key of a message
}

// Start boots the service on the simulated platform and runs it until
// Close.
func Start(ctx context.Context, o Options) (*Sim, error) {
	boot := o.Boot
	if boot == nil {
		boot = bootService
	}
	s := &Sim{pending: map[string]bool{}, drops: map[string]string{}, stopped: map[string]bool{},
		progress: make(chan struct{}), scope: o.Scope, settle: o.SettleTimeout, clock: newSimClock(), stores: &keptStore{pool: &pool}}
	if s.settle == 0 {
		s.settle = stepTimeout
	}
	home := o.Home
	var soul []byte // given to the service: a temporary home is not made at start
	if home == "" {
		// A temporary home is made only if the scenario writes there
		// (a workspace, a skill): making, filling and removing one cost
		// a scenario ~0.45 ms on this project's machine, a tenth of it.
		// Its name is random, and what is made is made 0700.
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		home = filepath.Join(os.TempDir(), "agent-sim-"+hex.EncodeToString(b[:]))
		s.home, soul = home, o.Soul
		if soul == nil {
			return nil, errors.New("sim: a temporary home needs the SOUL.md")
		}
	} else {
		if err := os.MkdirAll(home, 0o700); err != nil {
			return nil, err
		}
		if o.Soul != nil {
			if err := os.WriteFile(filepath.Join(home, "SOUL.md"), o.Soul, 0o600); err != nil {
				s.cleanup()
				return nil, err
			}
		}
	}
	cfg := s.config(o, home)
	if len(o.SignIn) > 0 || len(o.ToolServers) > 0 {
		if err := s.signIn(o, home, cfg); err != nil {
			s.cleanup()
			return nil, err
		}
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(k string) string {
			if k == "PATH" {
				return os.Getenv("PATH")
			}
			return ""
		}
	}
	s.chat = &platform.Chat{Bot: bot, Observer: o.Observer, AgentView: o.AgentView, Tasks: o.Tasks}
	s.model = o.Model
	if s.model == nil {
		var m *scripted.Model
		var err error
		if o.Behaviour == scripted.Recorded {
			m = scripted.NewRecorded(o.Recorded)
		} else if m, err = scripted.New(cmp.Or(o.Behaviour, "reply")); err != nil {
			s.cleanup()
			return nil, err
		}
		s.scripted, s.model = m, m
	}
	counts := &Counts{}
	deps := service.Deps{
		Stderr: logw, Getenv: getenv, Model: s.model, Spans: o.Spans, Soul: soul, Stores: s.stores,
		Platform:    func(*slog.Logger) (gateway.Transport, service.ChatAPI) { return s.chat, s.chat },
		ScheduleIDs: ids("s", "schedule", counts), MemoryIDs: ids("m", "memory", counts),
		ConnectStates: ids("c", "sign-in", counts),
		LandlockABI:   o.LandlockABI,
		Metrics:       simMetrics(),
		OnHandled:     s.onHandled, OnDrop: s.onDrop,
		Clock: s.clock, OnScheduleRun: s.onScheduleRun, OnSchedulerIdle: s.onSchedulerIdle,
		OnToolCall: func(name, input, result, outcome string) {
			// The temporary home is named before the line is cut to
			// length, so that its random name's length changes nothing.
			if s.home != "" {
				input, result = strings.ReplaceAll(input, s.home, "$AGENT_HOME"), strings.ReplaceAll(result, s.home, "$AGENT_HOME")
			}
			s.tools.add(s.chat.Len(), golden.ToolLine(name, input, result, outcome))
		},
	}
	s.counts = counts
	s.life = ctx
	s.boot = func() (Service, error) { return boot(ctx, cfg, deps) }
	svc, err := s.boot()
	if err != nil {
		s.cleanup()
		return nil, err
	}
	s.start(svc)
	if len(o.Personas) > 0 {
		if err := s.startTeam(o, boot, deps); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// start runs svc until Close or a restart stops it.
func (s *Sim) start(svc Service) {
	runCtx, cancel := context.WithCancel(s.life)
	done := make(chan error, 1)
	s.run.Lock()
	s.run.svc, s.run.cancel, s.run.done = svc, cancel, done
	s.run.Unlock()
	go func() { done <- svc.Run(runCtx) }()
}

// stop stops the running service, if any, and waits for it.
func (s *Sim) stop() error {
	s.run.Lock()
	cancel, done := s.run.cancel, s.run.done
	s.run.cancel, s.run.done = nil, nil
	s.run.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	return <-done
}

// config is the service's configuration: the shared one for a live model,
// the sim world's otherwise, with the simulator's own home and state.
func (s *Sim) config(o Options, home string) *config.Config {
	cfg := &config.Config{}
	if o.Config != nil {
		*cfg = *o.Config
	} else {
		cfg.DefaultMode, cfg.AutoAllowTools, cfg.IdleMinutes = "bypass", config.DefaultAutoAllowTools, config.DefaultIdleMinutes
		cfg.MaxTurns, cfg.PackageRunner, cfg.LogLevel = config.DefaultMaxTurns, config.DefaultPackageRunner, "warn"
		landlock := o.LandlockABI
		if landlock == nil {
			landlock = sandbox.LandlockABI
		}
		if landlock() == 0 {
			// The scripted world runs in bypass, and its one command (echo)
			// may run unconfined where the kernel has no sandbox: the
			// refusal of persona.CheckBypass guards a persona's
			// configuration, and a live model gets the shared
			// configuration's own AGENT_SANDBOX.
			cfg.Sandbox = string(sandbox.ModeOff)
		}
	}
	cfg.Home, cfg.DBPath, cfg.Workspaces = home, filepath.Join(home, "db.sqlite"), filepath.Join(home, "workspaces")
	// The simulator's state is its own: never the persona's Postgres (it
	// would join the live replicas' fleet).
	cfg.DBURL = ""
	if o.Home == "" {
		cfg.DBPath = store.InMemory // a scenario's database lives as long as the scenario
	}
	// No health or metrics port: the simulator serves none (its
	// scenarios share one set of metrics, simMetrics).
	cfg.HealthPort, cfg.MetricsPort, cfg.LogFormat = 0, 0, "text"
	return cfg
}

// Platform is the simulated platform the service runs on.
func (s *Sim) Platform() *platform.Chat { return s.chat }

// Service is the service Boot built, the one running since the last
// restart.
func (s *Sim) Service() Service {
	s.run.Lock()
	defer s.run.Unlock()
	return s.run.svc
}

// Model is the model the service runs: the scripted one or a live one.
func (s *Sim) Model() agent.Model { return s.model }

// Scripted is the scripted model; nil when a live model runs.
func (s *Sim) Scripted() *scripted.Model { return s.scripted }

// Home is the temporary home, removed at close; "" when the simulation
// runs in a home of its caller's.
func (s *Sim) Home() string { return s.home }

// Close stops the service, gives its database back and removes a
// temporary home.
func (s *Sim) Close() error {
	err := s.stop()
	if len(s.team) > 0 {
		err = errors.Join(err, s.stopTeam())
	}
	err = errors.Join(err, s.stores.release(context.Background()))
	s.cleanup()
	return err
}

func (s *Sim) cleanup() {
	s.closeServed()
	if s.home != "" {
		os.RemoveAll(s.home)
	}
}
