package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fakeAgent is a pipeline.Agent scripted by its field.
type fakeAgent struct {
	TurnFn func(ctx context.Context, t *pipeline.Turn) error
	turns  int
}

func (a *fakeAgent) Turn(ctx context.Context, t *pipeline.Turn) error {
	a.turns++
	return a.TurnFn(ctx, t)
}

// replyRecorder is the handler after the agent stage: it records each
// outbound event as "op channel thread ts markdown text" and gives each
// post a ts.
type replyRecorder struct {
	got []string
	err error
}

func (r *replyRecorder) Handle(_ context.Context, ev *pipeline.Event) error {
	if ev.Kind != pipeline.KindReply || ev.Reply == nil {
		return fmt.Errorf("recorder: got a %s event", ev.Kind)
	}
	op := map[pipeline.ReplyOp]string{pipeline.ReplyPost: "post", pipeline.ReplyUpdate: "update"}[ev.Reply.Op]
	r.got = append(r.got, fmt.Sprintf("%s %s %s %q %v %s", op, ev.ChannelID, ev.ThreadTS, ev.Reply.TS, ev.Reply.Markdown, ev.Text))
	if r.err != nil {
		return r.err
	}
	if ev.Reply.Op == pipeline.ReplyPost {
		ev.Reply.TS = fmt.Sprintf("20.%d", len(r.got))
	}
	return nil
}

func TestAgentOutbox(t *testing.T) {
	tests := []struct {
		name string
		ev   *pipeline.Event
		want []string
	}{
		{"thread reply", msg("E1", trustedCh, member, "1.0"), []string{
			`post C0TEAM 1.0 "" true **hi**`,
			`update C0TEAM 1.0 "20.1" true **hi** _edited_`,
			`post C0TEAM 1.0 "" true second`,
		}},
		{"top-level message starts the thread", msg("E1", trustedCh, member, ""), []string{
			`post C0TEAM 2.0 "" true **hi**`,
			`update C0TEAM 2.0 "20.1" true **hi** _edited_`,
			`post C0TEAM 2.0 "" true second`,
		}},
		{"DM", msg("E1", dmCh, manager, ""), []string{
			`post D0SIM 2.0 "" true **hi**`,
			`update D0SIM 2.0 "20.1" true **hi** _edited_`,
			`post D0SIM 2.0 "" true second`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sess := fakeSession{id: "S1", key: tt.ev.ThreadKey()}
			access := pipeline.Access{UserID: tt.ev.UserID, Role: pipeline.RoleMember, Layer: pipeline.LayerTrusted, Mode: pipeline.ModeAsk}
			var tsPosted []string
			agent := &fakeAgent{TurnFn: func(ctx context.Context, turn *pipeline.Turn) error {
				if turn.Event != tt.ev {
					t.Error("Turn.Event is not the event handled")
				}
				if turn.Session != pipeline.Session(sess) {
					t.Errorf("Turn.Session = %v, want the context's", turn.Session)
				}
				if turn.Access.UserID != access.UserID || turn.Access.Mode != access.Mode {
					t.Errorf("Turn.Access = %+v, want the context's", turn.Access)
				}
				ts, err := turn.Out.Post(ctx, "**hi**")
				if err != nil {
					return err
				}
				tsPosted = append(tsPosted, ts)
				if err := turn.Out.Update(ctx, ts, "**hi** _edited_"); err != nil {
					return err
				}
				ts, err = turn.Out.Post(ctx, "second")
				tsPosted = append(tsPosted, ts)
				return err
			}}
			tracer, sr := newTracer()
			next := &replyRecorder{}
			h := pipeline.Chain(next, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, &fakeCommands{}, &fakeHome{}))
			ctx := pipeline.NewContextWithAccess(pipeline.NewContextWithSession(context.Background(), sess), access)
			if err := h.Handle(ctx, tt.ev); err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(next.got, "\n"), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("replies:\n%s\nwant:\n%s", got, want)
			}
			if got := strings.Join(tsPosted, ","); got != "20.1,20.3" {
				t.Errorf("Post returned %q, want the ts set by next (20.1,20.3)", got)
			}
			assertSpan(t, sr, "pipeline.agent", pipeline.OutcomeDone, "")
		})
	}
}

func TestAgentOutboxErrorsReachTheAgent(t *testing.T) {
	errDeliver := errors.New("channel_not_found")
	var postErr, updateErr error
	agent := &fakeAgent{TurnFn: func(ctx context.Context, turn *pipeline.Turn) error {
		ts, err := turn.Out.Post(ctx, "hi")
		if ts != "" {
			t.Errorf("Post returned ts %q with an error", ts)
		}
		postErr = err
		updateErr = turn.Out.Update(ctx, "1.1", "hi")
		return nil // the agent coped
	}}
	tracer, _ := newTracer()
	next := &replyRecorder{err: errDeliver}
	h := pipeline.Chain(next, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, &fakeCommands{}, &fakeHome{}))
	if err := h.Handle(context.Background(), msg("E1", trustedCh, member, "1.0")); err != nil {
		t.Fatalf("err = %v, want nil: the agent handled the delivery error", err)
	}
	if !errors.Is(postErr, errDeliver) || !errors.Is(updateErr, errDeliver) {
		t.Errorf("Post err %v, Update err %v; want the delivery error", postErr, updateErr)
	}
}

