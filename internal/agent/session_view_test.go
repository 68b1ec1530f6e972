package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// newSession is a session created for the turn's message (it has no
// history yet), as session.Manager gives one.
type newSession struct {
	fakeSession
	mu    sync.Mutex
	taken bool
}

func (s *newSession) TakeEmpty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.taken
	s.taken = true
	return first
}

// sessionLog records the updates of the agent sessions and the status
// line, in order, as "C1/1.0 processing title=… by=…" and "status: …".
type sessionLog struct {
	mu      sync.Mutex
	lines   []string
	refuse  bool // answer every update with ErrNoAgentSessions
	cancels int  // updates sent with a context already over
	sent    chan string
}

func (l *sessionLog) sessions(ctx context.Context, u pipeline.SessionUpdate) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		l.cancels++
	}
	if l.refuse {
		l.lines = append(l.lines, "refused "+string(u.Status))
		return fmt.Errorf("agents.sessions.setStatus: %w", pipeline.ErrNoAgentSessions)
	}
	line := fmt.Sprintf("%s/%s %s", u.ChannelID, u.ThreadTS, u.Status)
	if u.Title != "" || u.Initiator != "" {
		line += fmt.Sprintf(" title=%q by=%s", u.Title, u.Initiator)
	}
	l.lines = append(l.lines, line)
	if l.sent != nil {
		l.sent <- line
	}
	return nil
}

func (l *sessionLog) status(_ context.Context, _, _, status string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, "status: "+status)
	return nil
}

