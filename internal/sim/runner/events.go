package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

func (s *Sim) onHandled(ev *pipeline.Event, _ error) {
	s.mu.Lock()
	delete(s.pending, ev.ID)
	if ev.Kind == pipeline.KindStop && ev.Stop != nil && ev.Stop.Stopped {
		s.stopped[ev.ID] = true
	}
	close(s.progress)
	s.progress = make(chan struct{})
	s.mu.Unlock()
}

func (s *Sim) onDrop(ev *pipeline.Event, reason string) {
	s.mu.Lock()
	s.drops[ev.ID] = reason
	s.mu.Unlock()
}

// inject hands an event to the service under a fresh id and remembers it
// as pending.
func (s *Sim) inject(ev *pipeline.Event) error {
	s.track(ev)
	err := s.chat.Inject(ev)
	s.placed(ev)
	return err
}

// injectMention hands a channel message that mentions the bot to the
// service with its app_mention twin, both at once, as the platform sends
// them.
func (s *Sim) injectMention(ev, twin *pipeline.Event) error {
	s.track(ev)
	s.track(twin)
	err := s.chat.InjectMention(ev, twin)
	s.placed(ev)
	s.placed(twin)
	return err
}

// injectMentionTo is injectMention for a persona of the team: the
// app_mention twin goes to its app.
func (s *Sim) injectMentionTo(app *platform.App, ev, twin *pipeline.Event) error {
	s.track(ev)
	s.track(twin)
	err := app.InjectMention(ev, twin)
	s.placed(ev)
	s.placed(twin)
	return err
}

// placed records the thread of a message, known once the platform gave
// it its ts.
func (s *Sim) placed(ev *pipeline.Event) {
	if ev.Kind != pipeline.KindMessage {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.injected) - 1; i >= 0; i-- {
		if s.injected[i].id == ev.ID {
			s.injected[i].thread = ev.ThreadKey()
			return
		}
	}
}

// pendingIn returns the ids of the messages of thread key not handled yet.
func (s *Sim) pendingIn(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, in := range s.injected {
		if in.thread == key && s.pending[in.id] {
			ids = append(ids, in.id)
		}
	}
	return ids
}

// track gives ev a fresh id and remembers it as pending.
func (s *Sim) track(ev *pipeline.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.ID = fmt.Sprintf("EvSIM%05d", s.seq)
	if ev.Kind == pipeline.KindAction {
		ev.ID = "action:" + ev.ID
	}
	s.pending[ev.ID] = true
	s.injected = append(s.injected, injected{id: ev.ID, typ: ev.Type})
}

// Drops returns, for each of in's events, the reason the gateway dropped
// it, "" for an event it did not drop.
func (s *Sim) Drops(in Injected) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(in.IDs))
	for i, id := range in.IDs {
		out[i] = s.drops[id]
	}
	return out
}

// Settle waits until what in set going has settled: its events were
// handled (with scope All, every event injected so far), or a turn waits
// on a card that was not there before (it will go on after a click). A
// click first waits for its own event: a refused click changes no card.
// Each wait fails after the simulation's settle time, or with ctx's error
// when ctx is done.
func (s *Sim) Settle(ctx context.Context, in Injected) error {
	if in.click {
		if err := s.wait(ctx, "the click was not handled", func() bool { return s.handled(false, in.IDs) }); err != nil {
			return err
		}
	}
	if in.stopping != nil {
		// A stop that stopped the thread's turn settles when that turn
		// has ended (its card expired, its session active); one refused
		// leaves the turn where it was.
		s.mu.Lock()
		stopped := s.stopped[in.IDs[0]]
		s.mu.Unlock()
		if stopped {
			return s.wait(ctx, "the stopped turn did not end", func() bool { return s.handled(false, in.stopping) })
		}
	}
	// A click the gate took resumed a turn: the card it decided counts as
	// resolved whether or not its update has reached the platform yet, so
	// that the step ends with that turn (its reply, its feedback buttons)
	// and not before, or with a new card.
	decided := "" // the ts of that card, else none
	if in.click && in.card != "" {
		if took, _ := s.stores.approvalDecided(ctx, in.card); took {
			decided = in.TS
		}
	}
	return s.wait(ctx, "the service did not settle", func() bool {
		if len(s.team) > 0 && s.release() {
			return false // a persona is at work again
		}
		return s.handled(s.scope == All, in.IDs) || unresolvedBut(s.chat.Cards(), decided) > in.CardsBefore
	})
}

// handled reports whether the events ids were handled, or with all every
// event injected so far.
func (s *Sim) handled(all bool, ids []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if all {
		return len(s.pending) == 0
	}
	return !slices.ContainsFunc(ids, func(id string) bool { return s.pending[id] })
}

// wait waits until cond holds, checking at once and after every change
// of the platform or handled event.
func (s *Sim) wait(ctx context.Context, what string, cond func() bool) error {
	timeout := time.NewTimer(s.settle)
	defer timeout.Stop()
	for {
		changed := s.chat.Changed()
		s.mu.Lock()
		progress := s.progress
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return errors.New(what + " in time")
		}
	}
}

// transcript is the golden transcript of the simulation so far.
func (s *Sim) transcript(sc *sim.Scenario) string {
	entries := s.chat.Messages()
	calls := s.tools.list()
	s.mu.Lock()
	events := make([]golden.Event, len(s.injected))
	for i, in := range s.injected {
		events[i] = golden.Event{Type: in.typ, Dropped: s.drops[in.id]}
	}
	s.mu.Unlock()
	personas, relays := s.teamTranscript()
	return golden.Render(golden.Transcript{Scenario: sc, Entries: entries, Events: events, Tools: calls, Home: s.home, Bot: bot.UserID,
		Personas: personas, Relays: relays})
}

// toolLog collects the tool calls of one simulation.
type toolLog struct {
	mu    sync.Mutex
	calls []golden.ToolCall
}

func (l *toolLog) add(after int, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, golden.ToolCall{After: after, Line: line})
}

// addPlain adds a line of the runner's own (a restart) after after
// entries.
func (l *toolLog) addPlain(after int, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, golden.ToolCall{After: after, Line: line, Plain: true})
}

func (l *toolLog) list() []golden.ToolCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// unresolvedBut is unresolved without the card at ts ("": none).
func unresolvedBut(cards []platform.Card, ts string) int {
	n := 0
	for _, c := range cards {
		if !c.Resolved && (ts == "" || c.TS != ts) {
			n++
		}
	}
	return n
}

// unresolved counts the cards still waiting for a click.
func unresolved(cards []platform.Card) int { return unresolvedBut(cards, "") }
