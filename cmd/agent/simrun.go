package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
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
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/internal/sim"
	simchat "github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// simStores are the scenarios' in-memory databases, each handed to the
// next scenario emptied, with its parsed schema and prepared statements.
var simStores store.MemoryPool

// simBot is the bot's identity in the simulator.
var simBot = pipeline.Identity{UserID: "U0BOT", BotID: "B0BOT", TeamID: "T0SIM"}

// stepTimeout bounds every wait of a scenario step. The waits are
// event-driven: a passing step returns as soon as its condition holds.
const stepTimeout = 5 * time.Second

// simWorld is one running simulation: the production service on the
// in-memory platform, with the stub model (or the configured one).
type simWorld struct {
	mem   *simchat.Chat
	svc   *service
	model agent.Model
	stub  *scripted.Model
	home  string

	mu       sync.Mutex
	pending  map[string]bool   // injected event ids not handled yet
	drops    map[string]string // event id → drop reason
	injected []injected        // every injected event, in order
	seq      int
	tools    toolLog // the tool calls, for the golden transcript
	// progress is closed and replaced whenever an event is handled.
	progress chan struct{}

	cancel context.CancelFunc
	done   chan error
}

// simOptions configure a simulation.
type simOptions struct {
	soul      []byte         // the SOUL.md to run
	behaviour string         // the stub's behaviour
	model     agent.Model    // nil: the stub
	cfg       *config.Config // for a live model: the shared configuration
	home      string         // "" : a temporary home, removed at close
	log       io.Writer      // the service's logs (text); nil discards them
	getenv    func(string) string
	observer  func(simchat.Entry)
	spans     []sdktrace.SpanProcessor // --trace
}

// startSim boots the service on the in-memory platform.
func startSim(ctx context.Context, o simOptions) (*simWorld, error) {
	w := &simWorld{pending: map[string]bool{}, drops: map[string]string{}, done: make(chan error, 1), progress: make(chan struct{})}
	home := o.home
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
		w.home, soul = home, o.soul
		if soul == nil {
			return nil, errors.New("sim: a temporary home needs the SOUL.md")
		}
	} else {
		if err := os.MkdirAll(home, 0o700); err != nil {
			return nil, err
		}
		if o.soul != nil {
			if err := os.WriteFile(filepath.Join(home, "SOUL.md"), o.soul, 0o600); err != nil {
				w.cleanup()
				return nil, err
			}
		}
	}
	cfg := &config.Config{}
	if o.cfg != nil {
		*cfg = *o.cfg
	} else {
		cfg.DefaultMode, cfg.AutoAllowTools, cfg.IdleMinutes = "bypass", config.DefaultAutoAllowTools, config.DefaultIdleMinutes
		cfg.MaxTurns, cfg.PackageRunner, cfg.LogLevel = config.DefaultMaxTurns, config.DefaultPackageRunner, "warn"
		if landlockABI() == 0 {
			// The stub's world runs in bypass, and its one command (echo)
			// may run unconfined where the kernel has no sandbox: the
			// refusal of doors.go guards a persona's configuration, and a
			// live model gets the shared configuration's own AGENT_SANDBOX.
			cfg.Sandbox = string(sandbox.ModeOff)
		}
	}
	cfg.Home, cfg.DBPath, cfg.Workspaces = home, filepath.Join(home, "db.sqlite"), filepath.Join(home, "workspaces")
	// The simulator's state is its own: never the persona's Postgres (it
	// would join the live replicas' fleet).
	cfg.DBURL = ""
	if o.home == "" {
		cfg.DBPath = store.Memory // a scenario's database lives as long as the scenario
	}
	cfg.HealthPort, cfg.LogFormat = 0, "text"
	logw := o.log
	if logw == nil {
		logw = io.Discard
	}
	getenv := o.getenv
	if getenv == nil {
		getenv = func(k string) string {
			if k == "PATH" {
				return os.Getenv("PATH")
			}
			return ""
		}
	}
	w.mem = &simchat.Chat{Bot: simBot, Observer: o.observer}
	w.model = o.model
	if w.model == nil {
		m, err := scripted.New(orDefault(o.behaviour, "reply"))
		if err != nil {
			w.cleanup()
			return nil, err
		}
		w.stub, w.model = m, m
	}
	svc, err := newService(ctx, cfg, serviceDeps{
		stderr: logw, getenv: getenv, model: w.model, spans: o.spans, soul: soul, stores: &simStores,
		platform:  func(*slog.Logger) (gateway.Transport, chatAPI) { return w.mem, w.mem },
		onHandled: w.handled,
		onDrop:    w.dropped,
		onToolCall: func(name, input, result, outcome string) {
			// The temporary home is named before the line is cut to
			// length, so that its random name's length changes nothing.
			if w.home != "" {
				input, result = strings.ReplaceAll(input, w.home, "$AGENT_HOME"), strings.ReplaceAll(result, w.home, "$AGENT_HOME")
			}
			w.tools.add(len(w.mem.Messages()), toolLine(name, input, result, outcome))
		},
	})
	if err != nil {
		w.cleanup()
		return nil, err
	}
	w.svc = svc
	runCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() { w.done <- svc.run(runCtx) }()
	return w, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (w *simWorld) handled(ev *pipeline.Event, _ error) {
	w.mu.Lock()
	delete(w.pending, ev.ID)
	close(w.progress)
	w.progress = make(chan struct{})
	w.mu.Unlock()
}

