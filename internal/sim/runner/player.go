package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/sim"
)

// Player plays a scenario's steps on a simulation, one at a time: the
// runner plays every step of a scenario in a simulation of its own, the
// REPL plays them into its running one.
type Player struct {
	s       *Sim
	sc      *sim.Scenario
	world   sim.World
	threads map[string]string // label → channel + "/" + root ts
	last    Injected          // the last send
	// lastThread is the last send's thread: channel + "/" + root ts.
	lastThread string
	// relaysBefore is how many events the platform had delivered of its
	// own accord (a team's) before the last send.
	relaysBefore int
}

// NewPlayer returns a player of sc on s.
func NewPlayer(s *Sim, sc *sim.Scenario) *Player {
	return &Player{s: s, sc: sc, world: sim.DefaultWorld().Merge(sc.Soul), threads: map[string]string{}}
}

// Scenario is the scenario played.
func (p *Player) Scenario() *sim.Scenario { return p.sc }

// LastSend is what the last send step injected.
func (p *Player) LastSend() Injected { return p.last }

// Play plays one step: a send or a click settles before it returns; an
// expectation waits, event-driven and bounded, until it holds.
func (p *Player) Play(ctx context.Context, st sim.Step) error {
	if st.Persona != "" && st.Persona != sim.DefaultWorld().Name && p.s.member(st.Persona) == nil {
		return fmt.Errorf("persona %q does not run in this simulation", st.Persona)
	}
	switch st.Kind {
	case sim.StepSend:
		return p.send(ctx, st)
	case sim.StepClick:
		return p.click(ctx, st)
	case sim.StepExpectReply:
		return p.expectReply(ctx, st)
	case sim.StepExpectCard, sim.StepExpectPending:
		return p.expectCard(ctx, st)
	case sim.StepExpectDrop:
		return p.expectDrop(st)
	case sim.StepAdvance:
		return p.s.Advance(ctx, st.Advance)
	case sim.StepRestart:
		return p.s.Restart(ctx, st.Advance)
	case sim.StepSchedule:
		return p.schedule(ctx, st)
	case sim.StepHome:
		return p.home(ctx, st)
	}
	return fmt.Errorf("unknown step %q", st.Kind)
}

func (p *Player) actor(as string) (string, error) {
	if as == "" {
		as = p.sc.As
	}
	u, ok := p.world.RoleUser(as)
	if !ok {
		return "", fmt.Errorf("unknown actor %q", as)
	}
	return u, nil
}

func (p *Player) send(ctx context.Context, st sim.Step) error {
	user, err := p.actor(st.As)
	if err != nil {
		return err
	}
	channel, thread := sim.LayerChannel(p.sc.Layer), ""
	if st.Channel != "" {
		channel = st.Channel
	}
	if st.DM {
		channel = sim.LayerChannel("dm")
	}
	if at, ok := p.threads[st.Thread]; ok && st.Thread != "" {
		channel, thread, _ = strings.Cut(at, "/")
	}
	before := p.s.relayCount()
	in, err := p.s.SendWith(user, channel, thread, st.Text, SendOptions{Mention: st.Mention, Bot: st.Bot, Peer: st.Peer, Files: st.Files,
		Persona: st.Persona})
	if err != nil {
		return err
	}
	p.last, p.relaysBefore = in, before
	if st.Thread != "" && thread == "" {
		p.threads[st.Thread] = channel + "/" + in.TS
	}
	if thread == "" {
		thread = in.TS
	}
	p.lastThread = channel + "/" + thread
	return p.s.Settle(ctx, in)
}

func (p *Player) click(ctx context.Context, st sim.Step) error {
	user, err := p.actor(st.As)
	if err != nil {
		return err
	}
	if st.Action == sim.ActionStop {
		in, err := p.s.Stop(user)
		if err != nil {
			return err
		}
		return p.s.Settle(ctx, in)
	}
	cards := p.s.chat.Cards()
	card, ok := newest(cards, st.Action)
	if !ok {
		return fmt.Errorf("expected an unresolved card offering %q; saw %d card(s), none offering it", st.Action, len(cards))
	}
	in, err := p.s.Click(user, card, st.Action)
	if err != nil {
		return err
	}
	return p.s.Settle(ctx, in)
}

// schedule makes a schedule of the actor in the thread labelled st.Thread,
// else in the last send's thread, as the schedule commands would there.
func (p *Player) schedule(ctx context.Context, st sim.Step) error {
	user, err := p.actor(st.As)
	if err != nil {
		return err
	}
	at := p.lastThread
	if st.Thread != "" {
		var ok bool
		if at, ok = p.threads[st.Thread]; !ok {
			return fmt.Errorf("schedule: no thread labelled %q was sent before", st.Thread)
		}
	}
	if at == "" {
		return errors.New("schedule: no thread to make it in: send in one first")
	}
	channel, thread, _ := strings.Cut(at, "/")
	if st.Channel != "" && st.Channel != channel {
		return fmt.Errorf("schedule: thread %q is in %s, not %s", st.Thread, channel, st.Channel)
	}
	_, err = p.s.Schedule(ctx, schedule.Request{Creator: user, Channel: channel, ThreadTS: thread,
		Target: schedule.Target(st.Target), When: st.When, Prompt: st.Prompt})
	return err
}

// home opens the actor's Home tab, or clicks a button of it.
func (p *Player) home(ctx context.Context, st sim.Step) error {
	user, err := p.actor(st.As)
	if err != nil {
		return err
	}
	in, err := p.s.HomeTab(user, st.Button, st.Value)
	if err != nil {
		return err
	}
	return p.s.Settle(ctx, in)
}