func (l *sessionLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// suspendingGate is a tool gate that, like approval.Gate, suspends the
// turn while a card waits, and lets the call run once decided.
type suspendingGate struct{ log *sessionLog }

func (g suspendingGate) Check(ctx context.Context, _ *pipeline.Turn, tool string, _ json.RawMessage) (bool, tools.Result, error) {
	if tool != "lookup" {
		return true, tools.Result{}, nil
	}
	resume := pipeline.SuspenderFromContext(ctx).Suspend(ctx)
	g.log.mu.Lock()
	g.log.lines = append(g.log.lines, "(card decided)")
	g.log.mu.Unlock()
	resume(ctx)
	return true, tools.Result{}, nil
}

// A turn moves its thread's agent session: processing (with a title and
// its initiator when the session is new), suspended while a card waits,
// processing again once decided, active once answered. Where sessions
// work, the status line's "is thinking…" is not shown: the session's
// processing is the indicator.
func TestSessionStatusFollowsTheTurn(t *testing.T) {
	log := &sessionLog{}
	e := newEnv(t, config{sessions: log.sessions, status: log.status, extra: []tools.Tool{lookupTool()},
		gate: func(*store.Store) agent.Gate { return suspendingGate{log} }})
	e.fake.Enqueue(fake.ToolUse("", "lookup", map[string]string{}), reply("42"), fake.TextReply(""))
	turn, _ := e.turn(t, "1.0", "<@"+botID+"> what is the answer?\nsecond line", pipeline.RoleMember)
	turn.Session = &newSession{fakeSession: turn.Session.(fakeSession)}
	if err := e.engine.Turn(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	e.engine.Wait() // the active goes out beside the turn's end
	want := []string{
		`C1/1.0 processing title="what is the answer?" by=U0ALICE`,
		"C1/1.0 suspended", "(card decided)", "C1/1.0 processing",
		"C1/1.0 active",
	}
	if got := log.got(); !slices.Equal(got, want) {
		t.Fatalf("updates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The session's next turn names no title: the platform has the
	// session already.
	e.fake.Enqueue(reply("again"), fake.TextReply(""))
	turn2, _ := e.turn(t, "1.0", "more", pipeline.RoleMember)
	if err := e.engine.Turn(t.Context(), turn2); err != nil {
		t.Fatal(err)
	}
	e.engine.Wait()
	if got := log.got()[len(want):]; !slices.Equal(got, []string{"C1/1.0 processing", "C1/1.0 active"}) {
		t.Fatalf("second turn's updates = %q", got)
	}
}

// blockingLog is a sessionLog whose active updates wait for release.
type blockingLog struct {
	*sessionLog
	release chan struct{}
}

func (l blockingLog) sessions(ctx context.Context, u pipeline.SessionUpdate) error {
	if u.Status == pipeline.SessionActive {
		<-l.release
	}
	return l.sessionLog.sessions(ctx, u)
}

// The turn's last update (active) goes out beside the turn's end: the
// turn does not wait for it, but what waits for the turn's end (Ended)
// does, and so does the thread's next turn before its first update and
// its reply: the platform sees the updates in order.
func TestSessionActiveBesideTheTurnsEnd(t *testing.T) {
	log := blockingLog{sessionLog: &sessionLog{}, release: make(chan struct{})}
	e := newEnv(t, config{sessions: log.sessions})
	e.fake.Enqueue(reply("one"), fake.TextReply(""))
	turn, _ := e.turn(t, "1.0", "first", pipeline.RoleMember)
	if err := e.engine.Turn(t.Context(), turn); err != nil { // returns with its active held
		t.Fatal(err)
	}
	ended := e.engine.Ended(turn.Event.ThreadKey())
	if ended == nil {
		t.Fatal("Ended is nil while the turn's active is still going out")
	}
	select {
	case <-ended:
		t.Fatal("Ended closed before the session was left active")
	default:
	}
	// The thread's next turn: its processing and its reply wait for the
	// first turn's active.
	e.fake.Enqueue(reply("two"), fake.TextReply(""))
	turn2, out2 := e.turn(t, "1.0", "second", pipeline.RoleMember)
	done := make(chan error, 1)
	go func() { done <- e.engine.Turn(t.Context(), turn2) }()
	if err := e.fake.WaitRequests(t.Context(), 3); err != nil { // the second turn asks the model meanwhile
		t.Fatal(err)
	}
	if got := out2.Posts(); len(got) != 0 {
		t.Fatalf("the second turn replied %q before the first turn's session was left active", got)
	}
	close(log.release)
	<-ended
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.engine.Wait()
	want := []string{"C1/1.0 processing", "C1/1.0 active", "C1/1.0 processing", "C1/1.0 active"}
	if got := log.got(); !slices.Equal(got, want) {
		t.Fatalf("updates = %q, want %q", got, want)
	}
	if got := out2.Posts(); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("second turn's posts = %q", got)
	}
}

// Where the platform refuses agent sessions, a DM turn shows the status
// line as before, and asks for no other update of the session.
func TestSessionRefusedShowsTheStatusLine(t *testing.T) {
	log := &sessionLog{refuse: true}
	e := newEnv(t, config{sessions: log.sessions, status: log.status})
	e.fake.Enqueue(reply("hello"), fake.TextReply(""))
	turn, out := e.turn(t, "1.0", "hi", pipeline.RoleMember)
	turn.Event.ChannelID = "D1"
	if err := e.engine.Turn(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	if got, want := log.got(), []string{"refused processing", "status: is thinking…"}; !slices.Equal(got, want) {
		t.Fatalf("updates = %q, want %q", got, want)
	}
	if got := out.Posts(); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("posts = %q", got)
	}
}

// A stopped turn leaves its session active, not processing (the platform
// does not move it by itself): the update goes out although the turn's
// context is over.
func TestSessionActiveAfterAStop(t *testing.T) {
	log := &sessionLog{sent: make(chan string, 4)}
	e := newEnv(t, config{sessions: log.sessions})
	held := make(chan struct{})
	defer close(held)
	e.fake.Enqueue(fake.AnthropicResponse{Gate: held, Content: []fake.AnthropicBlock{fake.AnthropicText("...")}})
	turn, _ := e.turn(t, "1.0", "long job", pipeline.RoleMember)
	done := make(chan error, 1)
	go func() { done <- e.engine.Turn(t.Context(), turn) }()
	if err := e.fake.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	<-log.sent // processing: the turn runs, and shows it
	if e.engine.Ended("C1:9.9") != nil {
		t.Fatal("Ended of a thread where nothing runs is not nil")
	}
	ended := e.engine.Ended(turn.Event.ThreadKey())
	if ended == nil {
		t.Fatal("Ended of the running turn is nil")
	}
	if !e.engine.Abort(turn.Event.ThreadKey()) {
		t.Fatal("no turn to stop")
	}
	// What stopped the turn answers after Ended: by then the session is
	// left active.
	<-ended
	if got, want := log.got(), []string{"C1/1.0 processing", "C1/1.0 active"}; !slices.Equal(got, want) {
		t.Fatalf("updates when the turn ended = %q, want %q", got, want)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Turn = %v, want context.Canceled", err)
	}
	if log.cancels != 0 {
		t.Fatalf("%d updates were sent with a context already over", log.cancels)
	}
}

// A new session's title: the first line of the person's words, without
// the bot's mention, redacted, cut at a word; none for a message of files
// alone.
func TestSessionTitle(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, tt := range []struct{ name, text, want string }{
		{"mention stripped", "<@" + botID + "> deploy the app", "deploy the app"},
		{"first line", "line one\nline two", "line one"},
		{"spaces collapsed", "  a \t b  ", "a b"},
		{"redacted", "the password is " + secret, "the password is [redacted: credential]"},
		{"cut at a word", long, strings.TrimSpace(strings.Repeat("word ", 16)) + "…"},
		{"no words", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := &sessionLog{}
			e := newEnv(t, config{sessions: log.sessions})
			e.fake.Enqueue(reply("ok"), fake.TextReply(""))
			turn, _ := e.turn(t, "1.0", tt.text, pipeline.RoleMember)
			turn.Session = &newSession{fakeSession: turn.Session.(fakeSession)}
			if err := e.engine.Turn(t.Context(), turn); err != nil {
				t.Fatal(err)
			}
			if got, want := log.got()[0], fmt.Sprintf("C1/1.0 processing title=%q by=%s", tt.want, senderID); got != want {
				t.Fatalf("first update = %s, want %s", got, want)
			}
		})
	}
}

// A new DM thread offers the persona's prompts; a channel thread or a
// DM thread's next turn does not.
func TestNewDMThreadOffersPrompts(t *testing.T) {
	var mu sync.Mutex
	var offered []string
	e := newEnv(t, config{newDMThread: func(_ context.Context, channel string) {
		mu.Lock()
		defer mu.Unlock()
		offered = append(offered, channel)
	}})
	run := func(channel, root string, fresh bool) {
		t.Helper()
		e.fake.Enqueue(reply("ok"), fake.TextReply(""))
		turn, _ := e.turn(t, root, "hi", pipeline.RoleMember)
		turn.Event.ChannelID = channel
		turn.Session = e.session(t, turn.Event.ThreadKey())
		if fresh {
			turn.Session = &newSession{fakeSession: turn.Session.(fakeSession)}
		}
		if err := e.engine.Turn(t.Context(), turn); err != nil {
			t.Fatal(err)
		}
	}
	run("D1", "1.0", true)  // a new DM thread
	run("D1", "1.0", false) // its next turn
	run("C1", "2.0", true)  // a new channel thread
	e.engine.Wait()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(offered, []string{"D1"}) {
		t.Fatalf("prompts offered in %q, want once in D1", offered)
	}
}
