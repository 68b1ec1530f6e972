package budget

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// spendUSD records input tokens of claude-sonnet-4-5 ($3 per million)
// worth usd dollars.
func (r *rig) spendUSD(t *testing.T, turn *pipeline.Turn, usd float64) {
	t.Helper()
	r.g.Record(t.Context(), r.g.Spent(turn, "claude-sonnet-4-5", store.Usage{Input: int64(math.Round(usd / 3 * 1e6))}))
}

// A channel's dollar cap, reached mid-day: told at 80 % in dollars, then
// refused with the dollar budget named and the raise card in dollars; the
// next day in AGENT_TZ's zone the channel speaks again. The token budget
// beside it is not what stopped it.
func TestGuardChannelDollarsReachedAndReset(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 14:00 in Berlin.
	r := newRig(t, persona.Budgets{Channel: 100_000_000, ChannelUSD: 5}, berlin, time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC))
	r.spendUSD(t, r.turn, 3)
	if !r.admit(t, r.turn) || len(r.out.take()) != 0 {
		t.Fatal("at 60 %: refused or told")
	}
	r.spendUSD(t, r.turn, 1.2)
	if !r.admit(t, r.turn) {
		t.Fatal("at 84 %: refused")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget: 84 % of this channel's budget for today is used ($4.20 of $5.00)" {
		t.Fatalf("notice %q", got)
	}
	r.spendUSD(t, r.turn, 0.9)
	other := r.turnIn("C1", "2.0")
	if r.admit(t, other) {
		t.Fatal("at 102 %: admitted")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget reached: channel $5.00/day (resets 2026-03-02 00:00 Europe/Berlin)" {
		t.Fatalf("refusal %q", got)
	}
	if len(r.gate.asked) != 1 || r.gate.asked[0].Summary != "Raise the budget of <#C1> by $5.00? It has used $5.10 of $5.00. "+
		"The raise is for today (2026-03-01) only, for every thread under this budget." {
		t.Fatalf("cards %+v", r.gate.asked)
	}
	if n := testutil.ToFloat64(r.g.Exhausted.WithLabelValues("channel_usd")); n != 1 {
		t.Errorf("exhausted{channel_usd} = %v", n)
	}
	if n := testutil.ToFloat64(r.g.Exhausted.WithLabelValues(Channel)); n != 0 {
		t.Errorf("exhausted{channel} = %v: the token budget counted the refusal", n)
	}
	today, err := r.g.Today(t.Context(), 20)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, l := range today.Lines {
		said = append(said, l.String())
	}
	if want := "channel <#C1>: 1700000 of 100000000 tokens today|channel <#C1>: $5.10 of $5.00 today"; strings.Join(said, "|") != want {
		t.Errorf("today = %q, want %q", said, want)
	}
	r.clock.Advance(9*time.Hour + 59*time.Minute) // 23:59 in Berlin: still today
	if r.admit(t, other) {
		t.Fatal("23:59: admitted")
	}
	r.out.take()
	r.clock.Advance(2 * time.Minute) // 00:01 the next day in Berlin
	if !r.admit(t, other) {
		t.Fatalf("the next day: still refused: %q", r.out.take())
	}
}

// Approved, the raise card lifts a dollar cap by its size for the day.
func TestGuardPersonaDollarsRaised(t *testing.T) {
	r := newRig(t, persona.Budgets{PersonaUSD: 1}, nil, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	r.gate.decision = store.ApprovalApproved
	r.spendUSD(t, r.turnIn("C9", "9.0"), 1.5)
	if !r.admit(t, r.turn) {
		t.Fatal("raised by the card: still refused")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget reached: persona $1.00/day (resets 2026-03-02 00:00 UTC)" {
		t.Fatalf("posts %q", got)
	}
	r.spendUSD(t, r.turn, 0.6) // $2.10 of $2.00
	r.gate.decision = store.ApprovalDenied
	if r.admit(t, r.turn) {
		t.Fatal("past the raised cap: admitted")
	}
}

// A scheduled run stops at its per-run cap and says so in its target; the
// next run of the schedule starts afresh; other turns are not held to it.
func TestGuardScheduleRunCap(t *testing.T) {
	r := newRig(t, persona.Budgets{ScheduleUSD: 1}, nil, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	run := func(id string) *pipeline.Turn {
		return &pipeline.Turn{Event: &pipeline.Event{ID: id, Kind: pipeline.KindSchedule, ChannelID: "C1", TS: "5.0", UserID: "U1"},
			Access: pipeline.Access{Layer: pipeline.LayerTrusted}, Out: r.out}
	}
	first := run("sched:1:100")
	r.spendUSD(t, first, 0.5)
	if !r.admit(t, first) {
		t.Fatal("at 50 %: stopped")
	}
	r.spendUSD(t, first, 0.6)
	if r.admit(t, first) {
		t.Fatal("at 110 %: the run went on")
	}
	if got := r.out.take(); len(got) != 1 || got[0] != "budget reached: schedule $1.00/run (resets at the next run): this run stopped at $1.10" {
		t.Fatalf("posts %q", got)
	}
	if len(r.gate.asked) != 0 {
		t.Errorf("a run's cap asked a card: %+v", r.gate.asked)
	}
	if n := testutil.ToFloat64(r.g.Exhausted.WithLabelValues("schedule_usd")); n != 1 {
		t.Errorf("exhausted{schedule_usd} = %v", n)
	}
	if !r.admit(t, run("sched:1:200")) {
		t.Error("the next run: stopped")
	}
	if !r.admit(t, r.turnIn("C1", "5.0")) {
		t.Error("a person's turn held to the run's cap")
	}
}
