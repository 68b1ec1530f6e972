package service

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/agentview"
	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/internal/feedback"
	"github.com/persona-runtime/agent/internal/fleet"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/ingest"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/internal/metrics"
	"github.com/persona-runtime/agent/internal/mrkdwn"
	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/soulx"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/internal/telemetry"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/gateway/slackio"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/session"
	"github.com/persona-runtime/agent/pkg/tools"
)

// New builds the service from cfg: logger, tracing, store, persona,
// metrics, chat API, model, sessions, tools, agent and the pipeline. The
// platform is a parameter so that the simulator can swap it; `agent start`
// passes socket mode and the Web API.
func New(ctx context.Context, cfg *config.Config, d Deps) (_ *Service, err error) {
	s := &Service{cfg: cfg, started: clock.Or(d.Clock).Now(), clock: d.Clock, onScheduleRun: d.OnScheduleRun,
		memoryIDs: d.MemoryIDs, landlockABI: d.LandlockABI, deps: d}
	defer func() {
		if err != nil {
			s.close(context.Background())
		}
	}()
	// The sandbox's questions to the kernel (two helper processes, a
	// cgroup) run beside the rest of the start; newSandbox takes their
	// answers.
	sandbox.Prewarm(sandbox.Options{Mode: sandbox.Mode(cfg.Sandbox), Net: sandbox.Net(cfg.SandboxNet)})
	// mcp.json first: the credentials its tool servers are given are
	// scrubbed from everything the runtime says, its logs included.
	mcpConf, err := tools.LoadMCPConfig(filepath.Join(cfg.Home, "mcp.json"), d.Getenv)
	if err != nil {
		return nil, err
	}
	if err := connect.Required(len(mcpConf.OAuth()), cfg.SecretKey); err != nil {
		return nil, err
	}
	secrets := append(cfg.Secrets(), mcpConf.Secrets()...)
	s.log = telemetry.NewLogger(d.Stderr, cfg.LogFormat, telemetry.ParseLevel(cfg.LogLevel), secrets...)
	if cfg.Database() != store.InMemory { // not the simulator's scenarios: a service of its own
		applyMemoryLimit(d.Getenv, os.ReadFile, s.log)
	}
	transport, chat := d.Platform(s.log)
	if in, ok := transport.(interface{ Routes(chi.Router) }); ok {
		s.ingress = in.Routes
	}

	tp, shutdown, err := telemetry.Setup(ctx, Name, Version, d.Getenv, d.Stderr, d.Spans...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	s.tp, s.tracer = tp, tp.Tracer("github.com/persona-runtime/agent")
	s.closers = append(s.closers, shutdown)

	if d.Soul == nil {
		if seeded, err := persona.Seed(cfg.Home); err != nil {
			return nil, err
		} else if seeded {
			s.log.Warn("seeded a starter SOUL.md: fill in its placeholders, then start again", "path", filepath.Join(cfg.Home, "SOUL.md"))
		}
	}
	if d.Stores != nil && cfg.Database() == store.InMemory {
		if s.store, err = d.Stores.Get(ctx, store.Options{Logger: s.log, Clock: d.Clock}); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		s.closers = append(s.closers, func(ctx context.Context) error { return d.Stores.Put(ctx, s.store) })
	} else {
		if s.store, err = store.Open(ctx, cfg.Database(), store.Options{Logger: s.log, Clock: d.Clock}); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		s.closers = append(s.closers, func(context.Context) error { return s.store.Close() })
	}
	if err := s.joinFleet(ctx); err != nil {
		return nil, err
	}
	s.metrics = d.Metrics
	if s.metrics == nil {
		s.metrics = metrics.New()
	}
	if sm, ok := transport.(interface{ SetConnectedGauge(slackio.Gauge) }); ok {
		sm.SetConnectedGauge(s.metrics.SocketGauge()) // agent_socket_connected, socket mode only
	}
	llmMetrics := &llm.Metrics{Requests: s.metrics.ModelRequests, Tokens: s.metrics.ModelTokens, Duration: s.metrics.ModelDuration}
	x, err := soulx.NewExtractor(cfg, s.log, s.tracer, llmMetrics)
	if err != nil {
		return nil, err
	}
	if s.persona, err = soulx.Load(ctx, filepath.Join(cfg.Home, "SOUL.md"), d.Soul, personaCache(s.store), x, s.log); err != nil {
		return nil, err
	}

	patterns, err := redact.PersonaPatterns(s.persona)
	if err != nil {
		return nil, err
	}
	s.redactor = redact.New(secrets, patterns)

	if d.Preflight != nil {
		if err := d.Preflight(ctx, s.log); err != nil {
			return nil, err
		}
	}
	if s.self, err = chat.AuthTest(ctx); err != nil {
		return nil, fmt.Errorf("chat auth.test: %w", err)
	}
	s.log.Info("chat identity", "bot_user_id", s.self.UserID, "bot_id", s.self.BotID, "team_id", s.self.TeamID)

	var model agent.Model = d.Model
	if model == nil {
		client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.Model},
			s.log, s.tracer, llmMetrics)
		if err != nil {
			return nil, fmt.Errorf("model client: %w", err)
		}
		model = client
	}

	closeSession := closeAgentSession(chat, s.ended, s.log)
	s.idle = newIdleRelease(func() int { return s.sessions.Live() }, d.Clock, chat, model)
	if s.sessions, err = session.New(ctx, session.Options{Store: store.RetrySessions{Sessions: s.store.Sessions(s.fleet != nil), Retry: s.storeRetry()}, NotFound: store.ErrNotFound,
		NewID: store.NewID, Idle: cfg.IdleTimeout(), Live: s.metrics.SessionsLive, Log: s.log,
		OnIdle: func(ctx context.Context, threadKey string) {
			closeSession(ctx, threadKey)
			s.idle.sessionClosed()
		}}); err != nil {
		return nil, err
	}

	gateOpts := approval.Options{Store: s.store, Chat: chat, Approvers: s.persona, Manager: s.persona.Manager.UserID,
		NewID: store.NewID, Outcomes: s.metrics.Approvals, Log: s.log, Clock: d.Clock}
	if s.fleet != nil {
		gateOpts.Notify, gateOpts.Poll = s.replica.AnnounceApproval, fleet.ApprovalPoll
	}
	gate, err := approval.New(gateOpts)
	if err != nil {
		return nil, err
	}
	s.gate = gate
	if s.fleet == nil && cfg.Database() != store.InMemory {
		// Replicas expire only what a stopped replica waited for (sweep):
		// the others' cards are still waited for. A database in memory is
		// new: nothing waits in it.
		if n, err := gate.ExpirePending(ctx); err != nil {
			return nil, fmt.Errorf("expire pending approvals: %w", err)
		} else if n > 0 {
			s.log.Info("expired approvals left pending by the last run", "count", n)
		}
	}

	if s.schedBook, err = s.newScheduleBook(chat, d.ScheduleIDs); err != nil {
		return nil, err
	}
	if err := s.newConnect(ctx, mcpConf, chat); err != nil {
		return nil, err
	}
	registry, err := s.newTools(ctx, d, mcpConf, secrets, chat)
	if err != nil {
		return nil, err
	}
	if s.mcp != nil {
		s.idle.add(s.mcp)
	}
	s.chat = chat
	if l, ok := chat.(interface{ SetLoadingMessages([]string) }); ok {
		l.SetLoadingMessages(s.persona.LoadingMessages)
	}
	if o, ok := chat.(interface {
		OnDeliveryFailure(func(slackio.DeliveryFailure))
	}); ok {
		o.OnDeliveryFailure(func(f slackio.DeliveryFailure) { s.metrics.DeliveryFailures.WithLabelValues(f.Error).Inc() })
	}

	attach := s.attachments(chat)
	models := s.newModels(model.Model())
	budgets, err := s.newBudget(gate, models.Choices)
	if err != nil {
		return nil, err
	}
	prompts := &agentview.Prompts{Chat: chat, Prompts: s.persona.SuggestedPrompts, Log: s.log}
	s.metrics.Models(models.Choices...)
	engine, err := agent.New(agent.Options{
		Model: model, ModelOf: s.threadModel(models), History: s.store, Tools: registry, Prompt: s.prompt, Status: chat.SetStatus,
		Budget: budgets,
		Attach: attach.Save, Load: attach.Load, Unseen: s.threadContext(chat),
		Sessions: chat.SetSessionStatus, NewDMThread: prompts.Offer,
		Gate: &approval.ToolGate{Gate: gate, AutoAllow: tools.ParseAllowList(cfg.AutoAllowed()), Redact: s.redactor.Redact,
			Shared: s.builtins.Shared, ActsAs: s.connect.ActsAs},
		Self: func() pipeline.Identity { return s.self }, MaxTurns: cfg.MaxTurns,
		Redact: s.redactor.Redact, Tracer: s.tracer, Log: s.log,
		Metrics: agent.Metrics{Turns: s.metrics.Turns, TurnDuration: s.metrics.TurnDuration, StopGuard: s.metrics.StopGuard,
			ToolCalls: s.metrics.ToolCalls, ToolDuration: s.metrics.ToolDuration},
		OnToolCall: s.toolObserver(d.OnToolCall),
		Stream:     cfg.Stream != "off", StreamSettled: s.redactor.Settled,
		FirstTurn: s.memories().FirstTurn, Now: s.now, Tasks: chat,
	})
	if err != nil {
		return nil, err
	}
	// Closed before the store (closers run last first): a turn's
	// background writes land before the database closes.
	s.closers = append(s.closers, func(context.Context) error { engine.Wait(); return nil })

	ingester := &ingest.Ingester{Home: cfg.Home, Store: s.store, Model: model, Mandate: s.persona.Mandate, Author: s.gitAuthor(), Log: s.log,
		Git: s.git}
	s.engine = engine
	var control commands.Engine = engine
	if s.fleet != nil {
		control = s.replica.Engine(engine)
	}
	commands := &commands.Commands{Store: s.store, Engine: control, Persona: s.persona, DefaultMode: pipeline.Mode(cfg.DefaultMode),
		NoBypass: s.noBypass, Self: func() pipeline.Identity { return s.self }, Ingest: ingester, Log: s.log,
		Sessions: chat.SetSessionStatus, Schedules: schedule.Commands{B: s.schedBook}, Mutes: s.store, Models: models, Now: s.now,
		Memory: memory.Commands{M: s.memories()}, Connections: connect.Commands{C: s.connect}, Private: chat.PostEphemeral}
	s.onDrop = d.OnDrop
	clicks := feedback.Clicks{Next: gate, Store: s.store, Chat: chat, Votes: s.metrics.Feedback, Log: s.log}
	s.wireSchedules(chat)
	s.handler = s.chain(engine, clicks, commands, prompts, chat)
	s.home = s.newHome(chat, budgets)
	s.handler = homeTab{home: s.home, next: s.handler}
	s.inbox = inbox.New(inbox.Options{Store: s.store, Chat: chat, Self: func() pipeline.Identity { return s.self },
		Redact: s.redactor.Redact, Outcomes: s.metrics.InboxEvents, Log: s.log})
	gwConfig := gateway.Config{OnHandled: s.onHandled(d.OnHandled), Inbox: s.inbox, OnStart: s.startThenResume,
		Grace: cfg.ShutdownGrace, Self: func() pipeline.Identity { return s.self }, Clock: d.Clock}
	if s.fleet != nil {
		gwConfig.LockThread = s.replica.LockThread
	}
	s.gateway = gateway.New(transport, s.handler, s.tracer, s.log, s.metrics.Events, gwConfig)
	if err := s.newScheduler(d.OnSchedulerIdle); err != nil {
		return nil, err
	}
	return s, nil
}

