package approval_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// wait bounds every wait on a channel: a hang fails the test instead of
// blocking it; nothing is asserted about how long anything takes.
const wait = 10 * time.Second

// The people of the test persona.
const (
	manager  = "U0MGR"
	backup   = "U0BAK"
	bashOnly = "U0BASH" // approver of Bash only
	anyone   = "U0ANY"  // approver of anything
	member   = "U0MEMBER"
)

const soul = `## Identity
- Name: Gatekeeper

## Reporting
- Manager: U0MGR
- Backup manager: <@U0BAK>

## Mandate
- Guards the gate.

## Approvers
- <@U0BASH>: Bash ; shell only
- <@U0ANY>: anything
`

func parsePersona(t *testing.T, src string) *persona.Persona {
	t.Helper()
	p, err := persona.Parse("SOUL.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeChat is the gate's chat platform: each method calls its function.
type fakeChat struct {
	post      func(ctx context.Context, m pipeline.Message) (string, error)
	update    func(ctx context.Context, ts string, m pipeline.Message) error
	ephemeral func(ctx context.Context, channelID, threadTS, userID, text string) error
	upload    func(ctx context.Context, u pipeline.Upload) error
}

func (f *fakeChat) Post(ctx context.Context, m pipeline.Message) (string, error) {
	return f.post(ctx, m)
}
func (f *fakeChat) Update(ctx context.Context, ts string, m pipeline.Message) error {
	return f.update(ctx, ts, m)
}
func (f *fakeChat) PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error {
	return f.ephemeral(ctx, channelID, threadTS, userID, text)
}
func (f *fakeChat) Upload(ctx context.Context, u pipeline.Upload) error {
	return f.upload(ctx, u)
}

type update struct {
	TS  string
	Msg pipeline.Message
}

type ephemeral struct {
	ChannelID, ThreadTS, UserID, Text string
}

// recorder records what the gate says; its chat returns "100.1", "100.2", …
// as the ts of each post.
type recorder struct {
	mu         sync.Mutex
	posts      []pipeline.Message
	updates    []update
	ephemerals []ephemeral
	// events is "upload <filename>" and "post" in the order they happened.
	events  []string
	uploads []pipeline.Upload
	// onPost, when set, runs inside Post before it returns.
	onPost func(m pipeline.Message)
}

func (r *recorder) chat() *fakeChat {
	return &fakeChat{
		post: func(_ context.Context, m pipeline.Message) (string, error) {
			r.mu.Lock()
			r.posts = append(r.posts, m)
			r.events = append(r.events, "post")
			ts := fmt.Sprintf("100.%d", len(r.posts))
			hook := r.onPost
			r.mu.Unlock()
			if hook != nil {
				hook(m)
			}
			return ts, nil
		},
		update: func(_ context.Context, ts string, m pipeline.Message) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.updates = append(r.updates, update{ts, m})
			return nil
		},
		ephemeral: func(_ context.Context, channelID, threadTS, userID, text string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ephemerals = append(r.ephemerals, ephemeral{channelID, threadTS, userID, text})
			return nil
		},
		upload: func(_ context.Context, u pipeline.Upload) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.uploads = append(r.uploads, u)
			r.events = append(r.events, "upload "+u.Filename)
			return nil
		},
	}
}

func (r *recorder) Uploads() []pipeline.Upload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.uploads)
}

func (r *recorder) Events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) Posts() []pipeline.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.posts)
}

func (r *recorder) Updates() []update {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.updates)
}

func (r *recorder) Ephemerals() []ephemeral {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ephemerals)
}

// cardStore is the real store; it reports each card ts the gate records, so
// that a test clicks only once Ask is past posting its card.
type cardStore struct {
	*store.Store
	cards chan string
}

func (s *cardStore) SetApprovalCard(ctx context.Context, id, cardTS string) error {
	err := s.Store.SetApprovalCard(ctx, id, cardTS)
	s.cards <- id
	return err
}

type harness struct {
	t        *testing.T
	st       *store.Store
	rec      *recorder
	chat     *fakeChat
	gate     *approval.Gate
	cards    chan string
	outcomes *prometheus.CounterVec
	// clock is the gate's: the card's timeout fires only when a test
	// advances it.
	clock *clock.Manual
}

