package budget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Store is what the guard keeps in the database (*store.Store).
type Store interface {
	RecordUsage(ctx context.Context, r store.UsageRecord) error
	UsageOf(ctx context.Context, f store.UsageFilter) ([]store.UsageRow, error)
	NoteBudgetNotice(ctx context.Context, threadKey, day string) (bool, error)
	RaiseBudget(ctx context.Context, key, budget, day string, tokens int64, by string) error
	BudgetRaised(ctx context.Context, key, budget, day string) (int64, error)
	ClaimBudgetCard(ctx context.Context, key, id string) (store.Approval, bool, error)
	// UsageBy is today's spend per channel or person (today.go).
	UsageBy(ctx context.Context, since time.Time, by string) ([]store.UsageRow, error)
}

// Asker posts an approval card and waits for its decision (*approval.Gate).
type Asker interface {
	Ask(ctx context.Context, r approval.Request) (approval.Outcome, error)
}

// The budgets, as agent_budget_exhausted_total and the refusal name them.
const (
	Thread  = "thread"
	Channel = "channel"
	Person  = "person"
	Persona = "persona"
)

// Category is the approval category of the card that raises a thread's
// budget: the manager, or an approver with this scope, decides it.
const Category = persona.ScopeBudget

// noticeAt is the share of a budget past which the thread is told, once a
// day.
const noticeAt = 0.8

// Guard records the tokens of each model call of a turn and holds the
// turns to the persona's budgets. It implements the engine's Budget.
type Guard struct {
	Store  Store
	Prices *Prices
	// Budgets are the persona's "## Budgets".
	Budgets persona.Budgets
	// Zone is where a budget's day ends at midnight (AGENT_TZ; nil: UTC).
	Zone *time.Location
	// Now is the service's clock.
	Now func() time.Time
	// Gate posts the card that raises a budget; nil: no card.
	Gate Asker
	// NewID names a raise card before it is asked (nil: store.NewID).
	NewID func() string
	// Weighed makes the notices say the budgets count tokens weighed by
	// model price, in the default model's tokens (Prices.Weighed: a
	// thread may use another model).
	Weighed bool
	// Exhausted is agent_budget_exhausted_total{budget}; Cost is
	// agent_llm_cost_usd_total{channel_layer}. Either may be nil.
	Exhausted *prometheus.CounterVec
	Cost      *prometheus.CounterVec
	Log       *slog.Logger
}

// Spent counts one model call of the turn: its estimated cost in the
// metric, and it returns the row of its tokens for model_usage (the one
// record of tokens), which the engine writes with the answer the call
// brought (store.Answer.Spent) or in a write of its own. Admit reads them
// before the turn's next call: the answer's write has committed by then.
func (g *Guard) Spent(t *pipeline.Turn, model string, u store.Usage) store.UsageRecord {
	if g.Cost != nil {
		g.Cost.WithLabelValues(string(t.Access.Layer), model).Add(max(g.Prices.Cost(model, u), 0))
	}
	return store.UsageRecord{At: g.now(), ThreadKey: t.Event.ThreadKey(), ChannelID: t.Event.ChannelID,
		UserID: t.Event.UserID, Model: model, Usage: u}
}

// Record stores a model call's tokens in a write of their own. A failed
// write is logged: the reply is worth more than the count.
func (g *Guard) Record(ctx context.Context, r store.UsageRecord) {
	if err := g.Store.RecordUsage(ctx, r); err != nil {
		g.Log.WarnContext(ctx, "record model usage", "thread", r.ThreadKey, "err", err)
	}
}

// standing is one budget's state for a turn.
type standing struct {
	budget      string
	day         string // "" for the thread budget
	used, limit int64  // limit with the raises
	base        int64  // the limit of SOUL.md
	// holder is what the budget holds, as its raises are stored: the
	// thread's key, the channel's, the person's id, "" for the persona.
	holder string
}

// cardKey names the budget s and what it holds, for its one raise card
// at a time (store.ClaimBudgetCard).
func (s standing) cardKey() string {
	switch s.budget {
	case Thread:
		return Thread + ":" + s.holder
	case Persona:
		return Persona + ":" + s.day
	}
	return s.budget + ":" + s.holder + ":" + s.day
}