func (w *simWorld) dropped(ev *pipeline.Event, reason string) {
	w.mu.Lock()
	w.drops[ev.ID] = reason
	w.mu.Unlock()
}

// inject hands an event to the service and remembers it as pending.
func (w *simWorld) inject(ev *pipeline.Event) error {
	w.mu.Lock()
	w.seq++
	ev.ID = fmt.Sprintf("EvSIM%05d", w.seq)
	if ev.Kind == pipeline.KindAction {
		ev.ID = "action:" + ev.ID
	}
	w.pending[ev.ID] = true
	w.injected = append(w.injected, injected{id: ev.ID, typ: ev.Type})
	w.mu.Unlock()
	return w.mem.Inject(ev)
}

// settle waits until every injected event was handled, or a turn waits on
// a card that was not there before (it will go on after a click).
func (w *simWorld) settle(ctx context.Context, cardsBefore int) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		changed := w.mem.Changed()
		w.mu.Lock()
		n, progress := len(w.pending), w.progress
		w.mu.Unlock()
		if n == 0 || unresolvedCards(w.mem.Cards()) > cardsBefore {
			return nil
		}
		select {
		case <-changed:
		case <-progress:
		case <-ctx.Done():
			return errors.New("the service did not settle in time")
		}
	}
}

// waitHandled waits until the event id was handled.
func (w *simWorld) waitHandled(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		w.mu.Lock()
		pending, progress := w.pending[id], w.progress
		w.mu.Unlock()
		if !pending {
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return errors.New("the click was not handled in time")
		}
	}
}

func unresolvedCards(cards []simchat.Card) int {
	n := 0
	for _, c := range cards {
		if !c.Resolved {
			n++
		}
	}
	return n
}

// close stops the service and removes a temporary home.
func (w *simWorld) close() error {
	var err error
	if w.cancel != nil {
		w.cancel()
		err = <-w.done
	}
	w.cleanup()
	return err
}

func (w *simWorld) cleanup() {
	if w.home != "" {
		os.RemoveAll(w.home)
	}
}

// runScenario runs one scenario and returns its golden transcript, and nil
// when every step passed or an error saying which step failed, what was
// expected and what was seen.
func runScenario(ctx context.Context, sc *sim.Scenario, soul []byte, model agent.Model, transcript io.Writer,
	spans ...sdktrace.SpanProcessor) (string, error) {
	if soul == nil {
		soul = sim.DefaultWorld().Merge(sc.Soul).SoulMD()
	}
	w, err := startSim(ctx, simOptions{soul: soul, behaviour: sc.AgentBehavior, model: model, spans: spans})
	if err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	defer w.close()
	r := &scenarioRun{w: w, sc: sc, threads: map[string]string{}}
	for i, st := range sc.Steps {
		if err := r.step(ctx, st); err != nil {
			r.dump(transcript)
			return r.renderGolden(), fmt.Errorf("step %d (%s): %w", i+1, st.Kind, err)
		}
	}
	// Let the last turn end (its final model call comes after its reply),
	// so that the transcript is whole.
	// A turn waiting on a card stays as it is.
	if unresolvedCards(w.mem.Cards()) == 0 {
		if err := w.settle(ctx, 0); err != nil {
			return r.renderGolden(), err
		}
	}
	r.dump(transcript)
	return r.renderGolden(), nil
}