func newHarness(t *testing.T, soulText string) *harness {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir()+"/agent.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, st: st, rec: &recorder{}, cards: make(chan string, 16), clock: clock.NewManual(time.Unix(0, 0)),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agent_approvals_total"}, []string{"outcome"})}
	h.chat = h.rec.chat()
	var n atomic.Int64
	h.gate, err = approval.New(approval.Options{
		Store:     &cardStore{Store: st, cards: h.cards},
		Chat:      h.chat,
		Approvers: parsePersona(t, soulText),
		Manager:   manager,
		NewID:     func() string { return fmt.Sprintf("ap%d", n.Add(1)) },
		Outcomes:  h.outcomes,
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock:     h.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.gate.Close)
	return h
}

type askResult struct {
	out approval.Outcome
	err error
}

// ask starts Ask and returns where its result arrives.
func (h *harness) ask(ctx context.Context, r approval.Request) <-chan askResult {
	ch := make(chan askResult, 1)
	go func() {
		out, err := h.gate.Ask(ctx, r)
		ch <- askResult{out, err}
	}()
	return ch
}

// card waits until Ask recorded its card and returns the approval's id.
func (h *harness) card() string {
	h.t.Helper()
	select {
	case id := <-h.cards:
		return id
	case <-time.After(wait):
		h.t.Fatal("no approval card was recorded")
	}
	return ""
}

// armed waits until the waiting Ask has armed its timeout on the clock.
func (h *harness) armed() {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for h.clock.Timers() == 0 {
		if time.Now().After(deadline) {
			h.t.Fatal("Ask armed no timeout")
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) result(ch <-chan askResult) askResult {
	h.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(wait):
		h.t.Fatal("Ask did not return")
	}
	return askResult{}
}

func (h *harness) click(user, action, id string) {
	h.t.Helper()
	ev := &pipeline.Event{Kind: pipeline.KindAction, ChannelID: "C1", ThreadTS: "1.0", UserID: user,
		Action: &pipeline.Action{ActionID: action, Value: id}}
	if err := h.gate.Click(context.Background(), ev, pipeline.Access{UserID: user}); err != nil {
		h.t.Fatalf("Click(%s, %s, %s): %v", user, action, id, err)
	}
}

func (h *harness) approvalOf(id string) store.Approval {
	h.t.Helper()
	a, err := h.st.GetApproval(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// events returns the approval's audit trail as "event/actor" lines.
func (h *harness) events(id string) []string {
	h.t.Helper()
	evs, err := h.st.ApprovalEvents(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Event+"/"+e.Actor)
	}
	return out
}

// checkResolved checks the single update of the card: same place, no
// buttons, the outcome.
func (h *harness) checkResolved(id, cardTS, outcome string) {
	h.t.Helper()
	ups := h.rec.Updates()
	if len(ups) != 1 {
		h.t.Fatalf("card updates = %+v, want 1", ups)
	}
	u := ups[0]
	if u.TS != cardTS || u.Msg.ChannelID != "C1" || u.Msg.ThreadTS != "1.0" {
		h.t.Errorf("update at %q in %s/%s, want %q in C1/1.0", u.TS, u.Msg.ChannelID, u.Msg.ThreadTS, cardTS)
	}
	c := u.Msg.Card
	if c == nil || c.ID != id || len(c.Actions) != 0 || c.Outcome != outcome {
		h.t.Fatalf("updated card = %+v, want id %s, no actions, outcome %q", c, id, outcome)
	}
	if !strings.Contains(u.Msg.Text, outcome) {
		h.t.Errorf("update text %q does not carry the outcome %q", u.Msg.Text, outcome)
	}
}

func bashRequest() approval.Request {
	return approval.Request{ThreadKey: "C1:1.0", ChannelID: "C1", ThreadTS: "1.0", RequestedBy: "U0REQ",
		Category: "Bash", Tool: "Bash", Summary: "`Bash` wants to run: ls", Details: "in /work", Digest: "d1g3st",
		OfferAlways: true}
}

func TestAskPostsCard(t *testing.T) {
	for _, tt := range []struct {
		name        string
		offerAlways bool
		actions     []string
	}{
		{"tool gate card", true, []string{pipeline.ActionApprove, pipeline.ActionDeny, pipeline.ActionAlways}},
		{"without always", false, []string{pipeline.ActionApprove, pipeline.ActionDeny}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, soul)
			req := bashRequest()
			req.OfferAlways = tt.offerAlways
			done := h.ask(context.Background(), req)
			id := h.card()

			posts := h.rec.Posts()
			if len(posts) != 1 {
				t.Fatalf("posts = %+v, want 1 card", posts)
			}
			m := posts[0]
			if m.ChannelID != "C1" || m.ThreadTS != "1.0" {
				t.Errorf("card posted in %s/%s, want C1/1.0", m.ChannelID, m.ThreadTS)
			}
			if !strings.Contains(m.Text, "Bash") || !strings.Contains(m.Text, req.Summary) {
				t.Errorf("fallback text %q lacks the category and summary", m.Text)
			}
			want := pipeline.Card{Kind: "approval", ID: id, Category: "Bash", Summary: req.Summary, Details: "in /work",
				Digest: "d1g3st", Actions: tt.actions}
			if c := m.Card; c == nil || c.Kind != want.Kind || c.ID != want.ID || c.Category != want.Category ||
				c.Summary != want.Summary || c.Details != want.Details || c.Digest != want.Digest ||
				!slices.Equal(c.Actions, want.Actions) || c.Outcome != "" {
				t.Fatalf("card = %+v, want %+v", c, want)
			}

			a := h.approvalOf(id)
			if a.CardTS != "100.1" || a.State != store.ApprovalRequested || a.ThreadKey != "C1:1.0" ||
				a.Tool != "Bash" || a.Digest != "d1g3st" || a.RequestedBy != "U0REQ" {
				t.Fatalf("stored approval = %+v", a)
			}
			if got := testutil.ToFloat64(h.outcomes.WithLabelValues("requested")); got != 1 {
				t.Errorf("requested count = %v, want 1", got)
			}

			h.click(manager, pipeline.ActionApprove, id)
			if r := h.result(done); r.err != nil || r.out.State != store.ApprovalApproved {
				t.Fatalf("Ask = %+v, %v", r.out, r.err)
			}
		})
	}
}