func TestAgentErrors(t *testing.T) {
	errModel := errors.New("upstream 529 overloaded: request id req_123")
	userErr := &pipeline.UserError{Message: "That file is outside your workspace.", Err: errors.New("path escapes root")}
	tests := []struct {
		name     string
		turnErr  error
		cancel   bool
		wantPost []string
	}{
		{"plain error posts the apology", errModel, false,
			[]string{`post C0TEAM 1.0 "" false ` + pipeline.GenericApology}},
		{"user error posts its message", userErr, false,
			[]string{`post C0TEAM 1.0 "" false That file is outside your workspace.`}},
		{"wrapped user error posts its message", fmt.Errorf("tool Read: %w", userErr), false,
			[]string{`post C0TEAM 1.0 "" false That file is outside your workspace.`}},
		{"cancelled context posts nothing", context.Canceled, true, nil},
		// The turn's own context was cancelled (/abort, the stop button),
		// not the event's: what stopped it said so.
		{"stopped turn posts nothing", fmt.Errorf("model: %w", context.Canceled), false, nil},
		{"cancelled context with another error posts nothing", errModel, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error {
				if tt.cancel {
					cancel()
				}
				return tt.turnErr
			}}
			tracer, sr := newTracer()
			next := &replyRecorder{}
			h := pipeline.Chain(next, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, &fakeCommands{}, &fakeHome{}))
			err := h.Handle(ctx, msg("E1", trustedCh, member, "1.0"))
			if !errors.Is(err, tt.turnErr) {
				t.Fatalf("err = %v, want the turn's error", err)
			}
			if got, want := strings.Join(next.got, "\n"), strings.Join(tt.wantPost, "\n"); got != want {
				t.Errorf("posted:\n%s\nwant:\n%s", got, want)
			}
			for _, p := range next.got {
				if strings.Contains(p, "req_123") {
					t.Error("operator detail leaked into the chat")
				}
			}
			assertErrorSpan(t, sr, "pipeline.agent")
		})
	}
}

func TestAgentApologyFails(t *testing.T) {
	errModel := errors.New("model failed")
	errDeliver := errors.New("not_in_channel")
	agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return errModel }}
	tracer, _ := newTracer()
	h := pipeline.Chain(&replyRecorder{err: errDeliver}, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, &fakeCommands{}, &fakeHome{}))
	err := h.Handle(context.Background(), msg("E1", trustedCh, member, "1.0"))
	if !errors.Is(err, errModel) || !errors.Is(err, errDeliver) || !strings.Contains(err.Error(), "post apology: ") {
		t.Errorf("err = %v, want both the turn's and the apology's errors", err)
	}
}

// fakeActions records clicks.
type fakeActions struct {
	clicks int
	err    error
}

func (f *fakeActions) Click(context.Context, *pipeline.Event, pipeline.Access) error {
	f.clicks++
	return f.err
}

// fakeHome records the DMs opened.
type fakeHome struct{ opened []string }

func (f *fakeHome) Opened(_ context.Context, ev *pipeline.Event, a pipeline.Access) error {
	f.opened = append(f.opened, ev.ChannelID+" "+a.UserID)
	return nil
}

// fakeCommands handles the events for which handle returns true.
type fakeCommands struct {
	handle func(*pipeline.Event) bool
	calls  int
	said   string
}

func (f *fakeCommands) Command(ctx context.Context, ev *pipeline.Event, _ pipeline.Access, out pipeline.Outbox) (bool, error) {
	f.calls++
	if f.handle == nil || !f.handle(ev) {
		return false, nil
	}
	if f.said != "" {
		if _, err := out.Post(ctx, f.said); err != nil {
			return true, err
		}
	}
	return true, nil
}

