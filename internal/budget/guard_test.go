package budget

import (
	"context"
	"errors"
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

// asker is the gate: it records every card's approval and answers it
// with decision, by U0MGR; with pending set it leaves the approval
// waiting (as a card another turn waits for) and answers it expired.
type asker struct {
	st       *store.Store
	decision string
	pending  bool
	asked    []approval.Request
}

func (a *asker) Ask(ctx context.Context, r approval.Request) (approval.Outcome, error) {
	a.asked = append(a.asked, r)
	err := a.st.CreateApproval(ctx, store.Approval{ID: r.ID, ThreadKey: r.ThreadKey, ChannelID: r.ChannelID,
		ThreadTS: r.ThreadTS, Category: r.Category, Summary: r.Summary, RequestedBy: r.RequestedBy})
	if err == nil {
		err = a.st.SetApprovalCard(ctx, r.ID, "9.9")
	}
	if err != nil {
		return approval.Outcome{}, err
	}
	if a.pending {
		return approval.Outcome{State: store.ApprovalExpired, ID: r.ID}, nil
	}
	if _, err := a.st.DecideApproval(ctx, r.ID, a.decision, "U0MGR"); err != nil {
		return approval.Outcome{}, err
	}
	return approval.Outcome{State: a.decision, By: "U0MGR", ID: r.ID}, nil
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
	st, err := store.Open(t.Context(), store.InMemory, store.Options{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{st: st, clock: c, gate: &asker{st: st, decision: store.ApprovalDenied}, out: &outbox{}}
	r.g = &Guard{Store: st, Prices: DefaultPrices(), Budgets: b, Zone: zone, Now: c.Now, Gate: r.gate,
		Exhausted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"budget"}),
		Cost:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "y"}, []string{"channel_layer", "model"}),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil))}
	r.turn = r.turnIn("C1", "1.0")
	return r
}

func (r *rig) turnIn(channel, root string) *pipeline.Turn {
	return r.turnOf("U1", channel, root)
}

