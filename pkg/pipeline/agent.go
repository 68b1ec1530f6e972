package pipeline

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// Outbox is how the agent speaks: every reply and edit goes through the
// rest of the chain (markup conversion, delivery) as a KindReply event.
type Outbox interface {
	// Post posts markdown text in the thread and returns the posted ts.
	Post(ctx context.Context, markdown string) (ts string, err error)
	// Update replaces the text of a message the bot posted in the thread.
	Update(ctx context.Context, ts, markdown string) error
}

// Turn is one agent turn: the event it answers and where to answer.
type Turn struct {
	Event   *Event
	Session Session
	Access  Access
	Out     Outbox
}

// Agent runs agent turns.
type Agent interface {
	// Turn runs one turn for t.Event. A returned error has already been
	// dealt with as far as the model goes; the stage tells the thread.
	Turn(ctx context.Context, t *Turn) error
}

// Actions handles clicks on the bot's cards.
type Actions interface {
	Click(ctx context.Context, ev *Event, a Access) error
}

// Commands runs thread commands (/mode, /abort, /help, ...).
type Commands interface {
	// Command runs ev if it is a command: a KindCommand event, a message
	// whose words (after the bot's mention) start with a known command, or
	// a click on the platform's stop button (KindStop: the thread's
	// /abort). handled is false for an ordinary message. The answer goes
	// through out.
	Command(ctx context.Context, ev *Event, a Access, out Outbox) (handled bool, err error)
}

// Home greets a person who opens the persona's DM (KindHome).
type Home interface {
	Opened(ctx context.Context, ev *Event, a Access) error
}

// UserError is an error whose Message may be shown in the chat as it is.
// Any other error becomes a generic apology in the chat and full detail in
// the logs.
type UserError struct {
	Message string
	Err     error
}

func (e *UserError) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *UserError) Unwrap() error { return e.Err }

// GenericApology is posted in the thread when a turn fails for a reason that
// is not safe to show.
const GenericApology = "Sorry, I hit an error and could not finish that. The details are in my logs."

// NewAgent returns the agent turn stage. A message that is a thread
// command runs the command; any other message runs the agent's turn. A
// slash command and a click on the stop button run the command, a click on
// a card goes to actions, a person opening the DM to home. Everything said
// goes through an Outbox that sends each reply through next (markup, then
// delivery).
func NewAgent(tracer trace.Tracer, m StageMetrics, agent Agent, actions Actions, commands Commands, home Home, opts ...AgentOption) Middleware {
	if agent == nil || actions == nil || commands == nil || home == nil {
		panic("pipeline: NewAgent needs an Agent, Actions, Commands and Home")
	}
	var o agentOptions
	for _, opt := range opts {
		opt(&o)
	}
	// turn runs the agent's turn on ev; a turn that failed says so in the
	// thread, one that answered asks for feedback. A turn stopped (/abort,
	// the stop button) ends with the context's error while this one goes
	// on: what stopped it said so already, it is no failure to apologise
	// for.
	turn := func(ctx context.Context, ev *Event, a Access, out *outbox) (string, string, error) {
		s, _ := SessionFromContext(ctx)
		err := agent.Turn(ctx, &Turn{Event: ev, Session: s, Access: a, Out: out})
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			err = apologise(ctx, out, err)
		}
		if err == nil && ctx.Err() == nil {
			out.askFeedback(ctx)
		}
		return OutcomeDone, "", err
	}
	routes := &kindRouter{stage: "agent"}
	routes.route(KindAction, func(ctx context.Context, ev *Event, _ Handler) (string, string, error) {
		a, _ := AccessFromContext(ctx)
		return OutcomeDone, "action", actions.Click(ctx, ev, a)
	})
	command := func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		a, _ := AccessFromContext(ctx)
		out := newOutbox(ctx, ev, next)
		handled, err := commands.Command(ctx, ev, a, out)
		if err == nil && !handled {
			err = fmt.Errorf("agent: %s event %v not handled", ev.Kind, ev.Command)
		}
		return commandDone(ctx, out, err)
	}
	routes.route(KindCommand, command)
	routes.route(KindStop, command)
	routes.route(KindHome, func(ctx context.Context, ev *Event, _ Handler) (string, string, error) {
		a, _ := AccessFromContext(ctx)
		return OutcomeDone, "home", home.Opened(ctx, ev, a)
	})
	routes.route(KindMessage, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		a, _ := AccessFromContext(ctx)
		out := newOutbox(ctx, ev, next)
		// A peer runs no command: its words go to the model as words.
		if a.Role != RolePeer {
			if handled, err := commands.Command(ctx, ev, a, out); err != nil || handled {
				return commandDone(ctx, out, err)
			}
		}
		return turn(ctx, ev, a, out)
	})
	if o.schedules != nil {
		routes.route(KindSchedule, scheduledRule(o.schedules, agent))
	}
	return newStage("agent", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		ProgressFromContext(ctx).Reach()
		return routes.dispatch(ctx, ev, next)
	})
}

