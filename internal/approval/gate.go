package approval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Chat is what the gate needs of the chat platform.
type Chat interface {
	Post(ctx context.Context, m pipeline.Message) (ts string, err error)
	Update(ctx context.Context, ts string, m pipeline.Message) error
	PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error
	// Upload attaches a call too long for its card, in the card's thread.
	Upload(ctx context.Context, u pipeline.Upload) error
}

// Store is the approvals' persistence (*store.Store).
type Store interface {
	CreateApproval(ctx context.Context, a store.Approval) error
	SetApprovalCard(ctx context.Context, id, cardTS string) error
	GetApproval(ctx context.Context, id string) (store.Approval, error)
	DecideApproval(ctx context.Context, id, event, actor string) (store.Approval, error)
	PendingApprovals(ctx context.Context) ([]store.Approval, error)
	AllowTool(ctx context.Context, threadKey, tool, by string) error
	ToolAllowed(ctx context.Context, threadKey, tool string) (bool, error)
}

// Approvers says who may decide what (*persona.Persona).
type Approvers interface {
	CanApprove(userID, category string) bool
	ApprovalTimeout() time.Duration
}

// Options configure a Gate.
type Options struct {
	Store     Store
	Chat      Chat
	Approvers Approvers
	// Manager is named in the message an unauthorised clicker gets, and
	// is the one person who may approve a request their own turn asked.
	Manager string
	NewID   func() string
	// Outcomes is agent_approvals_total{outcome} (may be nil).
	Outcomes *prometheus.CounterVec
	Log      *slog.Logger
	// Notify, when set, tells the other replicas that the approval id was
	// decided here (the waiting turn may run there); they call Wake.
	Notify func(ctx context.Context, id string) error
	// Poll, when above zero, makes a waiting Ask read its request back that
	// often: a decision taken by another replica whose notification was
	// lost still releases it.
	Poll time.Duration
	// Clock is what the card's timeout and the poll run on; nil means
	// clock.System. On a clock.Manual (the simulator's), the timeout's
	// decision and the card's update are done when the Advance that
	// reaches it returns.
	Clock clock.Clock
}

// Gate posts approval cards and waits for decisions.
type Gate struct {
	o       Options
	mu      sync.Mutex
	waiters map[string]chan store.Approval
	closing chan struct{}
	once    sync.Once
}

// New returns a Gate.
func New(o Options) (*Gate, error) {
	if o.Store == nil || o.Chat == nil || o.Approvers == nil || o.NewID == nil || o.Log == nil {
		return nil, errors.New("approval: New needs Store, Chat, Approvers, NewID and Log")
	}
	return &Gate{o: o, waiters: map[string]chan store.Approval{}, closing: make(chan struct{})}, nil
}

// Close ends every wait at once (the service is shutting down): pending
// requests expire and their cards say so, so running turns can finish
// within the shutdown grace period instead of waiting for a click.
func (g *Gate) Close() {
	g.once.Do(func() { close(g.closing) })
}

// Request is what a card asks.
type Request struct {
	// ID, when set, is the approval's id (one claimed beforehand, as a
	// budget's raise card is); else a new one.
	ID          string
	ThreadKey   string
	ChannelID   string
	ThreadTS    string
	RequestedBy string
	Category    string
	// Tool is the gated tool ("" for the agent's own request_approval).
	Tool    string
	Summary string // already redacted
	Details string // already redacted
	// Attachment, when set, is the whole call the summary shows cut
	// (already redacted): it is uploaded into the thread as
	// call-<id>.txt before the card is posted, and the card says so.
	Attachment string
	Digest     string
	// OfferAlways adds the "always" button (tool-gate cards).
	OfferAlways bool
	// ActsAs is the tool server whose tool acts with RequestedBy's own
	// account ("auth": "oauth"): the card names that person; "" for none.
	ActsAs string
}

// Outcome is how a request ended.
type Outcome struct {
	// State is store.ApprovalApproved, ApprovalAlways, ApprovalDenied,
	// ApprovalTimedOut or ApprovalExpired.
	State string
	By    string // who decided; "" for a timeout
	ID    string
}

// Approved reports whether the request was approved (once or always).
func (o Outcome) Approved() bool {
	return o.State == store.ApprovalApproved || o.State == store.ApprovalAlways
}