func TestClickByUnauthorisedUserChangesNothing(t *testing.T) {
	for _, tt := range []struct {
		name, user, category string
	}{
		{"member", member, "Bash"},
		{"approver outside their scope", bashOnly, "Write"},
		{"scopes are case-sensitive", bashOnly, "bash"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, soul)
			req := bashRequest()
			req.Category, req.Tool = tt.category, tt.category
			done := h.ask(context.Background(), req)
			id := h.card()

			h.click(tt.user, pipeline.ActionApprove, id)
			eph := h.rec.Ephemerals()
			if len(eph) != 1 {
				t.Fatalf("ephemerals = %+v, want 1", eph)
			}
			e := eph[0]
			if e.UserID != tt.user || e.ChannelID != "C1" || e.ThreadTS != "1.0" {
				t.Errorf("ephemeral to %s in %s/%s, want %s in C1/1.0", e.UserID, e.ChannelID, e.ThreadTS, tt.user)
			}
			if !strings.Contains(e.Text, "`"+tt.category+"`") || !strings.Contains(e.Text, "<@"+manager+">") {
				t.Errorf("ephemeral %q should name the category %s and the manager", e.Text, tt.category)
			}
			if a := h.approvalOf(id); a.State != store.ApprovalRequested {
				t.Fatalf("state after refused click = %s, want requested", a.State)
			}
			if ups := h.rec.Updates(); len(ups) != 0 {
				t.Fatalf("card updated after a refused click: %+v", ups)
			}

			// The waiter was not released: the next, authorised click is
			// the one Ask reports.
			h.click(manager, pipeline.ActionDeny, id)
			r := h.result(done)
			if r.err != nil || r.out.State != store.ApprovalDenied || r.out.By != manager {
				t.Fatalf("Ask = %+v, %v; want denied by the manager", r.out, r.err)
			}
			if got, want := h.events(id), []string{"requested/U0REQ", "denied/" + manager}; !slices.Equal(got, want) {
				t.Fatalf("events = %v, want %v", got, want)
			}
		})
	}
}