// chain assembles the pipeline: the stages in the order of the design.
func (s *Service) chain(engine pipeline.Agent, actions pipeline.Actions, commands pipeline.Commands, home pipeline.Home,
	chat pipeline.Poster) pipeline.Handler {
	m := s.metrics.Stage()
	self := func() pipeline.Identity { return s.self }
	threads := store.RetryThreads{Threads: s.store, Retry: s.storeRetry()}
	split := func(text string) []string { return mrkdwn.Split(text, mrkdwn.MaxMessageLen) }
	return pipeline.Chain(pipeline.NewDeliver(chat, split),
		pipeline.Recover(),
		pipeline.NewDrop(s.tracer, m, pipeline.DropDeps{Roster: s.persona, Seen: store.RetrySeen{SeenStore: s.store, Retry: s.storeRetry()}, Locks: threads,
			Mutes: serviceMutes{s}, Self: self, Drops: s.metrics, Log: s.log, OnDrop: s.onDrop, Peers: s.peers()}),
		pipeline.NewEngage(s.tracer, m, threads, self, s.log),
		pipeline.NewRedact(s.tracer, m, s.redactor),
		pipeline.NewAuth(s.tracer, m, s.persona, threads, pipeline.ModeRules{Default: pipeline.Mode(s.cfg.DefaultMode), NoBypass: s.noBypass}),
		pipeline.NewSession(s.tracer, m, s.sessions),
		pipeline.NewAgent(s.tracer, m, engine, actions, commands, home, pipeline.WithSchedules(s.schedules)),
		pipeline.NewMarkup(s.tracer, m, mrkdwn.Convert, mrkdwn.NativeTable),
	)
}