// Text is the outcome as the card and the agent read it.
func (o Outcome) Text() string {
	switch o.State {
	case store.ApprovalApproved:
		return "approved by <@" + o.By + ">"
	case store.ApprovalAlways:
		return "approved by <@" + o.By + "> for the rest of this thread"
	case store.ApprovalDenied:
		return "denied by <@" + o.By + ">"
	case store.ApprovalTimedOut:
		return "timed out: nobody decided in time"
	case store.ApprovalExpired:
		return "expired: nobody decided before the turn was stopped or the service restarted"
	}
	return o.State
}

// Ask records the request, posts its card in the thread and waits for a
// decision, the persona's approval timeout (0 waits forever) or the end of
// ctx (an aborted turn), whichever comes first. The card is updated with the
// outcome in every case. While it waits, the turn's place among the turns
// running at once (pipeline.Slot in ctx) is given back; Ask takes one
// again before it returns an outcome, and returns ctx's error if ctx ends
// first. The turn's pipeline.Suspender in ctx is told of the wait.
func (g *Gate) Ask(ctx context.Context, r Request) (out Outcome, err error) {
	id := r.ID
	if id == "" {
		id = g.o.NewID()
	}
	// The span of the wait, with the tracer of the turn's own spans.
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("approval").Start(ctx, "approval.wait",
		trace.WithAttributes(attribute.String("approval.id", id), attribute.String("approval.category", r.Category),
			attribute.String("approval.digest", r.Digest)))
	defer func() {
		switch {
		case err != nil:
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		default:
			span.SetAttributes(attribute.String("approval.outcome", out.State), attribute.String("approval.decided_by", out.By))
		}
		span.End()
	}()
	a := store.Approval{ID: id, ThreadKey: r.ThreadKey, ChannelID: r.ChannelID, ThreadTS: r.ThreadTS, Category: r.Category,
		Tool: r.Tool, Summary: r.Summary, Digest: r.Digest, RequestedBy: r.RequestedBy, ActsAs: r.ActsAs}
	var file, attached string
	if r.Attachment != "" {
		file, attached = "call-"+id+".txt", attachmentText(a, r.Attachment)
		a.Summary += fmt.Sprintf("\n📎 The whole call is attached above as `%s` (%d bytes, digest `%s`).", file, len(attached), r.Digest)
	}
	if err := g.o.Store.CreateApproval(ctx, a); err != nil {
		return Outcome{}, err
	}
	g.count("requested")
	if file != "" {
		// Before the card: no one can approve a call before its whole
		// text is in the thread, and a call that cannot be shown whole
		// is not asked for.
		err := g.o.Chat.Upload(ctx, pipeline.Upload{ChannelID: r.ChannelID, ThreadTS: r.ThreadTS, Filename: file,
			Title:   "The whole call of approval " + id,
			Comment: fmt.Sprintf("The whole call of the approval card below (digest `%s`).", r.Digest),
			Content: []byte(attached)})
		if err != nil {
			g.decide(context.WithoutCancel(ctx), a, store.ApprovalExpired, "")
			return Outcome{}, fmt.Errorf("attach the call to its card: %w", err)
		}
	}
	wait := make(chan store.Approval, 1)
	g.mu.Lock()
	g.waiters[id] = wait
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.waiters, id)
		g.mu.Unlock()
	}()

	// From the card on, the platform shows the thread's session suspended
	// (no stop button spinning: the card is what the turn waits for), and
	// processing again once the turn goes on, decided or not; not when the
	// wait ends the turn (an abort, shutdown).
	resume := pipeline.SuspenderFromContext(ctx).Suspend(ctx)
	defer func() {
		if ctx.Err() == nil {
			resume(ctx)
		}
	}()
	// The timeout is armed before the card is posted: whoever sees the
	// card sees its timeout running (the simulator advances its clock past
	// it). It decides in the timer's own call, once the card is recorded,
	// not in the wait below: on a clock.Manual the card says so when the
	// Advance that reaches the timeout returns. A click that won the race
	// is its outcome instead.
	clk := clock.Or(g.o.Clock)
	timedOut, posted := make(chan Outcome, 1), make(chan struct{})
	var postedOnce sync.Once
	markPosted := func() { postedOnce.Do(func() { close(posted) }) }
	defer markPosted()
	if d := g.o.Approvers.ApprovalTimeout(); d > 0 {
		t := clk.AfterFunc(d, func() {
			<-posted // a is complete
			timedOut <- g.decide(context.WithoutCancel(ctx), a, store.ApprovalTimedOut, "")
		})
		defer t.Stop()
	}
	card := cardOf(a, r.Details, r.OfferAlways)
	ts, err := g.o.Chat.Post(ctx, pipeline.Message{ChannelID: r.ChannelID, ThreadTS: r.ThreadTS, Text: fallbackText(a), Card: card})
	if err != nil {
		g.decide(context.WithoutCancel(ctx), a, store.ApprovalExpired, "")
		return Outcome{}, fmt.Errorf("post approval card: %w", err)
	}
	a.CardTS = ts
	if err := g.o.Store.SetApprovalCard(ctx, id, ts); err != nil {
		g.o.Log.WarnContext(ctx, "record approval card", "approval_id", id, "err", err)
	}
	markPosted()
	g.o.Log.InfoContext(ctx, "approval requested", "approval_id", id, "category", r.Category, "digest", r.Digest)

	var poll <-chan time.Time
	if g.o.Poll > 0 {
		t, c := clk.NewTicker(g.o.Poll)
		defer t.Stop()
		poll = c
	}
	// The wait holds none of the places of the turns running at once
	// (AGENT_MAX_TURNS): cards waiting for people must not stop every
	// other thread. The turn takes a place again once the request is
	// decided, before it goes on; an abort or shutdown meanwhile ends it.
	slot := pipeline.SlotFromContext(ctx)
	slot.Release()
	defer func() {
		if err == nil {
			if aerr := slot.Acquire(ctx); aerr != nil {
				out, err = Outcome{}, aerr
			}
		}
	}()
	var dec store.Approval
	for decided := false; !decided; {
		select {
		case dec = <-wait:
			decided = true
		case <-poll:
			if got, err := g.o.Store.GetApproval(ctx, id); err == nil && got.State != store.ApprovalRequested {
				dec, decided = got, true
			}
		case out := <-timedOut:
			return out, nil
		case <-g.closing:
			return g.decide(context.WithoutCancel(ctx), a, store.ApprovalExpired, ""), nil
		case <-ctx.Done():
			g.decide(context.WithoutCancel(ctx), a, store.ApprovalExpired, "")
			return Outcome{}, ctx.Err()
		}
	}
	if dec.CardTS == "" {
		// The click landed before the card's ts was recorded, so Click
		// could not update the card: do it here.
		dec.CardTS = ts
		g.updateCard(context.WithoutCancel(ctx), dec)
	}
	return Outcome{State: dec.State, By: dec.DecidedBy, ID: id}, nil
}