func TestClickByApproverDecides(t *testing.T) {
	for _, tt := range []struct {
		name, user, category, action string
		state, outcome               string
	}{
		{"approver in scope", bashOnly, "Bash", pipeline.ActionApprove, store.ApprovalApproved, "approved by <@U0BASH>"},
		{"anything approver", anyone, "mcp__github__create_issue", pipeline.ActionApprove, store.ApprovalApproved, "approved by <@U0ANY>"},
		{"manager", manager, "Write", pipeline.ActionApprove, store.ApprovalApproved, "approved by <@U0MGR>"},
		{"backup manager", backup, "skills", pipeline.ActionApprove, store.ApprovalApproved, "approved by <@U0BAK>"},
		{"deny", bashOnly, "Bash", pipeline.ActionDeny, store.ApprovalDenied, "denied by <@U0BASH>"},
		{"manager denies", manager, "Bash", pipeline.ActionDeny, store.ApprovalDenied, "denied by <@U0MGR>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, soul)
			req := bashRequest()
			req.Category, req.OfferAlways = tt.category, false
			done := h.ask(context.Background(), req)
			id := h.card()

			h.click(tt.user, tt.action, id)
			r := h.result(done)
			if r.err != nil || r.out.State != tt.state || r.out.By != tt.user || r.out.ID != id {
				t.Fatalf("Ask = %+v, %v; want %s by %s", r.out, r.err, tt.state, tt.user)
			}
			if r.out.Approved() != (tt.state == store.ApprovalApproved) {
				t.Errorf("Approved() = %v for %s", r.out.Approved(), tt.state)
			}
			if r.out.Text() != tt.outcome {
				t.Errorf("Text() = %q, want %q", r.out.Text(), tt.outcome)
			}
			h.checkResolved(id, "100.1", tt.outcome)
			if got, want := h.events(id), []string{"requested/U0REQ", tt.state + "/" + tt.user}; !slices.Equal(got, want) {
				t.Fatalf("events = %v, want %v", got, want)
			}
			if a := h.approvalOf(id); a.State != tt.state || a.DecidedBy != tt.user {
				t.Fatalf("stored = %+v", a)
			}
			if eph := h.rec.Ephemerals(); len(eph) != 0 {
				t.Errorf("ephemerals = %+v, want none", eph)
			}
			if got := testutil.ToFloat64(h.outcomes.WithLabelValues(tt.state)); got != 1 {
				t.Errorf("%s count = %v, want 1", tt.state, got)
			}
		})
	}
}

func TestClickAlways(t *testing.T) {
	for _, tt := range []struct {
		name, category, tool string
		state                string
		allowed              bool
	}{
		{"tool gate card", "Bash", "Bash", store.ApprovalAlways, true},
		{"request_approval card", "deploys", "", store.ApprovalApproved, false},
		{"sync_manifest card", "skills", "mcp__agent_skills__sync_manifest", store.ApprovalApproved, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, soul)
			req := bashRequest()
			req.Category, req.Tool = tt.category, tt.tool
			done := h.ask(context.Background(), req)
			id := h.card()

			h.click(anyone, pipeline.ActionAlways, id)
			r := h.result(done)
			if r.err != nil || r.out.State != tt.state || r.out.By != anyone || !r.out.Approved() {
				t.Fatalf("Ask = %+v, %v; want %s by %s", r.out, r.err, tt.state, anyone)
			}
			h.checkResolved(id, "100.1", r.out.Text())
			if tt.state == store.ApprovalAlways && r.out.Text() != "approved by <@U0ANY> for the rest of this thread" {
				t.Errorf("Text() = %q", r.out.Text())
			}
			ok, err := h.st.ToolAllowed(context.Background(), "C1:1.0", tt.tool)
			if err != nil || ok != tt.allowed {
				t.Fatalf("ToolAllowed(%q) = %v, %v; want %v", tt.tool, ok, err, tt.allowed)
			}
			if got, want := h.events(id), []string{"requested/U0REQ", tt.state + "/" + anyone}; !slices.Equal(got, want) {
				t.Fatalf("events = %v, want %v", got, want)
			}
		})
	}
}

func TestSecondClickIsAlreadyDecided(t *testing.T) {
	h := newHarness(t, soul)
	done := h.ask(context.Background(), bashRequest())
	id := h.card()
	h.click(bashOnly, pipeline.ActionApprove, id)
	if r := h.result(done); r.out.State != store.ApprovalApproved {
		t.Fatalf("Ask = %+v, %v", r.out, r.err)
	}

	for _, c := range []struct{ user, action string }{{manager, pipeline.ActionDeny}, {member, pipeline.ActionApprove}} {
		h.click(c.user, c.action, id)
	}
	eph := h.rec.Ephemerals()
	if len(eph) != 2 {
		t.Fatalf("ephemerals = %+v, want 2", eph)
	}
	for i, user := range []string{manager, member} {
		if eph[i].UserID != user || !strings.Contains(eph[i].Text, "already decided") ||
			!strings.Contains(eph[i].Text, "approved by <@U0BASH>") {
			t.Errorf("ephemeral %d = %+v, want 'already decided: approved by <@U0BASH>' to %s", i, eph[i], user)
		}
	}
	if got, want := h.events(id), []string{"requested/U0REQ", "approved/U0BASH"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want one decision %v", got, want)
	}
	if ups := h.rec.Updates(); len(ups) != 1 {
		t.Fatalf("card updated %d times, want once", len(ups))
	}
}