func (r *rig) turnOf(user, channel, root string) *pipeline.Turn {
	return &pipeline.Turn{Event: &pipeline.Event{ChannelID: channel, TS: root, UserID: user},
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

// failingUsage is a store whose usage cannot be read.
type failingUsage struct{ *store.Store }

func (failingUsage) UsageOf(context.Context, store.UsageFilter) ([]store.UsageRow, error) {
	return nil, errors.New("database is locked")
}

// A budget that cannot be read refuses the turn, told; it does not let
// unknown spend through.
func TestGuardFailsClosed(t *testing.T) {
	r := newRig(t, persona.Budgets{Persona: 1000}, nil, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r.g.Store = failingUsage{r.st}
	ok, err := r.g.Admit(t.Context(), r.turn, func() {})
	if err != nil || ok {
		t.Fatalf("admit on an unreadable store = %v, %v; want refused", ok, err)
	}
	if got := r.out.take(); len(got) != 1 || got[0] != CheckFailedText {
		t.Fatalf("posts %q, want the check-failed line", got)
	}
	// No budget set: nothing to read, nothing refused.
	r.g.Budgets = persona.Budgets{}
	if !r.admit(t, r.turn) {
		t.Error("no budgets: refused")
	}
}

// One raise card per budget at a time: while the persona budget's card
// waits, another thread's refusal points to it; once it is decided, the
// next refusal asks again. An approved raise of a daily budget holds for
// every thread under it.
func TestGuardOneRaiseCardPerBudget(t *testing.T) {
	r := newRig(t, persona.Budgets{Persona: 1000, Thread: 100_000}, nil, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r.spend(t, r.turn, 1000)
	r.gate.pending = true
	if r.admit(t, r.turn) {
		t.Fatal("persona at 100 %: admitted")
	}
	r.out.take()
	other := r.turnOf("U2", "D2", "5.0")
	if r.admit(t, other) {
		t.Fatal("another thread admitted")
	}
	want := "budget reached: persona (resets 2026-03-02 00:00 UTC); a raise is already asked: " +
		"[the card](https://slack.com/archives/C1/p99?thread_ts=1.0&cid=C1)"
	if got := r.out.take(); len(got) != 1 || got[0] != want {
		t.Fatalf("the second refusal = %q, want %q", got, want)
	}
	if len(r.gate.asked) != 1 {
		t.Fatalf("cards asked = %d, want 1", len(r.gate.asked))
	}
	if n := testutil.ToFloat64(r.g.Exhausted.WithLabelValues(Persona)); n != 2 {
		t.Errorf("exhausted{persona} = %v, want 2", n)
	}
	// The card is decided (denied): the next refusal asks again.
	if _, err := r.st.DecideApproval(t.Context(), r.gate.asked[0].ID, store.ApprovalDenied, "U0MGR"); err != nil {
		t.Fatal(err)
	}
	r.gate.pending, r.gate.decision = false, store.ApprovalApproved
	if !r.admit(t, other) {
		t.Fatal("approved raise: refused")
	}
	if len(r.gate.asked) != 2 || !strings.Contains(r.gate.asked[1].Summary, "Raise the persona's budget by 1000 tokens") ||
		!strings.Contains(r.gate.asked[1].Summary, "for every thread under this budget") {
		t.Fatalf("cards = %+v", r.gate.asked)
	}
	// The raise is the persona's for today: the first thread goes on too.
	r.out.take()
	if !r.admit(t, r.turn) {
		t.Error("after the persona budget was raised, another thread refused")
	}
}

// A person's budget counts the tokens of the turns they sent, in every
// thread; others are not held by it.
func TestGuardPersonBudget(t *testing.T) {
	r := newRig(t, persona.Budgets{Person: 1000}, nil, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r.spend(t, r.turnOf("U1", "C1", "1.0"), 600)
	r.spend(t, r.turnOf("U1", "D1", "2.0"), 200)
	if !r.admit(t, r.turnOf("U1", "C2", "3.0")) {
		t.Fatal("80 %: refused")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget: 80 % of your budget for today is used (800 of 1000 tokens)" {
		t.Fatalf("80 %%: posts %q", got)
	}
	r.spend(t, r.turnOf("U1", "D1", "2.0"), 200)
	if r.admit(t, r.turnOf("U1", "C2", "3.0")) {
		t.Fatal("person at 100 %: admitted")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget reached: person (resets 2026-03-02 00:00 UTC)" {
		t.Fatalf("posts %q", got)
	}
	if !r.admit(t, r.turnOf("U2", "C1", "1.0")) {
		t.Error("another person refused, in the same thread")
	}
	if n := testutil.ToFloat64(r.g.Exhausted.WithLabelValues(Person)); n != 1 {
		t.Errorf("exhausted{person} = %v", n)
	}
	if len(r.gate.asked) != 1 || !strings.Contains(r.gate.asked[0].Summary, "Raise the budget of <@U1> by 1000 tokens") {
		t.Fatalf("card = %+v", r.gate.asked)
	}
}

// Tokens of a pricier model count for more, in default-model tokens, and
// the notices say so.
func TestGuardWeighsByModelPrice(t *testing.T) {
	r := newRig(t, persona.Budgets{Thread: 10_000}, nil, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r.g.Prices.Default, r.g.Weighed = "claude-sonnet-4-5", true
	// 1,600 input tokens of opus 4.1 are five sonnet-priced 1,600: 8,000.
	r.g.Record(t.Context(), r.g.Spent(r.turn, "claude-opus-4-1", store.Usage{Input: 1600}))
	if !r.admit(t, r.turn) {
		t.Fatal("80 %: refused")
	}
	want := "budget: 80 % of this thread's budget is used (8000 of 10000 tokens); tokens weighted by model price, in claude-sonnet-4-5 tokens"
	if got := r.out.take(); len(got) != 1 || got[0] != want {
		t.Fatalf("posts %q, want %q", got, want)
	}
	r.g.Record(t.Context(), r.g.Spent(r.turn, "claude-sonnet-4-5", store.Usage{Input: 2000}))
	if r.admit(t, r.turn) {
		t.Fatal("100 %: admitted")
	}
	if got := r.out.take(); len(got) != 1 || !strings.HasPrefix(got[0], "budget reached: thread (resets only when raised); tokens weighted by model price, in claude-sonnet-4-5 tokens") {
		t.Fatalf("posts %q", got)
	}
}