// decide records a decision the gate takes itself (timeout, expiry) and
// updates the card. A click that won the race is returned instead.
func (g *Gate) decide(ctx context.Context, a store.Approval, event, actor string) Outcome {
	dec, err := g.o.Store.DecideApproval(ctx, a.ID, event, actor)
	switch {
	case errors.Is(err, store.ErrDecided):
		return Outcome{State: dec.State, By: dec.DecidedBy, ID: a.ID}
	case err != nil:
		g.o.Log.ErrorContext(ctx, "record approval decision", "approval_id", a.ID, "event", event, "err", err)
		dec = a
		dec.State, dec.DecidedBy = event, actor
	}
	g.count(event)
	g.updateCard(ctx, dec)
	return Outcome{State: dec.State, By: dec.DecidedBy, ID: a.ID}
}

// Click handles a click on a card: an authorised approver decides it; anyone
// else is told why not, privately, and nothing changes.
func (g *Gate) Click(ctx context.Context, ev *pipeline.Event, _ pipeline.Access) error {
	if ev.Action == nil {
		return errors.New("approval: click without an action")
	}
	user, id := ev.UserID, ev.Action.Value
	event, ok := map[string]string{pipeline.ActionApprove: store.ApprovalApproved, pipeline.ActionDeny: store.ApprovalDenied,
		pipeline.ActionAlways: store.ApprovalAlways}[ev.Action.ActionID]
	if !ok {
		return g.tell(ctx, ev, "That button is not one I know.")
	}
	a, err := g.o.Store.GetApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return g.tell(ctx, ev, "I don't know this card.")
	}
	if err != nil {
		return err
	}
	if a.State != store.ApprovalRequested {
		return g.tell(ctx, ev, "This request was already decided: "+Outcome{State: a.State, By: a.DecidedBy}.Text()+".")
	}
	if !g.o.Approvers.CanApprove(user, a.Category) {
		g.o.Log.InfoContext(ctx, "approval click refused", "approval_id", id, "user_id", user, "category", a.Category)
		msg := fmt.Sprintf("You can't decide `%s` requests, so your click changed nothing.", a.Category)
		switch {
		case g.o.Manager != "" && a.Category == persona.CategoryMemory:
			msg += fmt.Sprintf(" Only <@%s> or the backup manager can.", g.o.Manager)
		case g.o.Manager != "":
			msg += fmt.Sprintf(" Ask <@%s> or an approver for `%s`.", g.o.Manager, a.Category)
		}
		return g.tell(ctx, ev, msg)
	}
	if event != store.ApprovalDenied && selfApproval(a, user, g.o.Manager) {
		// The person whose turn asked it may withdraw it (deny), not
		// grant it: a card is a second pair of eyes (pinned, interfaces.md).
		g.o.Log.InfoContext(ctx, "approval click refused: own request", "approval_id", id, "user_id", user, "category", a.Category)
		msg := "You asked for this, so you can't approve it yourself: your click changed nothing."
		if g.o.Manager != "" {
			msg += fmt.Sprintf(" Ask <@%s> or another approver for `%s`.", g.o.Manager, a.Category)
		}
		return g.tell(ctx, ev, msg)
	}
	if event == store.ApprovalAlways && (a.Tool == "" || a.Category == SkillsCategory || a.Category == KnowledgeCategory) {
		// Only tool-gate cards offer "always", and not those of the
		// skills or of a write every channel reads: each is decided once.
		event = store.ApprovalApproved
	}
	dec, err := g.o.Store.DecideApproval(ctx, id, event, user)
	if errors.Is(err, store.ErrDecided) {
		return g.tell(ctx, ev, "This request was already decided: "+Outcome{State: dec.State, By: dec.DecidedBy}.Text()+".")
	}
	if err != nil {
		return err
	}
	if event == store.ApprovalAlways {
		if err := g.o.Store.AllowTool(ctx, a.ThreadKey, a.Tool, user); err != nil {
			g.o.Log.ErrorContext(ctx, "record always-allow", "approval_id", id, "err", err)
		}
	}
	g.count(event)
	g.o.Log.InfoContext(ctx, "approval decided", "approval_id", id, "decision", event, "user_id", user)
	g.updateCard(ctx, dec)
	if !g.release(dec) && g.o.Notify != nil {
		// Not waited for here: maybe at another replica.
		if err := g.o.Notify(ctx, id); err != nil {
			g.o.Log.WarnContext(ctx, "approval decision not announced; the waiting replica will read it back", "approval_id", id, "err", err)
		}
	}
	return nil
}

