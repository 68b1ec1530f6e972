package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A team of personas (issue 38, a scenario's `personas:`): each other
// persona is a service of its own — booted as the first is, with its own
// SOUL.md, bot, store and scripted model — on an app of the same
// simulated platform (platform.Chat.AddApp), so that each receives the
// others' channel posts as the platform delivers them. Only a scenario
// with personas boots more than one service.
//
// The platform hands the runner what it delivers of its own accord (a
// post reaching the other apps, a person's message reaching the apps it
// does not call): the runner holds each as pending and delivers it when
// nothing else is at work, one at a time in the order they were made, so
// that one persona's turn ends before the next begins and a transcript
// reads the same on every run. A step settles when every persona is idle.

// TeamPersona is another persona of the team (Options.Personas).
type TeamPersona struct {
	Name string
	// Bot is its bot: AuthTest's answer, the author of its posts.
	Bot pipeline.Identity
	// Soul is its SOUL.md.
	Soul []byte
	// Behaviour and Recorded are its scripted model's (Options').
	Behaviour string
	Recorded  [][]scripted.Answer
}

// member is a running persona of the team.
type member struct {
	TeamPersona
	app    *platform.App
	model  *scripted.Model
	stores *keptStore
	home   string // its temporary home, removed at close
	cancel context.CancelFunc
	done   chan error
}

// held is an event the platform delivers of its own accord, held until
// the simulation is otherwise idle.
type held struct {
	to pipeline.Identity
	ev *pipeline.Event
}

// relayed is an event the platform delivered of its own accord, for the
// transcript: its message's ts, and to whom.
type relayed struct {
	id, ts, to string
}

// startTeam boots the other personas of o on apps of the platform, each
// with a copy of d (the first persona's service's dependencies) made its
// own.
func (s *Sim) startTeam(o Options, boot Boot, d service.Deps) error {
	s.chat.Relay = s.relay
	for _, tp := range o.Personas {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		m := &member{TeamPersona: tp, app: s.chat.AddApp(tp.Bot), stores: &keptStore{pool: &pool},
			home: filepath.Join(os.TempDir(), "agent-sim-"+hex.EncodeToString(b[:]))}
		s.team = append(s.team, m)
		md := d
		var model *scripted.Model
		var err error
		if tp.Behaviour == scripted.Recorded {
			model = scripted.NewRecorded(tp.Recorded)
		} else if model, err = scripted.New(cmp.Or(tp.Behaviour, "reply")); err != nil {
			return fmt.Errorf("persona %s: %w", tp.Name, err)
		}
		m.model = model
		counts := &Counts{}
		md.Model, md.Soul, md.Stores = model, tp.Soul, m.stores
		if o.Model != nil {
			md.Model = o.Model // --real: every persona asks the live model
		}
		md.Platform = func(*slog.Logger) (gateway.Transport, service.ChatAPI) { return m.app, m.app }
		md.ScheduleIDs, md.MemoryIDs, md.ConnectStates = ids("s", "schedule", counts), ids("m", "memory", counts), ids("c", "sign-in", counts)
		// Its scheduler is its own: the simulation's waits on a scheduler
		// (advance, restart) are the first persona's.
		md.OnScheduleRun, md.OnSchedulerIdle = nil, nil
		md.OnToolCall = func(name, input, result, outcome string) {
			input, result = strings.ReplaceAll(input, m.home, "$AGENT_HOME"), strings.ReplaceAll(result, m.home, "$AGENT_HOME")
			s.tools.add(s.chat.Len(), golden.ToolLine(name, input, result, outcome))
		}
		svc, err := boot(s.life, s.config(Options{Config: o.Config, LandlockABI: o.LandlockABI}, m.home), md)
		if err != nil {
			return fmt.Errorf("persona %s: %w", tp.Name, err)
		}
		runCtx, cancel := context.WithCancel(s.life)
		m.cancel, m.done = cancel, make(chan error, 1)
		go func() { m.done <- svc.Run(runCtx) }()
	}
	return nil
}

// stopTeam stops the other personas, gives their databases back and
// removes their homes.
func (s *Sim) stopTeam() error {
	var errs []error
	for _, m := range s.team {
		if m.cancel != nil {
			m.cancel()
			errs = append(errs, <-m.done)
		}
		errs = append(errs, m.stores.release(context.Background()))
		os.RemoveAll(m.home)
	}
	return errors.Join(errs...)
}

// relay takes an event the platform delivers of its own accord
// (platform.Chat.Relay): pending, held until the simulation is otherwise
// idle. It runs with the platform's lock held.
func (s *Sim) relay(to pipeline.Identity, ev *pipeline.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.ID = fmt.Sprintf("EvSIM%05d", s.seq)
	s.pending[ev.ID] = true
	s.held = append(s.held, held{to: to, ev: ev})
	s.relays = append(s.relays, relayed{id: ev.ID, ts: ev.TS, to: to.UserID})
}

// release delivers the oldest held event when every pending event is
// held: nothing else is at work. It reports whether it delivered one.
func (s *Sim) release() bool {
	s.mu.Lock()
	if len(s.held) == 0 || len(s.pending) > len(s.held) {
		s.mu.Unlock()
		return false
	}
	h := s.held[0]
	s.held = s.held[1:]
	s.mu.Unlock()
	if err := s.chat.Deliver(h.to, h.ev); err != nil {
		// Nobody will handle it: it is not pending.
		s.onHandled(h.ev, err)
	}
	return true
}

// member returns the running persona whose name is name; nil for the
// scenario's own persona (or an unknown name).
func (s *Sim) member(name string) *member {
	for _, m := range s.team {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// botOf is the bot user of the persona named name ("": the first).
func (s *Sim) botOf(name string) pipeline.Identity {
	if m := s.member(name); m != nil {
		return m.Bot
	}
	return bot
}

// teamOptions are the other personas of sc, for Options.Personas.
func teamOptions(sc *sim.Scenario) []TeamPersona {
	var out []TeamPersona
	for _, pr := range sc.Personas {
		out = append(out, TeamPersona{Name: pr.Name, Soul: pr.World().SoulMD(), Behaviour: pr.AgentBehavior, Recorded: pr.Model,
			Bot: pipeline.Identity{UserID: pr.User, BotID: "B" + strings.TrimPrefix(pr.User, "U"), TeamID: bot.TeamID}})
	}
	return out
}

// teamTranscript is the team for the golden transcript: every persona's
// name and bot user, the first's first, and the events delivered by the
// platform of its own accord.
func (s *Sim) teamTranscript() ([]golden.Persona, []golden.Relay) {
	if len(s.team) == 0 {
		return nil, nil
	}
	ps := []golden.Persona{{Name: sim.DefaultWorld().Name, User: bot.UserID}}
	names := map[string]string{bot.UserID: sim.DefaultWorld().Name}
	for _, m := range s.team {
		ps = append(ps, golden.Persona{Name: m.Name, User: m.Bot.UserID})
		names[m.Bot.UserID] = m.Name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []golden.Relay
	for _, r := range s.relays {
		rs = append(rs, golden.Relay{TS: r.ts, To: names[r.to], Dropped: s.drops[r.id]})
	}
	return ps, rs
}

// relayCount is how many events the platform delivered of its own accord.
func (s *Sim) relayCount() int {
	if len(s.team) == 0 {
		return 0 // a persona alone: nothing is relayed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.relays)
}

// expectTeamDrop checks that the persona st names dropped, with st's
// reason, something the last send set going: the send itself (the first
// persona's events) or a message the platform delivered to it since.
func (p *Player) expectTeamDrop(st sim.Step) error {
	to := p.s.botOf(st.Persona).UserID
	s := p.s
	s.mu.Lock()
	var got []string
	if to == bot.UserID {
		for _, id := range p.last.IDs {
			got = append(got, s.drops[id])
		}
	}
	for _, r := range s.relays[min(p.relaysBefore, len(s.relays)):] {
		if r.to == to {
			got = append(got, s.drops[r.id])
		}
	}
	s.mu.Unlock()
	var seen []string
	for _, d := range got {
		if d == st.Reason {
			return nil
		}
		if d != "" {
			seen = append(seen, d)
		}
	}
	if len(seen) == 0 {
		return fmt.Errorf("expected %s to drop a message with reason %s since the last send; it dropped none", st.Persona, st.Reason)
	}
	return fmt.Errorf("expected %s to drop a message with reason %s since the last send; it dropped them with %s", st.Persona, st.Reason, strings.Join(seen, ", "))
}
