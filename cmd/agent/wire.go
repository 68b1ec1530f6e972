package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/httpapi"
	"github.com/persona-runtime/agent/internal/inbox"
	"github.com/persona-runtime/agent/internal/ingest"
	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/internal/metrics"
	"github.com/persona-runtime/agent/internal/mrkdwn"
	"github.com/persona-runtime/agent/internal/publish"
	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/internal/telemetry"
	"github.com/persona-runtime/agent/pkg/deps"
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
	// yields: event id → when it first let an older message go first.
	yields sync.Map
	engine *agent.Engine
	// runCtx is run's context: the service's life.
	runCtx context.Context
	// noBypass is why no thread may run in bypass here ("" when it may;
	// doors.go).
	noBypass string

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
	// scenarios): one emptied by the scenario before, with its parsed
	// schema and prepared statements, and takes it back at close.
	stores *store.MemoryPool
	// soul, when set, is the SOUL.md, and the home is made only when
	// something is written there (the simulator's scenarios): nothing is
	// read from it or seeded in it at start.
	soul []byte
}

// newService builds the service from cfg: logger, tracing, store, persona,
// metrics, chat API, model, sessions, tools, agent and the pipeline. The
// platform is a parameter so that the simulator can swap it; `agent start`
// passes socket mode and the Web API.
func newService(ctx context.Context, cfg *config.Config, d serviceDeps) (_ *service, err error) {
	s := &service{cfg: cfg, started: time.Now()}
	defer func() {
		if err != nil {
			s.close(context.Background())
		}
	}()
	// mcp.json first: the credentials its tool servers are given are
	// scrubbed from everything the runtime says, its logs included.
	mcpConf, err := tools.LoadMCPConfig(filepath.Join(cfg.Home, "mcp.json"), d.getenv)
	if err != nil {
		return nil, err
	}
	secrets := append(cfg.Secrets(), mcpConf.Secrets()...)
	s.log = telemetry.NewLogger(d.stderr, cfg.LogFormat, telemetry.ParseLevel(cfg.LogLevel), secrets...)
	if cfg.Database() != store.Memory { // not the simulator's scenarios: a service of its own
		applyMemoryLimit(d.getenv, os.ReadFile, s.log)
	}
	transport, chat := d.platform(s.log)
	if in, ok := transport.(interface{ Routes(chi.Router) }); ok {
		s.ingress = in.Routes
	}

	tp, shutdown, err := telemetry.Setup(ctx, Name, Version, d.getenv, d.stderr, d.spans...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	s.tp, s.tracer = tp, tp.Tracer("github.com/persona-runtime/agent")
	s.closers = append(s.closers, shutdown)

	if d.soul == nil {
		if seeded, err := seedSoul(cfg.Home); err != nil {
			return nil, err
		} else if seeded {
			s.log.Warn("seeded a starter SOUL.md: fill in its placeholders, then start again", "path", filepath.Join(cfg.Home, "SOUL.md"))
		}
	}
	if d.stores != nil && cfg.Database() == store.Memory {
		if s.store, err = d.stores.Get(ctx, store.Options{Logger: s.log}); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		s.closers = append(s.closers, func(ctx context.Context) error { return d.stores.Put(ctx, s.store) })
	} else {
		if s.store, err = store.Open(ctx, cfg.Database(), store.Options{Logger: s.log}); err != nil {
			return nil, fmt.Errorf("open database: %w", err)
		}
		s.closers = append(s.closers, func(context.Context) error { return s.store.Close() })
	}
	if err := s.joinFleet(ctx); err != nil {
		return nil, err
	}
	s.metrics = metrics.New()
	llmMetrics := &llm.Metrics{Requests: s.metrics.ModelRequests, Tokens: s.metrics.ModelTokens, Duration: s.metrics.ModelDuration}
	x, err := newExtractor(cfg, s.log, s.tracer, llmMetrics)
	if err != nil {
		return nil, err
	}
	if s.persona, err = loadPersona(ctx, filepath.Join(cfg.Home, "SOUL.md"), d.soul, s.store, x, s.log); err != nil {
		return nil, err
	}

	patterns, err := redactPatterns(s.persona)
	if err != nil {
		return nil, err
	}
	s.redactor = redact.New(secrets, patterns)

	if d.preflight != nil {
		if err := d.preflight(ctx, s.log); err != nil {
			return nil, err
		}
	}
	if s.self, err = chat.AuthTest(ctx); err != nil {
		return nil, fmt.Errorf("chat auth.test: %w", err)
	}
	s.log.Info("chat identity", "bot_user_id", s.self.UserID, "bot_id", s.self.BotID, "team_id", s.self.TeamID)

	var model agent.Model = d.model
	if model == nil {
		client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.Model},
			s.log, s.tracer, llmMetrics)
		if err != nil {
			return nil, fmt.Errorf("model client: %w", err)
		}
		model = client
	}

	if s.sessions, err = session.New(ctx, session.Options{Store: retrySessions{sessionStore{st: s.store, shared: s.fleet != nil}, s.storeRetry()}, NotFound: store.ErrNotFound,
		NewID: store.NewID, Idle: cfg.IdleTimeout(), Live: s.metrics.SessionsLive, Log: s.log}); err != nil {
		return nil, err
	}

	gateOpts := approval.Options{Store: s.store, Chat: chat, Approvers: s.persona, Manager: s.persona.Manager.UserID,
		NewID: store.NewID, Outcomes: s.metrics.Approvals, Log: s.log}
	if s.fleet != nil {
		gateOpts.Notify, gateOpts.Poll = s.announceApproval, approvalPoll
	}
	gate, err := approval.New(gateOpts)
	if err != nil {
		return nil, err
	}
	s.gate = gate
	if s.fleet == nil && cfg.Database() != store.Memory {
		// Replicas expire only what a stopped replica waited for (sweep):
		// the others' cards are still waited for. A database in memory is
		// new: nothing waits in it.
		if n, err := gate.ExpirePending(ctx); err != nil {
			return nil, fmt.Errorf("expire pending approvals: %w", err)
		} else if n > 0 {
			s.log.Info("expired approvals left pending by the last run", "count", n)
		}
	}

	confiner, err := s.newSandbox(d.getenv)
	if err != nil {
		return nil, err
	}
	if s.builtins, err = tools.NewBuiltins(tools.BuiltinOptions{Home: cfg.Home, Workspaces: cfg.Workspaces,
		WorkspacesOnDemand: d.soul != nil,
		Deny:               denyPaths(cfg, d.getenv), Secrets: secrets, Env: bashEnv(d.getenv), Sandbox: confiner}); err != nil {
		return nil, err
	}
	registry := tools.NewRegistry()
	registry.Add(s.builtins.Tools()...)
	s.chat = chat
	if o, ok := chat.(interface {
		OnDeliveryFailure(func(gateway.DeliveryFailure))
	}); ok {
		o.OnDeliveryFailure(func(f gateway.DeliveryFailure) { s.metrics.DeliveryFailures.WithLabelValues(f.Error).Inc() })
	}
	chatTools := &tools.ChatServer{Redactor: s.redactor, Approvals: gate, Replied: agent.MarkReplied,
		Uploader: chat, Open: s.builtins.OpenInWorkspace}
	registry.Add(chatTools.Tools()...)
	s.skills = tools.NewSkills(filepath.Join(cfg.Home, "skills"), s.log)
	author := cfg.GitAuthor
	if author == "" {
		author = s.persona.Identity.Name + " <agent@localhost>"
	}
	if cfg.SkillsRepo != "" {
		if _, err := deps.RepoURL(cfg.SkillsRepo); err != nil {
			return nil, fmt.Errorf("AGENT_SKILLS_REPO: %w", err)
		}
	}
	pub := &publish.Publisher{Home: cfg.Home, SkillsRepo: cfg.SkillsRepo, Author: author, Log: s.log, KBLock: s.store}
	registry.Add((&tools.SkillsServer{Skills: s.skills, Sync: pub.Sync}).Tools()...)
	registry.Add((&tools.KBServer{Home: cfg.Home}).Tools()...)
	if err := s.mountMCP(ctx, registry, mcpConf, d.getenv, confiner); err != nil {
		return nil, err
	}

	engine, err := agent.New(agent.Options{
		Model: model, History: s.store, Tools: registry, Prompt: s.prompt, Status: chat.SetStatus, Attach: s.attachments(chat).Save,
		Gate: &approval.ToolGate{Gate: gate, AutoAllow: tools.ParseAllowList(cfg.AutoAllowed()), Redact: s.redactor.Redact,
			InSkills: s.builtins.InSkills},
		Self: func() pipeline.Identity { return s.self }, MaxTurns: cfg.MaxTurns,
		Redact: s.redactor.Redact, Tracer: s.tracer, Log: s.log,
		Metrics: agent.Metrics{Turns: s.metrics.Turns, TurnDuration: s.metrics.TurnDuration, StopGuard: s.metrics.StopGuard,
			ToolCalls: s.metrics.ToolCalls, ToolDuration: s.metrics.ToolDuration},
		OnToolCall: s.toolObserver(d.onToolCall),
		Stream:     cfg.Stream != "off", StreamSettled: s.redactor.Settled,
	})
	if err != nil {
		return nil, err
	}
	// Closed before the store (closers run last first): a turn's
	// background writes land before the database closes.
	s.closers = append(s.closers, func(context.Context) error { engine.Wait(); return nil })

	ingester := &ingest.Ingester{Home: cfg.Home, Store: s.store, Model: model, Mandate: s.persona.Mandate, Author: author, Log: s.log}
	s.engine = engine
	var control commands.Engine = engine
	if s.fleet != nil {
		control = fleetEngine{Engine: engine, s: s}
	}
	commands := &commands.Commands{Store: s.store, Engine: control, Persona: s.persona, DefaultMode: pipeline.Mode(cfg.DefaultMode),
		NoBypass: s.noBypass, Self: func() pipeline.Identity { return s.self }, Ingest: ingester, Log: s.log}
	s.onDrop = d.onDrop
	clicks := feedbackActions{next: gate, store: s.store, chat: chat, votes: s.metrics.Feedback, log: s.log}
	s.handler = s.chain(engine, clicks, commands, chat)
	s.inbox = inbox.New(inbox.Options{Store: s.store, Chat: chat, Self: func() pipeline.Identity { return s.self },
		Redact: s.redactor.Redact, Outcomes: s.metrics.InboxEvents, Log: s.log})
	gwConfig := gateway.Config{OnHandled: d.onHandled, Inbox: s.inbox, OnStart: s.resume,
		Grace: cfg.ShutdownGrace}
	if s.fleet != nil {
		gwConfig.LockThread = s.lockThread
	}
	s.gateway = gateway.New(transport, s.handler, s.tracer, s.log, s.metrics.Events, gwConfig)
	return s, nil
}

