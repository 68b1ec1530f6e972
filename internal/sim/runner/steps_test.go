package runner

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// echoService stands in for the production service: it answers every
// message in its thread, drops a message seen before (the app_mention
// twin) as a duplicate, and for a message saying "card" posts an approval
// card and answers only once someone clicks on it.
type echoService struct {
	d      service.Deps
	mu     sync.Mutex
	seen   map[string]bool
	clicks chan *pipeline.Event
}

func (e *echoService) Persona() *persona.Persona { return nil }

// It has no scheduler.
func (e *echoService) AddSchedule(context.Context, string, schedule.Request) (schedule.Schedule, error) {
	return schedule.Schedule{}, errors.New("echoService: no scheduler")
}

func (e *echoService) WakeScheduler() {}

// platform is the simulated platform the runner gave the service.
func (e *echoService) platform() *platform.Chat {
	tr, _ := e.d.Platform(nil)
	return tr.(*platform.Chat)
}

func (e *echoService) Run(ctx context.Context) error {
	return e.platform().Run(ctx, func(ev *pipeline.Event) {
		if strings.Contains(ev.Text, "card") {
			go e.handle(ctx, ev) // it waits for a click
			return
		}
		e.handle(ctx, ev)
	})
}

func (e *echoService) handle(ctx context.Context, ev *pipeline.Event) {
	defer e.d.OnHandled(ev, nil)
	if ev.Kind == pipeline.KindAction {
		// As the approval gate does, the click resolves the card before
		// the turn it releases goes on.
		done := &pipeline.Card{Kind: "approval", ID: ev.Action.Value, Summary: "deploy", Outcome: "approved by <@" + ev.UserID + ">"}
		e.platform().Update(ctx, ev.TS, pipeline.Message{ChannelID: ev.ChannelID, Card: done})
		e.clicks <- ev
		return
	}
	e.mu.Lock()
	dup := e.seen[ev.ChannelID+ev.TS]
	e.seen[ev.ChannelID+ev.TS] = true
	e.mu.Unlock()
	if dup {
		e.d.OnDrop(ev, pipeline.DropDuplicate)
		return
	}
	thread := cmp.Or(ev.ThreadTS, ev.TS)
	if strings.Contains(ev.Text, "card") {
		card := &pipeline.Card{Kind: "approval", ID: "ap-" + ev.TS, Summary: "deploy", Actions: []string{pipeline.ActionApprove}}
		e.platform().Post(ctx, pipeline.Message{ChannelID: ev.ChannelID, ThreadTS: thread, Card: card})
		select {
		case <-e.clicks:
			time.Sleep(10 * time.Millisecond) // the turn goes on after the click was handled
		case <-ctx.Done():
			return
		}
	}
	e.platform().Post(ctx, pipeline.Message{ChannelID: ev.ChannelID, ThreadTS: thread, Text: "answered: " + ev.Text})
}

func startEcho(t *testing.T, scope Scope, settle time.Duration) *Sim {
	t.Helper()
	boot := func(_ context.Context, _ *config.Config, d service.Deps) (Service, error) {
		return &echoService{d: d, seen: map[string]bool{}, clicks: make(chan *pipeline.Event, 1)}, nil
	}
	s, err := Start(t.Context(), Options{Boot: boot, LandlockABI: func() int { return 1 }, Soul: []byte("# Sim\n"),
		Scope: scope, SettleTimeout: settle})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func answered(s *Sim, text string) bool {
	return slices.ContainsFunc(s.Platform().Messages(), func(e platform.Entry) bool { return e.Text == "answered: "+text })
}

// A thread's root in a channel mentions the bot and arrives twice; a
// thread reply and a DM arrive once. Settle returns once they are answered.
func TestSendTwinAndSettle(t *testing.T) {
	s := startEcho(t, All, stepTimeout)
	root, err := s.Send("U0ALICE", "C0TEAM", "", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if len(root.IDs) != 2 {
		t.Fatalf("a channel root: %+v, want a twin", root)
	}
	if err := s.Settle(t.Context(), root); err != nil {
		t.Fatal(err)
	}
	if !answered(s, "<@U0BOT> hi") {
		t.Errorf("no answer to the root: %+v", s.Platform().Messages())
	}
	if got := s.Drops(root); !slices.Equal(got, []string{"", pipeline.DropDuplicate}) {
		t.Errorf("drops %q, want the twin's duplicate", got)
	}
	for _, c := range []struct{ channel, thread string }{{"C0TEAM", root.TS}, {"D0SIM", ""}} {
		in, err := s.Send("U0ALICE", c.channel, c.thread, "more")
		if err != nil {
			t.Fatal(err)
		}
		if len(in.IDs) != 1 {
			t.Errorf("%s/%s: a twin", c.channel, c.thread)
		}
		if err := s.Settle(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
}

// A send settles when its turn waits on a new card; a click on it settles
// when the turn it released has ended.
func TestSettleOnCardAndClick(t *testing.T) {
	s := startEcho(t, All, stepTimeout)
	in, err := s.Send("U0MGR", "D0SIM", "", "card please")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	card, ok := newest(s.Platform().Cards(), pipeline.ActionApprove)
	if !ok {
		t.Fatalf("no card offering approve: %+v", s.Platform().Cards())
	}
	click, err := s.Click("U0APP", card, pipeline.ActionApprove)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(t.Context(), click); err != nil {
		t.Fatal(err)
	}
	if !answered(s, "card please") {
		t.Errorf("the released turn had not ended when the click settled")
	}
	if _, ok := newest(s.Platform().Cards(), pipeline.ActionApprove); ok {
		t.Error("the card still offers approve")
	}
}

// With scope Own a step waits for its own events only: a turn waiting on a
// card does not hold the next send, as it does with scope All.
func TestSettleScopes(t *testing.T) {
	for _, c := range []struct {
		scope Scope
		want  string // the second send's Settle error
	}{{Own, ""}, {All, "the service did not settle in time"}} {
		s := startEcho(t, c.scope, 200*time.Millisecond)
		first, err := s.Send("U0MGR", "D0SIM", "", "card please")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Settle(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		second, err := s.Send("U0MGR", "D0SIM", "", "hello")
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if err := s.Settle(t.Context(), second); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("scope %d: Settle = %q, want %q", c.scope, got, c.want)
		}
	}
}