func TestAskTimesOut(t *testing.T) {
	h := newHarness(t, soul+"\n## Approval timeout\n- 60\n")
	done := h.ask(context.Background(), bashRequest())
	id := h.card()
	h.armed()

	// Not a second early, on the gate's clock.
	h.clock.Advance(59 * time.Second)
	if ups := h.rec.Updates(); len(ups) != 0 {
		t.Fatalf("card updated before the timeout: %+v", ups)
	}
	// The Advance that reaches the timeout returns with the card told.
	h.clock.Advance(time.Second)
	h.checkResolved(id, "100.1", "timed out: nobody decided in time")
	r := h.result(done)
	if r.err != nil || r.out.State != store.ApprovalTimedOut || r.out.By != "" || r.out.Approved() {
		t.Fatalf("Ask = %+v, %v; want timed_out", r.out, r.err)
	}
	if got, want := h.events(id), []string{"requested/U0REQ", "timed_out/"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}

	// A click after the timeout changes nothing.
	h.click(manager, pipeline.ActionApprove, id)
	if eph := h.rec.Ephemerals(); len(eph) != 1 || !strings.Contains(eph[0].Text, "timed out") {
		t.Fatalf("ephemerals = %+v, want one 'already decided: timed out'", eph)
	}
	if a := h.approvalOf(id); a.State != store.ApprovalTimedOut {
		t.Fatalf("state = %s", a.State)
	}
}