// chain assembles the pipeline: the stages in the order of the design.
func (s *service) chain(engine pipeline.Agent, actions pipeline.Actions, commands pipeline.Commands, chat pipeline.Poster) pipeline.Handler {
	m := s.metrics.Stage()
	self := func() pipeline.Identity { return s.self }
	threads := retryThreads{threadStore{st: s.store, noBypass: s.noBypass != ""}, s.storeRetry()}
	split := func(text string) []string { return mrkdwn.Split(text, mrkdwn.MaxMessageLen) }
	return pipeline.Chain(pipeline.NewDeliver(chat, split),
		pipeline.Recover(),
		pipeline.NewDrop(s.tracer, m, pipeline.DropDeps{Roster: s.persona, Seen: retrySeen{s.store, s.storeRetry()}, Locks: threads,
			Self: self, Drops: s.metrics.Drops, Log: s.log, OnDrop: s.onDrop}),
		pipeline.NewEngage(s.tracer, m, threads, self, s.log),
		pipeline.NewRedact(s.tracer, m, s.redactor),
		pipeline.NewAuth(s.tracer, m, s.persona, threads, pipeline.Mode(s.cfg.DefaultMode)),
		pipeline.NewSession(s.tracer, m, s.sessions),
		pipeline.NewAgent(s.tracer, m, engine, actions, commands),
		pipeline.NewMarkup(s.tracer, m, mrkdwn.Convert),
	)
}