// scenarioRun is the state of one scenario: its threads and its last send.
type scenarioRun struct {
	w        *simWorld
	sc       *sim.Scenario
	threads  map[string]string // label → channel + "/" + root ts
	lastSent string            // event id
	lastTwin string            // the app_mention twin of the last send, if any
}

func (r *scenarioRun) actor(as string) (string, error) {
	if as == "" {
		as = r.sc.As
	}
	u, ok := sim.DefaultWorld().Merge(r.sc.Soul).RoleUser(as)
	if !ok {
		return "", fmt.Errorf("unknown actor %q", as)
	}
	return u, nil
}

func (r *scenarioRun) step(ctx context.Context, st sim.Step) error {
	switch st.Kind {
	case "send":
		return r.send(ctx, st)
	case "expect_reply":
		return r.expect(ctx, fmt.Sprintf("a reply containing %q", st.Contains), func(s simchat.Snapshot) (bool, string) {
			var seen []string
			for _, m := range s.Messages {
				if m.Op == simchat.OpPost || m.Op == simchat.OpUpdate || m.Op == simchat.OpUpload {
					if strings.Contains(m.Text, st.Contains) || (m.Card != nil && strings.Contains(m.Card.Summary, st.Contains)) {
						return true, ""
					}
					seen = append(seen, fmt.Sprintf("%q", oneLine(m.Text, 80)))
				}
			}
			return false, seenList(seen)
		})
	case "expect_card", "expect_pending":
		kind := orDefault(st.CardKind, "approval")
		want := fmt.Sprintf("an unresolved %s card", kind)
		if st.Contains != "" {
			want += fmt.Sprintf(" containing %q", st.Contains)
		}
		return r.expect(ctx, want, func(s simchat.Snapshot) (bool, string) {
			var seen []string
			for _, c := range s.Cards {
				if !c.Resolved && c.Card.Kind == kind && (st.Contains == "" || strings.Contains(c.Card.Summary+" "+c.Card.Details, st.Contains)) {
					return true, ""
				}
				state := "unresolved"
				if c.Resolved {
					state = "resolved: " + c.Card.Outcome
				}
				seen = append(seen, fmt.Sprintf("%s card %q (%s)", c.Card.Kind, oneLine(c.Card.Summary, 60), state))
			}
			return false, seenList(seen)
		})
	case "expect_drop":
		r.w.mu.Lock()
		got, dropped := r.w.drops[r.lastSent]
		if twin, ok := r.w.drops[r.lastTwin]; r.lastTwin != "" && ok && (!dropped || got != st.Reason) && twin == st.Reason {
			got, dropped = twin, true
		}
		r.w.mu.Unlock()
		if !dropped || got != st.Reason {
			seen := "it was not dropped"
			if dropped {
				seen = "it was dropped with reason " + got
			}
			return fmt.Errorf("expected the last message dropped with reason %s; %s", st.Reason, seen)
		}
		return nil
	case "click":
		return r.click(ctx, st)
	}
	return fmt.Errorf("unknown step %q", st.Kind)
}

func (r *scenarioRun) send(ctx context.Context, st sim.Step) error {
	user, err := r.actor(st.As)
	if err != nil {
		return err
	}
	channel := sim.LayerChannel(r.sc.Layer)
	if st.Channel != "" {
		channel = st.Channel
	}
	if st.DM {
		channel = sim.LayerChannel("dm")
	}
	text := st.Text
	var threadTS string
	if st.Thread != "" {
		if at, ok := r.threads[st.Thread]; ok {
			ch, ts, _ := strings.Cut(at, "/")
			channel, threadTS = ch, ts
		}
	}
	if threadTS == "" && !strings.HasPrefix(channel, "D") {
		text = "<@" + simBot.UserID + "> " + text // a thread's root in a channel addresses the bot
	}
	cards := unresolvedCards(r.w.mem.Cards())
	ev := &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", UserID: user, ChannelID: channel, ThreadTS: threadTS, Text: text}
	if err := r.w.inject(ev); err != nil {
		return err
	}
	r.lastSent, r.lastTwin = ev.ID, ""
	if st.Thread != "" && threadTS == "" {
		r.threads[st.Thread] = channel + "/" + ev.TS
	}
	if threadTS == "" && !strings.HasPrefix(channel, "D") {
		// As on the platform, a channel mention arrives twice: as message
		// and as app_mention, same channel and ts.
		twin := &pipeline.Event{Kind: pipeline.KindMessage, Type: "app_mention", UserID: user, ChannelID: channel, TS: ev.TS, Text: text}
		if err := r.w.inject(twin); err != nil {
			return err
		}
		r.lastTwin = twin.ID
	}
	return r.w.settle(ctx, cards)
}