// selfApproval reports whether user would approve a request their own
// turn asked: refused to everyone but the manager (not the backup).
func selfApproval(a store.Approval, user, manager string) bool {
	return a.RequestedBy != "" && a.RequestedBy == user && user != manager
}

// release hands a decision to the Ask waiting for it in this process, and
// reports whether there was one.
func (g *Gate) release(dec store.Approval) bool {
	g.mu.Lock()
	w := g.waiters[dec.ID]
	g.mu.Unlock()
	if w == nil {
		return false
	}
	select {
	case w <- dec:
	default:
	}
	return true
}

// Wake releases the Ask waiting here for approval id, if any, once the
// store has its decision: another replica took it (Notify).
func (g *Gate) Wake(ctx context.Context, id string) {
	g.mu.Lock()
	_, waiting := g.waiters[id]
	g.mu.Unlock()
	if !waiting {
		return
	}
	a, err := g.o.Store.GetApproval(ctx, id)
	if err != nil {
		g.o.Log.WarnContext(ctx, "approval announced but not read", "approval_id", id, "err", err)
		return
	}
	if a.State != store.ApprovalRequested {
		g.release(a)
	}
}

// ExpirePending expires the approvals a previous run left waiting, and
// updates their cards, so that nothing waits forever.
func (g *Gate) ExpirePending(ctx context.Context) (int, error) {
	pending, err := g.o.Store.PendingApprovals(ctx)
	if err != nil {
		return 0, err
	}
	for _, a := range pending {
		g.decide(ctx, a, store.ApprovalExpired, "")
	}
	return len(pending), nil
}

