package budget

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// outbox keeps what a turn posts.
type outbox struct {
	mu    sync.Mutex
	posts []string
}

func (o *outbox) Post(_ context.Context, text string) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.posts = append(o.posts, text)
	return "1.1", nil
}
func (o *outbox) Update(context.Context, string, string) error { return nil }

func (o *outbox) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.posts
	o.posts = nil
	return p
}

// asker is the gate: it answers every card with decision, by U0MGR.
type asker struct {
	decision string
	asked    []approval.Request
}

func (a *asker) Ask(_ context.Context, r approval.Request) (approval.Outcome, error) {
	a.asked = append(a.asked, r)
	return approval.Outcome{State: a.decision, By: "U0MGR", ID: "A1"}, nil
}

type rig struct {
	g     *Guard
	st    *store.Store
	clock *fake.Clock
	gate  *asker
	out   *outbox
	turn  *pipeline.Turn
}

func newRig(t *testing.T, b persona.Budgets, zone *time.Location, start time.Time) *rig {
	t.Helper()
	c := fake.NewClock(start)
	st, err := store.Open(t.Context(), store.InMemory, store.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{st: st, clock: c, gate: &asker{decision: store.ApprovalDenied}, out: &outbox{}}
	r.g = &Guard{Store: st, Prices: DefaultPrices(), Budgets: b, Zone: zone, Now: c.Now, Gate: r.gate,
		Exhausted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"budget"}),
		Cost:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "y"}, []string{"channel_layer", "model"}),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil))}
	r.turn = r.turnIn("C1", "1.0")
	return r
}

func (r *rig) turnIn(channel, root string) *pipeline.Turn {
	return &pipeline.Turn{Event: &pipeline.Event{ChannelID: channel, TS: root, UserID: "U1"},
		Access: pipeline.Access{Layer: pipeline.LayerTrusted}, Out: r.out}
}

// spend records input tokens of a model whose prices are unknown (they
// count one for one), as the engine does with a call that brought no
// answer: Spent, then Record.
func (r *rig) spend(t *testing.T, turn *pipeline.Turn, n int64) {
	t.Helper()
	r.g.Record(t.Context(), r.g.Spent(turn, "claude-test", store.Usage{Input: n}))
}

func (r *rig) admit(t *testing.T, turn *pipeline.Turn) bool {
	t.Helper()
	ok, err := r.g.Admit(t.Context(), turn, func() {})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestGuardThreadBudget(t *testing.T) {
	r := newRig(t, persona.Budgets{Thread: 1000}, nil, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	r.spend(t, r.turn, 790)
	if !r.admit(t, r.turn) || len(r.out.take()) != 0 {
		t.Fatal("79 %: refused or told")
	}
	r.spend(t, r.turn, 10)
	if !r.admit(t, r.turn) {
		t.Fatal("80 %: refused")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget: 80 % of this thread's budget is used (800 of 1000 tokens)" {
		t.Fatalf("80 %%: posts %q", got)
	}
	r.spend(t, r.turn, 100)
	if !r.admit(t, r.turn) || len(r.out.take()) != 0 {
		t.Fatal("90 %: refused, or told a second time the same day")
	}
	r.spend(t, r.turn, 100)
	if r.admit(t, r.turn) {
		t.Fatal("100 %: admitted")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget reached: thread (resets only when raised)" {
		t.Fatalf("100 %%: posts %q", got)
	}
	if n := testutil.ToFloat64(r.g.Exhausted.WithLabelValues(Thread)); n != 1 {
		t.Errorf("exhausted{thread} = %v", n)
	}
	if len(r.gate.asked) != 1 || r.gate.asked[0].Category != "budget" || !strings.Contains(r.gate.asked[0].Summary, "by 1000 tokens") {
		t.Fatalf("card = %+v", r.gate.asked)
	}
	// Another thread of the channel is not this thread's budget.
	if !r.admit(t, r.turnIn("C1", "2.0")) {
		t.Error("another thread refused")
	}
	// Approved: the thread's allowance grows by the budget and the turn goes on.
	r.gate.decision = store.ApprovalApproved
	if !r.admit(t, r.turn) {
		t.Fatal("approved raise: refused")
	}
	r.out.take()
	if n, _ := r.st.BudgetRaised(t.Context(), r.turn.Event.ThreadKey(), Thread, ""); n != 1000 {
		t.Errorf("raised %d, want 1000", n)
	}
	r.gate.decision = store.ApprovalDenied
	if !r.admit(t, r.turn) {
		t.Error("after the raise, refused")
	}
}

// The day budgets end at midnight in the zone, on the clock.
func TestGuardChannelDayResets(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 23:30 in Berlin.
	r := newRig(t, persona.Budgets{Channel: 500}, berlin, time.Date(2026, 3, 1, 22, 30, 0, 0, time.UTC))
	r.spend(t, r.turn, 500)
	other := r.turnIn("C1", "2.0")
	if r.admit(t, other) {
		t.Fatal("channel at 100 %: admitted in another thread")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget reached: channel (resets 2026-03-02 00:00 Europe/Berlin)" {
		t.Fatalf("posts %q", got)
	}
	if !r.admit(t, r.turnIn("C2", "3.0")) {
		t.Error("another channel refused")
	}
	r.clock.Advance(31 * time.Minute) // 00:01 the next day in Berlin
	if !r.admit(t, other) {
		t.Error("the next day: still refused")
	}
	if n := testutil.ToFloat64(r.g.Exhausted.WithLabelValues(Channel)); n != 1 {
		t.Errorf("exhausted{channel} = %v", n)
	}
}

func TestGuardPersonaDayAndCost(t *testing.T) {
	r := newRig(t, persona.Budgets{Persona: 1000}, nil, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	// Cache reads weigh a tenth on sonnet: 10,000 of them are 1,000 tokens.
	r.g.Record(t.Context(), r.g.Spent(r.turnIn("C9", "9.0"), "claude-sonnet-4-5", store.Usage{CacheRead: 10_000}))
	if r.admit(t, r.turn) {
		t.Fatal("persona at 100 %: admitted")
	}
	if got := r.out.take(); len(got) != 1 || !strings.HasPrefix(got[0], "budget reached: persona (resets 2026-03-02 00:00 UTC)") {
		t.Fatalf("posts %q", got)
	}
	if c := testutil.ToFloat64(r.g.Cost.WithLabelValues("trusted", "claude-sonnet-4-5")); c < 0.0029 || c > 0.0031 {
		t.Errorf("cost = %v, want 0.003", c)
	}
}