func (r *scenarioRun) click(ctx context.Context, st sim.Step) error {
	user, err := r.actor(st.As)
	if err != nil {
		return err
	}
	cards := r.w.mem.Cards()
	for i := len(cards) - 1; i >= 0; i-- {
		c := cards[i]
		if !c.Offers(st.Action) {
			continue
		}
		before := unresolvedCards(cards) - 1 // this one may resolve
		ev := &pipeline.Event{Kind: pipeline.KindAction, Type: "block_actions", UserID: user, ChannelID: c.ChannelID,
			ThreadTS: c.ThreadTS, TS: c.TS, Action: &pipeline.Action{ActionID: st.Action, Value: c.Card.ID, MessageTS: c.TS}}
		if err := r.w.inject(ev); err != nil {
			return err
		}
		// The click itself first (a refused one changes no card), then
		// what it set going.
		if err := r.w.waitHandled(ctx, ev.ID); err != nil {
			return err
		}
		return r.w.settle(ctx, before)
	}
	return fmt.Errorf("expected an unresolved card offering %q; saw %d card(s), none offering it", st.Action, len(cards))
}

// expect waits (event-driven, bounded) for cond over the transcript.
func (r *scenarioRun) expect(ctx context.Context, want string, cond func(simchat.Snapshot) (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		changed := r.w.mem.Changed()
		ok, seen := cond(r.w.mem.Snapshot())
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("expected %s; saw %s", want, seen)
		}
	}
}

func seenList(seen []string) string {
	if len(seen) == 0 {
		return "nothing"
	}
	if len(seen) > 5 {
		seen = append(seen[len(seen)-5:], "…")
	}
	return strings.Join(seen, ", ")
}

// dump writes the scenario's transcript (sim run --verbose).
func (r *scenarioRun) dump(w io.Writer) {
	if w == nil {
		return
	}
	for _, m := range r.w.mem.Messages() {
		fmt.Fprintln(w, "    "+formatSim(m))
	}
}

// formatSim renders one transcript entry for a person.
func formatSim(m simchat.Entry) string {
	where := m.ChannelID
	if m.ThreadTS != "" {
		where += "/" + m.ThreadTS
	}
	switch m.Op {
	case simchat.OpInbound:
		if m.Action != nil {
			return fmt.Sprintf("%s <@%s> clicked %s", where, m.UserID, m.Action.ActionID)
		}
		return fmt.Sprintf("%s <@%s>: %s", where, m.UserID, m.Text)
	case simchat.OpPost, simchat.OpUpdate:
		verb := "bot"
		if m.Op == simchat.OpUpdate {
			verb = "bot (edited)"
		}
		if m.Card != nil {
			state := "actions: " + strings.Join(m.Card.Actions, ", ")
			if len(m.Card.Actions) == 0 {
				state = m.Card.Outcome
			}
			return fmt.Sprintf("%s %s: [%s card · %s] %s (%s)", where, verb, m.Card.Kind, m.Card.Category, m.Card.Summary, state)
		}
		return fmt.Sprintf("%s %s: %s", where, verb, m.Text)
	case simchat.OpEphemeral:
		return fmt.Sprintf("%s bot (only <@%s> sees): %s", where, m.To, m.Text)
	case simchat.OpUpload:
		name := ""
		if len(m.Files) > 0 {
			name = m.Files[0].Name
		}
		return fmt.Sprintf("%s bot uploaded %s: %s", where, name, m.Text)
	case simchat.OpStatus:
		return fmt.Sprintf("%s status: %s", where, orDefault(m.Text, "(cleared)"))
	}
	return fmt.Sprintf("%s %s: %s", where, m.Op, m.Text)
}