func TestAskEndsWithContext(t *testing.T) {
	h := newHarness(t, soul)
	ctx, cancel := context.WithCancel(context.Background())
	done := h.ask(ctx, bashRequest())
	id := h.card()
	cancel()

	r := h.result(done)
	if !errors.Is(r.err, context.Canceled) || r.out.Approved() {
		t.Fatalf("Ask = %+v, %v; want context.Canceled", r.out, r.err)
	}
	h.checkResolved(id, "100.1", "expired: nobody decided before the turn was stopped or the service restarted")
	if got, want := h.events(id), []string{"requested/U0REQ", "expired/"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestCloseExpiresWaits(t *testing.T) {
	h := newHarness(t, soul)
	first := h.ask(context.Background(), bashRequest())
	id1 := h.card()
	second := h.ask(context.Background(), bashRequest())
	id2 := h.card()
	h.gate.Close()
	h.gate.Close() // idempotent

	for _, c := range []struct {
		done <-chan askResult
		id   string
	}{{first, id1}, {second, id2}} {
		r := h.result(c.done)
		if r.err != nil || r.out.State != store.ApprovalExpired || r.out.ID != c.id {
			t.Fatalf("Ask(%s) = %+v, %v; want expired", c.id, r.out, r.err)
		}
		if a := h.approvalOf(c.id); a.State != store.ApprovalExpired {
			t.Fatalf("state of %s = %s", c.id, a.State)
		}
	}
	ups := h.rec.Updates()
	if len(ups) != 2 {
		t.Fatalf("updates = %+v, want both cards", ups)
	}
	for _, u := range ups {
		if u.Msg.Card == nil || len(u.Msg.Card.Actions) != 0 || !strings.HasPrefix(u.Msg.Card.Outcome, "expired") {
			t.Fatalf("updated card = %+v", u.Msg.Card)
		}
	}
}

func TestExpirePendingOnRestart(t *testing.T) {
	h := newHarness(t, soul)
	ctx := context.Background()
	for _, a := range []store.Approval{
		{ID: "old1", ThreadKey: "C1:1.0", ChannelID: "C1", ThreadTS: "1.0", CardTS: "50.1", Category: "Bash", Tool: "Bash", Summary: "ls"},
		{ID: "old2", ThreadKey: "C2:2.0", ChannelID: "C2", ThreadTS: "2.0", CardTS: "50.2", Category: "skills", Summary: "sync"},
		{ID: "nocard", ThreadKey: "C3:3.0", ChannelID: "C3", ThreadTS: "3.0", Category: "Write"},
		{ID: "done", ThreadKey: "C1:1.0", ChannelID: "C1", ThreadTS: "1.0", CardTS: "50.3", Category: "Bash"},
	} {
		if err := h.st.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.st.DecideApproval(ctx, "done", store.ApprovalApproved, manager); err != nil {
		t.Fatal(err)
	}

	n, err := h.gate.ExpirePending(ctx)
	if err != nil || n != 3 {
		t.Fatalf("ExpirePending = %d, %v; want 3", n, err)
	}
	for id, want := range map[string]string{"old1": store.ApprovalExpired, "old2": store.ApprovalExpired,
		"nocard": store.ApprovalExpired, "done": store.ApprovalApproved} {
		if a := h.approvalOf(id); a.State != want {
			t.Errorf("state of %s = %s, want %s", id, a.State, want)
		}
	}
	var got []string
	for _, u := range h.rec.Updates() {
		if u.Msg.Card == nil || len(u.Msg.Card.Actions) != 0 || !strings.HasPrefix(u.Msg.Card.Outcome, "expired") {
			t.Errorf("updated card = %+v", u.Msg.Card)
		}
		got = append(got, u.TS+"@"+u.Msg.ChannelID+"/"+u.Msg.ThreadTS)
	}
	slices.Sort(got)
	if want := []string{"50.1@C1/1.0", "50.2@C2/2.0"}; !slices.Equal(got, want) {
		t.Fatalf("updated cards = %v, want %v (a request without a card has nothing to update)", got, want)
	}
	if n, err := h.gate.ExpirePending(ctx); err != nil || n != 0 {
		t.Fatalf("second ExpirePending = %d, %v; want 0", n, err)
	}
}

func TestClickOnUnknownCardOrButton(t *testing.T) {
	h := newHarness(t, soul)
	done := h.ask(context.Background(), bashRequest())
	id := h.card()

	for _, tt := range []struct {
		name, action, id, want string
	}{
		{"unknown approval", pipeline.ActionApprove, "ap-nope", "don't know this card"},
		{"unknown action", "launch", id, "not one I know"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(h.rec.Ephemerals())
			h.click(manager, tt.action, tt.id)
			eph := h.rec.Ephemerals()
			if len(eph) != before+1 || eph[before].UserID != manager || !strings.Contains(eph[before].Text, tt.want) {
				t.Fatalf("ephemerals = %+v, want one to %s containing %q", eph, manager, tt.want)
			}
		})
	}
	t.Run("no action", func(t *testing.T) {
		if err := h.gate.Click(context.Background(), &pipeline.Event{Kind: pipeline.KindAction, UserID: manager}, pipeline.Access{}); err == nil {
			t.Fatal("Click without an action: no error")
		}
	})
	if a := h.approvalOf(id); a.State != store.ApprovalRequested {
		t.Fatalf("state = %s, want requested", a.State)
	}
	h.click(manager, pipeline.ActionApprove, id)
	h.result(done)
}

func TestAskWhenPostFails(t *testing.T) {
	h := newHarness(t, soul)
	boom := errors.New("channel_not_found")
	h.chat.post = func(context.Context, pipeline.Message) (string, error) { return "", boom }
	out, err := h.gate.Ask(context.Background(), bashRequest())
	if !errors.Is(err, boom) || out.Approved() {
		t.Fatalf("Ask = %+v, %v; want the post error", out, err)
	}
	if a := h.approvalOf("ap1"); a.State != store.ApprovalExpired {
		t.Fatalf("state = %s, want expired", a.State)
	}
	if ups := h.rec.Updates(); len(ups) != 0 {
		t.Fatalf("updates = %+v, want none (no card)", ups)
	}
}

func TestNewNeedsItsParts(t *testing.T) {
	if _, err := approval.New(approval.Options{}); err == nil {
		t.Fatal("New with nothing: no error")
	}
}

func TestRequestApproval(t *testing.T) {
	h := newHarness(t, soul)
	turn := &pipeline.Turn{Event: &pipeline.Event{Kind: pipeline.KindMessage, ChannelID: "C1", TS: "1.0", UserID: "U0REQ"}}
	type res struct {
		text string
		err  error
	}
	done := make(chan res, 1)
	go func() {
		text, err := h.gate.RequestApproval(context.Background(), turn, "deploys", "deploy v2 to prod", "after the freeze")
		done <- res{text, err}
	}()
	id := h.card()

	c := h.rec.Posts()[0].Card
	if c.Category != "deploys" || c.Summary != "deploy v2 to prod" || c.Details != "after the freeze" ||
		!slices.Equal(c.Actions, []string{pipeline.ActionApprove, pipeline.ActionDeny}) {
		t.Fatalf("card = %+v, want a deploys card without always", c)
	}
	if want := approval.Digest("deploys", []byte("deploy v2 to prod\x00after the freeze")); c.Digest != want {
		t.Errorf("digest = %s, want %s", c.Digest, want)
	}
	if a := h.approvalOf(id); a.ThreadKey != "C1:1.0" || a.ThreadTS != "1.0" || a.Tool != "" || a.RequestedBy != "U0REQ" {
		t.Fatalf("stored = %+v", a)
	}

	h.click(anyone, pipeline.ActionAlways, id) // no always on this card: a plain approval
	select {
	case r := <-done:
		if r.err != nil || r.text != "approved by <@U0ANY>" {
			t.Fatalf("RequestApproval = %q, %v", r.text, r.err)
		}
	case <-time.After(wait):
		t.Fatal("RequestApproval did not return")
	}
}

// A click can arrive (socket mode runs clicks concurrently) before Ask has
// recorded the card's ts: the card must still end up resolved, not left
// with live buttons.
func TestClickBeforeCardRecordedStillResolvesCard(t *testing.T) {
	h := newHarness(t, soul)
	h.rec.onPost = func(m pipeline.Message) {
		ev := &pipeline.Event{Kind: pipeline.KindAction, ChannelID: "C1", ThreadTS: "1.0", UserID: manager,
			Action: &pipeline.Action{ActionID: pipeline.ActionApprove, Value: m.Card.ID}}
		if err := h.gate.Click(context.Background(), ev, pipeline.Access{}); err != nil {
			t.Errorf("Click: %v", err)
		}
	}
	done := h.ask(context.Background(), bashRequest())
	id := h.card()
	r := h.result(done)
	if r.err != nil || r.out.State != store.ApprovalApproved || r.out.By != manager {
		t.Fatalf("Ask = %+v, %v", r.out, r.err)
	}
	h.checkResolved(id, "100.1", "approved by <@U0MGR>")
}

// The person whose turn asked a card cannot approve it (once or always),
// the backup included: only they are told, and the card stays pending.
// They may withdraw it (deny); the manager may approve their own.
func TestClickOwnRequest(t *testing.T) {
	for _, tt := range []struct {
		name, user, action string
		refused            bool
	}{
		{"approver approves", anyone, pipeline.ActionApprove, true},
		{"approver always", bashOnly, pipeline.ActionAlways, true},
		{"backup approves", backup, pipeline.ActionApprove, true},
		{"approver withdraws", anyone, pipeline.ActionDeny, false},
		{"manager approves", manager, pipeline.ActionApprove, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, soul)
			req := bashRequest()
			req.RequestedBy = tt.user
			done := h.ask(context.Background(), req)
			id := h.card()
			h.click(tt.user, tt.action, id)
			if !tt.refused {
				if r := h.result(done); r.err != nil || r.out.By != tt.user {
					t.Fatalf("Ask = %+v, %v; want decided by %s", r.out, r.err, tt.user)
				}
				return
			}
			eph := h.rec.Ephemerals()
			if len(eph) != 1 || eph[0].UserID != tt.user || !strings.Contains(eph[0].Text, "can't approve it yourself") {
				t.Fatalf("ephemerals = %+v, want the refusal to %s", eph, tt.user)
			}
			if a := h.approvalOf(id); a.State != store.ApprovalRequested {
				t.Fatalf("state after a self-approval = %s, want requested", a.State)
			}
			if ups := h.rec.Updates(); len(ups) != 0 {
				t.Fatalf("card updated after a refused click: %+v", ups)
			}
			h.click(manager, pipeline.ActionApprove, id)
			if r := h.result(done); r.err != nil || r.out.By != manager {
				t.Fatalf("Ask = %+v, %v; want approved by the manager", r.out, r.err)
			}
		})
	}
}