// ExpireThreads expires the pending approvals of the given threads (by
// thread key) and updates their cards: their turns died with a replica.
func (g *Gate) ExpireThreads(ctx context.Context, threads map[string]bool) (int, error) {
	pending, err := g.o.Store.PendingApprovals(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range pending {
		if threads[a.ThreadKey] {
			g.decide(ctx, a, store.ApprovalExpired, "")
			n++
		}
	}
	return n, nil
}

func (g *Gate) tell(ctx context.Context, ev *pipeline.Event, text string) error {
	return g.o.Chat.PostEphemeral(ctx, ev.ChannelID, ev.ThreadTS, ev.UserID, text)
}

func (g *Gate) updateCard(ctx context.Context, a store.Approval) {
	if a.CardTS == "" {
		return
	}
	card := cardOf(a, "", false)
	card.Actions = nil
	card.Outcome = Outcome{State: a.State, By: a.DecidedBy}.Text()
	err := g.o.Chat.Update(ctx, a.CardTS, pipeline.Message{ChannelID: a.ChannelID, ThreadTS: a.ThreadTS,
		Text: fallbackText(a) + " — " + card.Outcome, Card: card})
	if err != nil {
		g.o.Log.WarnContext(ctx, "update approval card", "approval_id", a.ID, "err", err)
	}
}

func (g *Gate) count(outcome string) {
	if g.o.Outcomes != nil {
		g.o.Outcomes.WithLabelValues(outcome).Inc()
	}
}

func cardOf(a store.Approval, details string, always bool) *pipeline.Card {
	actions := []string{pipeline.ActionApprove, pipeline.ActionDeny}
	if always {
		actions = append(actions, pipeline.ActionAlways)
	}
	card := &pipeline.Card{Kind: "approval", ID: a.ID, Category: a.Category, Summary: a.Summary, Details: details,
		Digest: a.Digest, Actions: actions}
	if a.ActsAs != "" {
		card.ActsAs = pipeline.ActsAs{User: a.RequestedBy, Server: a.ActsAs}
	}
	return card
}

// fallbackText is the notification text of a card: its first line (the
// card's blocks show the whole summary).
func fallbackText(a store.Approval) string {
	head, _, _ := strings.Cut(a.Summary, "\n")
	return fmt.Sprintf("Approval needed (%s): %s", a.Category, clip(head, fallbackMax))
}

// fallbackMax bounds a card's notification text, in bytes; the platform
// advises at most 4,000 characters of text.
const fallbackMax = 300

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// attachmentText is the file attached to a card whose call is too long
// for it: the call whole, named by the card's id and digest.
func attachmentText(a store.Approval, call string) string {
	return fmt.Sprintf("Approval %s (%s): the whole call, digest %s.\n"+
		"The card releases exactly the call with this digest, once.\n\n%s\n", a.ID, a.Category, a.Digest, call)
}

// RequestApproval is the agent's own request (mcp__agent_chat__request_approval):
// a card of the given category, without "always", whose outcome the agent
// reads as an ordinary result.
func (g *Gate) RequestApproval(ctx context.Context, t *pipeline.Turn, category, summary, details string) (string, error) {
	out, err := g.Ask(ctx, Request{
		ThreadKey:   t.Event.ThreadKey(),
		ChannelID:   t.Event.ChannelID,
		ThreadTS:    t.Event.RootTS(),
		RequestedBy: t.Event.UserID,
		Category:    category,
		Summary:     summary,
		Details:     details,
		Digest:      Digest(category, []byte(summary+"\x00"+details)),
	})
	if err != nil {
		return "", err
	}
	return out.Text(), nil
}