// toolObserver adapts f (nil: none) to the engine's OnToolCall, redacting
// what it is shown.
func (s *Service) toolObserver(f func(name, input, result, outcome string)) func(string, json.RawMessage, tools.Result, string) {
	if f == nil {
		return nil
	}
	return func(name string, input json.RawMessage, res tools.Result, outcome string) {
		f(name, s.redactor.Redact(string(input)), s.redactor.Redact(res.Text), outcome)
	}
}

// closeSessionTimeout bounds the call that closes a thread's agent session
// on the platform: a message of the thread waits for it.
const closeSessionTimeout = 10 * time.Second

// closeAgentSession is the sessions' OnIdle: the thread's agent session
// on the platform closes with it, once the thread's turn has ended (ended).
func closeAgentSession(chat ChatAPI, ended func(threadKey string) <-chan struct{}, log *slog.Logger) func(ctx context.Context, threadKey string) {
	return func(ctx context.Context, threadKey string) {
		channel, root, ok := strings.Cut(threadKey, ":")
		if !ok || root == "" {
			return
		}
		// The thread's last turn says "active" after its reply, in the
		// background: the close goes after it, never overtaken.
		if done := ended(threadKey); done != nil {
			select {
			case <-done:
			case <-ctx.Done():
				return
			}
		}
		// The thread's next message waits for this call (session.Options.OnIdle).
		ctx, cancel := context.WithTimeout(ctx, closeSessionTimeout)
		defer cancel()
		if err := chat.SetSessionStatus(ctx, pipeline.SessionUpdate{ChannelID: channel, ThreadTS: root, Status: pipeline.SessionClosed}); err != nil {
			log.DebugContext(ctx, "close agent session", "thread", threadKey, "err", err)
		}
	}
}

// ended is the engine's Ended (nil before the engine is made).
func (s *Service) ended(threadKey string) <-chan struct{} {
	if s.engine == nil {
		return nil
	}
	return s.engine.Ended(threadKey)
}