func TestAgentDispatch(t *testing.T) {
	isCommand := func(ev *pipeline.Event) bool {
		return ev.Kind == pipeline.KindCommand || strings.HasPrefix(ev.Text, "/")
	}
	t.Run("a click goes to actions", func(t *testing.T) {
		agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
		actions, commands := &fakeActions{}, &fakeCommands{handle: isCommand}
		tracer, _ := newTracer()
		h := pipeline.Chain(&terminal{}, pipeline.NewAgent(tracer, nil, agent, actions, commands, &fakeHome{}))
		if err := h.Handle(context.Background(), click("action:T1", trustedCh, member)); err != nil {
			t.Fatal(err)
		}
		if actions.clicks != 1 || agent.turns != 0 || commands.calls != 0 {
			t.Fatalf("clicks %d turns %d commands %d", actions.clicks, agent.turns, commands.calls)
		}
	})
	t.Run("a slash command runs the command and answers through next", func(t *testing.T) {
		agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
		commands := &fakeCommands{handle: isCommand, said: "mode is ask"}
		tracer, _ := newTracer()
		next := &replyRecorder{}
		h := pipeline.Chain(next, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, commands, &fakeHome{}))
		ev := &pipeline.Event{Kind: pipeline.KindCommand, ChannelID: trustedCh, UserID: member, Command: &pipeline.Command{Name: "/mode"}}
		if err := h.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if agent.turns != 0 || len(next.got) != 1 || !strings.HasSuffix(next.got[0], " mode is ask") {
			t.Fatalf("turns %d, replies %q", agent.turns, next.got)
		}
	})
	t.Run("a message that is a command does not run a turn", func(t *testing.T) {
		agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
		commands := &fakeCommands{handle: isCommand}
		tracer, _ := newTracer()
		h := pipeline.Chain(&replyRecorder{}, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, commands, &fakeHome{}))
		ev := msg("E1", trustedCh, member, "1.0")
		ev.Text = "/help"
		if err := h.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if agent.turns != 0 || commands.calls != 1 {
			t.Fatalf("turns %d commands %d", agent.turns, commands.calls)
		}
	})
	t.Run("a stop click runs the command and answers in its thread", func(t *testing.T) {
		agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
		commands := &fakeCommands{handle: func(ev *pipeline.Event) bool { return ev.Kind == pipeline.KindStop }, said: "stopped"}
		tracer, _ := newTracer()
		next := &replyRecorder{}
		h := pipeline.Chain(next, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, commands, &fakeHome{}))
		ev := &pipeline.Event{ID: "Ev1", Kind: pipeline.KindStop, ChannelID: trustedCh, ThreadTS: "1.0", UserID: member,
			Stop: &pipeline.Stop{}}
		if err := h.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		if agent.turns != 0 || commands.calls != 1 || len(next.got) != 1 || next.got[0] != `post C0TEAM 1.0 "" true stopped` {
			t.Fatalf("turns %d commands %d, replies %q", agent.turns, commands.calls, next.got)
		}
	})
	t.Run("an opened DM goes to home", func(t *testing.T) {
		agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
		home, commands := &fakeHome{}, &fakeCommands{handle: isCommand}
		tracer, _ := newTracer()
		next := &terminal{}
		h := pipeline.Chain(next, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, commands, home))
		ev := &pipeline.Event{ID: "Ev1", Kind: pipeline.KindHome, ChannelID: dmCh, UserID: manager}
		ctx := pipeline.NewContextWithAccess(context.Background(), pipeline.Access{UserID: manager, Role: pipeline.RoleManager})
		if err := h.Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if len(home.opened) != 1 || home.opened[0] != dmCh+" "+manager || agent.turns != 0 || commands.calls != 0 || next.ran() {
			t.Fatalf("opened %q, turns %d commands %d", home.opened, agent.turns, commands.calls)
		}
	})
	t.Run("an unhandled slash command is an error", func(t *testing.T) {
		agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
		tracer, _ := newTracer()
		h := pipeline.Chain(&terminal{}, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, &fakeCommands{}, &fakeHome{}))
		ev := &pipeline.Event{Kind: pipeline.KindCommand, ChannelID: trustedCh, Command: &pipeline.Command{Name: "/nope"}}
		if err := h.Handle(context.Background(), ev); err == nil {
			t.Fatal("want an error")
		}
	})
}

func TestAgentRejectsOtherKinds(t *testing.T) {
	tests := []struct {
		name string
		ev   *pipeline.Event
		want string
	}{
		{"reply", outbound(pipeline.ReplyPost, "", "x"), "agent: no handler for a reply event"},
		{"zero kind", &pipeline.Event{}, "agent: no handler for a unknown event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent := &fakeAgent{TurnFn: func(context.Context, *pipeline.Turn) error { return nil }}
			tracer, sr := newTracer()
			next := &terminal{}
			h := pipeline.Chain(next, pipeline.NewAgent(tracer, nil, agent, &fakeActions{}, &fakeCommands{}, &fakeHome{}))
			err := h.Handle(context.Background(), tt.ev)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if agent.turns != 0 || next.ran() {
				t.Errorf("turns %d, next ran %v; want neither", agent.turns, next.ran())
			}
			assertErrorSpan(t, sr, "pipeline.agent")
		})
	}
}

func TestUserError(t *testing.T) {
	inner := errors.New("inner")
	tests := []struct {
		name string
		err  *pipeline.UserError
		want string
	}{
		{"with cause", &pipeline.UserError{Message: "no access", Err: inner}, "no access: inner"},
		{"without cause", &pipeline.UserError{Message: "no access"}, "no access"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if (tt.err.Err != nil) != errors.Is(tt.err, inner) {
				t.Error("Unwrap does not reach the cause")
			}
		})
	}
}