// commandDone ends a command: one that failed says so where it was typed.
func commandDone(ctx context.Context, out *outbox, err error) (string, string, error) {
	if err != nil && ctx.Err() == nil {
		err = apologise(ctx, out, err)
	}
	return OutcomeDone, "command", err
}

// apologise posts what went wrong: a UserError's message, or the generic
// apology; it returns err, joined with the post's own failure.
func apologise(ctx context.Context, out *outbox, err error) error {
	msg := GenericApology
	var ue *UserError
	if errors.As(err, &ue) {
		msg = ue.Message
	}
	if _, perr := out.send(ctx, ReplyPost, "", msg, false); perr != nil {
		err = errors.Join(err, fmt.Errorf("post apology: %w", perr))
	}
	return err
}

// newOutbox returns the outbox of the turn answering ev.
func newOutbox(ctx context.Context, ev *Event, next Handler) *outbox {
	return &outbox{next: next, channel: ev.ChannelID, thread: ev.RootTS(), event: ev.ID, progress: ProgressFromContext(ctx),
		user: ev.UserID, team: ev.TeamID}
}

// outbox turns the agent's words into KindReply events for next.
type outbox struct {
	next     Handler
	channel  string
	thread   string
	event    string // the id of the event answered
	user     string // who the turn answers
	team     string
	progress *Progress // told of every message posted

	// The last message the agent posted or edited (its own words, not a
	// runtime notice): the turn's final reply gets the feedback buttons.
	lastTS, lastText string
	lastTable        *Table // the native table of the last message
}

// askFeedback puts the feedback buttons under the turn's final reply, when
// it said something. A failure costs the buttons only.
func (o *outbox) askFeedback(ctx context.Context) {
	if o.lastTS == "" {
		return
	}
	ev := &Event{Kind: KindReply, ChannelID: o.channel, ThreadTS: o.thread, Text: o.lastText,
		Reply: &Reply{Op: ReplyUpdate, TS: o.lastTS, Feedback: true, For: o.event, Table: o.lastTable}}
	_ = o.next.Handle(ctx, ev)
}

func (o *outbox) Post(ctx context.Context, markdown string) (string, error) {
	return o.send(ctx, ReplyPost, "", markdown, true)
}

func (o *outbox) Update(ctx context.Context, ts, markdown string) error {
	_, err := o.send(ctx, ReplyUpdate, ts, markdown, true)
	return err
}

func (o *outbox) send(ctx context.Context, op ReplyOp, ts, text string, markdown bool) (string, error) {
	ev := &Event{Kind: KindReply, ChannelID: o.channel, ThreadTS: o.thread, Text: text,
		Reply: &Reply{Op: op, TS: ts, Markdown: markdown, For: o.event}}
	if op == ReplyPost {
		o.progress.Answering()
	}
	if err := o.next.Handle(ctx, ev); err != nil {
		return "", err
	}
	if op == ReplyPost {
		o.progress.Answer()
	}
	if markdown && ev.Reply.LastTS != "" && (op == ReplyPost || ev.Reply.LastTS == o.lastTS) {
		o.lastTS, o.lastText, o.lastTable = ev.Reply.LastTS, ev.Reply.LastText, ev.Reply.LastTable
	}
	return ev.Reply.TS, nil
}