// Admit decides whether the turn may call the model (before its first
// call and after each): it may while every budget is below its line. The
// first time in a day a budget passes 80 %, the thread is told; at 100 %
// the thread gets "budget reached: <which> (resets <when>)" and the card
// that raises the budget, and the turn waits for it: approved, the budget
// grows by its size (a daily one for today) and the turn goes on. While a
// budget's card waits, another refusal of that budget points to it
// instead of asking again. A budget that cannot be read refuses the turn
// (fails closed), told: spend nobody can count is not allowed. show is
// called before anything is posted (the turn's first status must land
// first).
func (g *Guard) Admit(ctx context.Context, t *pipeline.Turn, show func()) (bool, error) {
	if !g.Budgets.Any() {
		return true, nil
	}
	now := g.now().In(g.zone())
	day, midnight := now.Format(time.DateOnly), startOfDay(now)
	list, err := g.standings(ctx, t, day, midnight)
	if err != nil {
		// Spend that cannot be counted is not allowed: the turn stops
		// before the model is asked, told, and the failure is logged.
		g.Log.ErrorContext(ctx, "budget check failed: turn refused", "thread", t.Event.ThreadKey(), "err", err)
		show()
		if _, err := t.Out.Post(ctx, CheckFailedText); err != nil {
			return false, err
		}
		return false, nil
	}
	var near *standing
	for i := range list {
		s := &list[i]
		if s.used >= s.limit {
			return g.refuse(ctx, t, *s, midnight, show)
		}
		if float64(s.used) >= noticeAt*float64(s.limit) && (near == nil || ratio(*s) > ratio(*near)) {
			near = s
		}
	}
	if near != nil {
		first, err := g.Store.NoteBudgetNotice(ctx, t.Event.ThreadKey(), day)
		if err != nil {
			g.Log.WarnContext(ctx, "budget notice", "thread", t.Event.ThreadKey(), "err", err)
		}
		if first {
			show()
			if _, err := t.Out.Post(ctx, noticeText(*near)+g.weighedNote()); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

// standings are the turn's budgets that SOUL.md sets, in the order they
// are checked: thread, channel, person (the turn's sender; a scheduled
// run's creator), persona.
func (g *Guard) standings(ctx context.Context, t *pipeline.Turn, day string, midnight time.Time) ([]standing, error) {
	key, user := t.Event.ThreadKey(), t.Event.UserID
	var out []standing
	for _, b := range []struct {
		name   string
		limit  int64
		f      store.UsageFilter
		day    string
		holder string
	}{
		{Thread, g.Budgets.Thread, store.UsageFilter{ThreadKey: key, Since: time.UnixMilli(0)}, "", key},
		{Channel, g.Budgets.Channel, store.UsageFilter{ChannelID: t.Event.ChannelID, Since: midnight}, day, pipeline.ThreadKey(t.Event.ChannelID, "")},
		{Person, g.Budgets.Person, store.UsageFilter{UserID: user, Since: midnight}, day, user},
		{Persona, g.Budgets.Persona, store.UsageFilter{Since: midnight}, day, ""},
	} {
		if b.limit <= 0 || (b.name == Person && user == "") {
			continue
		}
		rows, err := g.Store.UsageOf(ctx, b.f)
		if err != nil {
			return nil, err
		}
		raised, err := g.Store.BudgetRaised(ctx, b.holder, b.name, b.day)
		if err != nil {
			return nil, err
		}
		s := standing{budget: b.name, day: b.day, limit: b.limit + raised, base: b.limit, holder: b.holder}
		for _, r := range rows {
			s.used += g.Prices.Tokens(r.Model, r.Usage)
		}
		out = append(out, s)
	}
	return out, nil
}

// refuse tells the thread the budget s is reached and offers the card that
// raises it; the turn goes on only if it is approved. While another card
// of the budget waits, the thread is pointed to it instead: one card per
// budget at a time, however many threads it stops.
func (g *Guard) refuse(ctx context.Context, t *pipeline.Turn, s standing, midnight time.Time, show func()) (bool, error) {
	if g.Exhausted != nil {
		g.Exhausted.WithLabelValues(s.budget).Inc()
	}
	g.Log.InfoContext(ctx, "budget reached", "budget", s.budget, "thread", t.Event.ThreadKey(), "used", s.used, "limit", s.limit)
	show()
	line := RefusalText(s.budget, resets(s, midnight, g.zone())) + g.weighedNote()
	if g.Gate == nil {
		_, err := t.Out.Post(ctx, line)
		return false, err
	}
	id := g.newID()
	holder, held, err := g.Store.ClaimBudgetCard(ctx, s.cardKey(), id)
	switch {
	case err != nil:
		// No card without its claim: a card per refused thread is what
		// the claim prevents. The raise can be asked again shortly.
		g.Log.WarnContext(ctx, "budget raise card not asked", "budget", s.budget, "thread", t.Event.ThreadKey(), "err", err)
		_, err := t.Out.Post(ctx, line)
		return false, err
	case held:
		_, err := t.Out.Post(ctx, line+"; a raise is already asked: "+cardLink(holder))
		return false, err
	}
	if _, err := t.Out.Post(ctx, line); err != nil {
		return false, err
	}
	out, err := g.Gate.Ask(ctx, approval.Request{ID: id, ThreadKey: t.Event.ThreadKey(), ChannelID: t.Event.ChannelID,
		ThreadTS: t.Event.RootTS(), RequestedBy: t.Event.UserID, Category: Category, Summary: raiseSummary(s),
		Digest: approval.Digest(Category, []byte(s.cardKey()+"\x00"+fmt.Sprint(s.limit)))})
	if err != nil {
		return false, err
	}
	if !out.Approved() {
		return false, nil
	}
	if err := g.Store.RaiseBudget(ctx, s.holder, s.budget, s.day, s.base, out.By); err != nil {
		return false, err
	}
	g.Log.InfoContext(ctx, "budget raised", "budget", s.budget, "thread", t.Event.ThreadKey(), "tokens", s.base, "by", out.By)
	return true, nil
}

// raiseSummary is what the raise card of s asks.
func raiseSummary(s standing) string {
	whose := map[string]string{Thread: "this thread's budget", Channel: "the budget of <#" + channelOf(s.holder) + ">",
		Person: "the budget of <@" + s.holder + ">", Persona: "the persona's budget"}[s.budget]
	summary := fmt.Sprintf("Raise %s by %d tokens? It has used %d of %d.", whose, s.base, s.used, s.limit)
	if s.day != "" {
		summary += " The raise is for today (" + s.day + ") only"
		if s.budget != Thread {
			summary += ", for every thread under this budget"
		}
		summary += "."
	}
	return summary
}

// channelOf is the channel of a channel's key ("C1:").
func channelOf(key string) string {
	c, _, _ := strings.Cut(key, ":")
	return c
}

// cardLink links a raise card: its permalink once posted, else its
// thread's, else nothing to link yet.
func cardLink(a store.Approval) string {
	switch {
	case a.ChannelID != "" && a.CardTS != "":
		return fmt.Sprintf("[the card](%s?thread_ts=%s&cid=%s)", permalink(a.ChannelID, a.CardTS), a.ThreadTS, a.ChannelID)
	case a.ChannelID != "" && a.ThreadTS != "":
		return fmt.Sprintf("[in this thread](%s)", permalink(a.ChannelID, a.ThreadTS))
	}
	return "its card is being posted"
}

// permalink is a message's permalink; the platform redirects it to the
// workspace of whoever opens it.
func permalink(channel, ts string) string {
	return "https://slack.com/archives/" + channel + "/p" + strings.ReplaceAll(ts, ".", "")
}

// RefusalText is the line a thread gets when a budget is reached
// (interfaces.md).
func RefusalText(budget, when string) string {
	return fmt.Sprintf("budget reached: %s (resets %s)", budget, when)
}

// CheckFailedText is the line a thread gets when its budgets cannot be
// read: the turn does not go on.
const CheckFailedText = "budget check failed: I stopped before asking the model; try again shortly"

// weighedNote follows a notice when the budgets weigh tokens by price.
func (g *Guard) weighedNote() string {
	if !g.Weighed {
		return ""
	}
	return "; tokens weighted by model price, in " + g.Prices.Default + " tokens"
}

func (g *Guard) newID() string {
	if g.NewID == nil {
		return store.NewID()
	}
	return g.NewID()
}

// resets says when the budget s resets: the next midnight of the zone for
// a daily budget; a thread's budget only grows when raised.
func resets(s standing, midnight time.Time, zone *time.Location) string {
	if s.day == "" {
		return "only when raised"
	}
	next := midnight.AddDate(0, 0, 1)
	return next.Format("2006-01-02 15:04") + " " + zoneName(zone)
}

func zoneName(z *time.Location) string {
	if z == nil {
		return "UTC"
	}
	return z.String()
}

// noticeText is the 80 % notice.
func noticeText(s standing) string {
	what := "this thread's budget"
	switch s.budget {
	case Channel:
		what = "this channel's budget for today"
	case Person:
		what = "your budget for today"
	case Persona:
		what = "my budget for today"
	}
	return fmt.Sprintf("budget: %d %% of %s is used (%d of %d tokens)", int(100*ratio(s)), what, s.used, s.limit)
}

func ratio(s standing) float64 { return float64(s.used) / float64(s.limit) }

// startOfDay is the midnight that began t's day, in t's zone.
func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func (g *Guard) zone() *time.Location {
	if g.Zone == nil {
		return time.UTC
	}
	return g.Zone
}

func (g *Guard) now() time.Time {
	if g.Now == nil {
		return time.Now()
	}
	return g.Now()
}

// Check reports a guard missing what it needs.
func (g *Guard) Check() error {
	if g.Store == nil || g.Prices == nil || g.Log == nil {
		return errors.New("budget: Guard needs Store, Prices and Log")
	}
	return nil
}