// denyPaths are the files the file tools never open: the database and the
// .env files of every location the configuration reads.
func denyPaths(cfg *config.Config, getenv func(string) string) []string {
	deny := []string{filepath.Join(cfg.Home, ".env"), filepath.Join(cfg.Home, "mcp.json")}
	if db := cfg.Database(); db != store.Memory && !store.IsPostgres(db) {
		deny = append(deny, db)
	}
	if h := getenv("HOME"); h != "" {
		deny = append(deny, filepath.Join(h, ".agent", ".env"))
	}
	if wd, err := os.Getwd(); err == nil {
		deny = append(deny, filepath.Join(wd, ".env"))
	}
	for i, p := range deny {
		if abs, err := filepath.Abs(p); err == nil {
			deny[i] = abs
		}
	}
	return deny
}

// attachments saves the files of a message in the thread's workspace,
// streamed from the platform through the workspace's root.
func (s *service) attachments(chat chatAPI) *tools.Attachments {
	return &tools.Attachments{Workspace: s.builtins.Workspace, Download: chat, TooLarge: gateway.ErrFileTooLarge,
		MaxFiles: s.cfg.MaxAttachments, MaxBytes: int64(s.cfg.MaxAttachmentMB) << 20}
}

// baseEnv is the minimal environment child processes (Bash, tool servers)
// start from: never the runtime's own, which holds credentials.
func baseEnv(getenv func(string) string) []string {
	var env []string
	for _, k := range []string{"PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME", "USER"} {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	if getenv("PATH") == "" {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return env
}

// gitConfigFiles are the runtime user's git configuration files, which
// sandboxed commands may read (never the credential store beside them).
func gitConfigFiles(getenv func(string) string) []string {
	var files []string
	if h := getenv("HOME"); h != "" {
		files = append(files, filepath.Join(h, ".gitconfig"))
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && getenv("HOME") != "" {
		xdg = filepath.Join(getenv("HOME"), ".config")
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	return files
}

// bashEnv is Bash's base environment: baseEnv, plus GIT_CONFIG_GLOBAL
// naming the runtime user's ~/.gitconfig when there is one (Bash's HOME
// is the workspace, so git would not find it otherwise).
func bashEnv(getenv func(string) string) []string {
	env := baseEnv(getenv)
	if files := gitConfigFiles(getenv); len(files) > 0 {
		if fi, err := os.Stat(files[0]); err == nil && fi.Mode().IsRegular() {
			env = append(env, "GIT_CONFIG_GLOBAL="+files[0])
		}
	}
	return env
}

// newSandbox makes the runtime non-dumpable and builds the sandbox of
// Bash and the tool servers from AGENT_SANDBOX and AGENT_SANDBOX_NET;
// it says once what is enforced (a startup line and agent_sandbox_info).
// The returned Confiner is nil with AGENT_SANDBOX=off.
func (s *service) newSandbox(getenv func(string) string) (tools.Confiner, error) {
	if err := sandbox.HardenProcess(); err != nil {
		return nil, fmt.Errorf("make the runtime non-dumpable: %w", err)
	}
	sb, err := sandbox.New(sandbox.Options{
		Mode: sandbox.Mode(s.cfg.Sandbox), Net: sandbox.Net(s.cfg.SandboxNet),
		ReadOnly:    append([]string{filepath.Join(s.cfg.Home, "skills"), filepath.Join(s.cfg.Home, "knowledge")}, gitConfigFiles(getenv)...),
		LandlockABI: kernelLandlock,
	})
	if err != nil {
		return nil, err
	}
	st := sb.Status()
	net := string(st.Net)
	if !st.NetEnforced && st.Net == sandbox.NetDeny {
		net += "-unenforced"
	}
	s.metrics.SandboxInfo.WithLabelValues(string(st.Mode), strconv.Itoa(st.Landlock), net, st.Pids).Set(1)
	attrs := []any{"mode", st.Mode, "landlock_abi", st.Landlock, "net", net, "pids", st.Pids}
	if sb.Enforced() && st.NetEnforced {
		s.log.Info(st.String(), attrs...)
	} else {
		s.log.Warn(st.String(), attrs...)
	}
	if err := checkBypass(s.cfg, s.persona, st.Mode, st.Landlock); err != nil {
		return nil, err
	}
	s.noBypass = bypassRefusal(st.Mode, st.Landlock)
	if st.Mode == sandbox.ModeOff {
		return nil, nil
	}
	return sb, nil
}

// mountMCP mounts the external tool servers of conf (the home's mcp.json);
// a server that fails to start is logged and skipped by MountMCP.
func (s *service) mountMCP(ctx context.Context, registry *tools.Registry, conf *tools.MCPConfig, getenv func(string) string, confiner tools.Confiner) error {
	if len(conf.Servers) == 0 {
		return nil
	}
	m, err := tools.MountMCP(ctx, conf, tools.MCPOptions{Runner: s.cfg.PackageRunner, BaseEnv: baseEnv(getenv), Log: s.log,
		Sandbox: confiner, StateDir: filepath.Join(s.cfg.Home, "tool-servers"), Deny: denyPaths(s.cfg, getenv)})
	if err != nil {
		return fmt.Errorf("mount tool servers: %w", err)
	}
	s.closers = append(s.closers, func(context.Context) error { return m.Close() })
	registry.Add(m.Tools()...)
	s.log.Info("tool servers mounted", "servers", len(conf.Servers), "tools", len(m.Tools()))
	return nil
}

// newExtractor returns the SOUL.md model extractor when
// AGENT_SOUL_EXTRACT=model, else nil (no model is called at boot).
func newExtractor(cfg *config.Config, log *slog.Logger, tracer trace.Tracer, m *llm.Metrics) (*extractor, error) {
	if cfg.SoulExtract != "model" {
		return nil, nil
	}
	client, err := llm.New(llm.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, OAuthToken: cfg.OAuthToken, Model: cfg.SoulModel}, log, tracer, m)
	if err != nil {
		return nil, fmt.Errorf("soul extraction model: %w", err)
	}
	return &extractor{model: client, name: client.Model()}, nil
}

// prompt is the system prompt of a turn: the runtime baseline and the
// persona (static, identical for every turn), then the thread's part.
func (s *service) prompt(t *pipeline.Turn) (static, thread string) {
	static = persona.BaselinePrompt() + "\n\n" + s.persona.Prompt()
	// Skills are discovered on every message (stat-based), so an edit
	// applies on the next turn; they change rarely, so they stay in the
	// cached prefix.
	if sk := s.skills.Prompt(); sk != "" {
		static += "\n\n" + sk
	}
	ws, _ := s.builtins.WorkspacePath(t.Event.ThreadKey())
	thread = fmt.Sprintf("## This conversation\n- Your chat user id: <@%s>\n- Channel: <#%s> (trust layer: %s, permission mode: %s)\n- Your workspace (relative paths resolve here): %s\n",
		s.self.UserID, t.Event.ChannelID, t.Access.Layer, t.Access.Mode, ws)
	if ch := s.persona.ChannelPrompt(t.Event.ChannelID); ch != "" {
		thread += "\n" + ch
	}
	return static, thread
}

func redactPatterns(p *persona.Persona) ([]redact.Pattern, error) {
	res, err := p.Compile()
	if err != nil {
		return nil, err
	}
	out := make([]redact.Pattern, 0, len(res))
	for i, re := range res {
		out = append(out, redact.Pattern{Re: re, Description: p.Redactions[i].Description})
	}
	return out, nil
}

// run serves HTTP and runs the gateway until ctx is done, then shuts down:
// the gateway drains its running turns, sessions close, the store closes.
func (s *service) run(ctx context.Context) error {
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
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
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
			s.listen(ctx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.pruneLoop(ctx)
	}()
	s.runCtx = ctx
	// Start-up leaves garbage (package init, the persona, the tools'
	// schemas, the first connections): collect it and give the pages back
	// once the service is up, rather than when the scavenger gets to them.
	releaseStartup := time.AfterFunc(time.Second, debug.FreeOSMemory)
	defer releaseStartup.Stop()
	stopWaits := context.AfterFunc(ctx, s.gate.Close)
	defer stopWaits()
	err := s.gateway.Run(ctx)
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

// close releases what newService opened, last opened first.
func (s *service) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](ctx); err != nil && s.log != nil {
			s.log.Warn("shutdown", "err", err)
		}
	}
	s.closers = nil
}

// toolObserver adapts f (nil: none) to the engine's OnToolCall, redacting
// what it is shown.
func (s *service) toolObserver(f func(name, input, result, outcome string)) func(string, json.RawMessage, tools.Result, string) {
	if f == nil {
		return nil
	}
	return func(name string, input json.RawMessage, res tools.Result, outcome string) {
		f(name, s.redactor.Redact(string(input)), s.redactor.Redact(res.Text), outcome)
	}
}
