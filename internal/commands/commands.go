package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Store is the persistence the commands use (*store.Store).
type Store interface {
	SetThreadMode(ctx context.Context, key, mode string) error
	SetThreadLock(ctx context.Context, key, userID string) error
	GetThread(ctx context.Context, key string) (store.Thread, error)
	SessionByThread(ctx context.Context, key string) (store.Session, error)
}

// Engine is the agent engine's control surface.
type Engine interface {
	// Abort stops the thread's running turn; it reports whether one ran.
	Abort(threadKey string) bool
	// AbortOwn stops the thread's running turn only when userID started
	// it; running reports whether a turn runs there at all.
	AbortOwn(threadKey, userID string) (stopped, running bool)
	// AbortChannel stops every turn running in the channel and says how
	// many.
	AbortChannel(channelID string) int
	// Ended returns a channel closed once the thread's running turn has
	// ended, or nil when none runs here.
	Ended(threadKey string) <-chan struct{}
	// CompactTurn compacts the session's history for t (/compact): held
	// to the budgets (refused: agent.ErrBudgetRefused, the thread told),
	// its tokens recorded.
	CompactTurn(ctx context.Context, t *pipeline.Turn, sessionID string) (int, error)
}

// Ingester runs /ingest (issue: skills and knowledge bases); nil answers
// that no writable knowledge base is configured.
type Ingester interface {
	Ingest(ctx context.Context, label, userID string, out pipeline.Outbox) error
}

// Commands runs thread commands. It implements pipeline.Commands.
type Commands struct {
	Store       Store
	Engine      Engine
	Persona     *persona.Persona
	Ingest      Ingester
	DefaultMode pipeline.Mode
	// NoBypass, when set, is why /mode bypass is refused here (the kernel
	// sandbox is missing and AGENT_SANDBOX=off was not chosen).
	NoBypass string
	Self     func() pipeline.Identity
	// Sessions, when set, moves a thread's agent session on the platform:
	// a stop button clicked when no turn runs leaves it active.
	Sessions func(ctx context.Context, u pipeline.SessionUpdate) error
	// Schedules answers /schedule, /schedules and /unschedule; nil
	// answers that there are none here.
	Schedules Schedules
	// Mutes keeps /ignore's mutes; nil answers that muting is not
	// available here.
	Mutes MuteStore
	// Models is what /model chooses from; nil answers that choosing is not
	// available here.
	Models *Models
	// Now is the service's clock, for mutes' ends (nil: the system's).
	Now func() time.Time
	// Memory answers /remember, /memory and /forget; nil says memory is
	// not configured.
	Memory Memory
	// Connections answers /connect, /disconnect and /connections; nil
	// says no tool server signs in per person here.
	Connections Connections
	// Private shows text to one person only in a channel (the platform's
	// ephemeral message); answers that are only for the asker use it.
	Private func(ctx context.Context, channelID, threadTS, userID, text string) error
	Log     *slog.Logger
}

var _ pipeline.Commands = (*Commands)(nil)

// names are the commands, with what /help says of them.
var names = map[string]string{
	"/mode":    "`/mode <ask|accept-edits|bypass|plan|dont-ask>` sets this thread's permission mode (manager, backup manager, approvers with scope `mode`)",
	"/abort":   "`/abort` stops my running turn at once (whoever started it, the manager, approvers)",
	"/compact": "`/compact` summarises this thread's history now (whoever started the thread, the manager, approvers)",
	"/help":    "`/help` shows this",
	"/1on1":    "`/1on1` locks this thread to you and the manager (whoever started the thread, the manager, approvers); `/1on1 off` releases it",
	"/memory":  "`/memory` lists what I remember in this conversation and everywhere, with ids",
	"/forget":  "`/forget <id>` forgets a memory (the manager, the backup manager or whoever asked me to remember it)",
	"/ingest":  "`/ingest [label]` synthesises the knowledge base's raw notes into its wiki (manager, backup manager, approvers)",
	"/remember": "`/remember <text>` makes me remember it in this conversation; `/remember --persona <text>` in every conversation " +
		"(manager, backup manager)",
	"/schedule": "`/schedule \"<when>\" \"<prompt>\" [channel]` schedules work here: cron (`0 9 * * 1-5`), `@daily`, `@every 2h`, `in 30m` or a time " +
		"(manager, backup manager, approvers with scope `schedule`; alias `/cron-add`); `/schedule resume <id>` runs a paused one again, as you",
	"/schedules":  "`/schedules` lists this conversation's schedules (alias `/cron-list`)",
	"/unschedule": "`/unschedule <id>` removes a schedule (alias `/cron-remove`)",
	"/ignore": "`/ignore <@person> [30m|2h|1d]` mutes a person everywhere, `/unignore <@person>` lifts it " +
		"(manager, backup manager, approvers)",
	"/ignore-thread":   "`/ignore-thread [30m|2h|1d]` mutes this thread, `/unignore-thread` lifts it (manager, backup manager, approvers)",
	"/unignore":        "",
	"/unignore-thread": "",
	"/model":           "`/model [id]` shows or sets this thread's model (manager, backup manager, approvers)",
	"/connect":         "`/connect <server>` signs you in to a tool server with your own account (the link is shown to you only)",
	"/disconnect":      "`/disconnect <server>` forgets your sign-in to a tool server",
	"/connections":     "`/connections` lists the tool servers you are signed in to",
}

// aliases are the original runtime's names of the commands: its own
// scenario files run unchanged.
var aliases = map[string]string{
	"/cron-add":    "/schedule",
	"/cron-list":   "/schedules",
	"/cron-remove": "/unschedule",
}

// Command runs ev if it is a command.
func (c *Commands) Command(ctx context.Context, ev *pipeline.Event, a pipeline.Access, out pipeline.Outbox) (bool, error) {
	if ev.Kind == pipeline.KindStop {
		return true, c.stop(ctx, ev, a, out)
	}
	name, args, ok := c.parse(ev)
	if !ok {
		return false, nil
	}
	if canonical, ok := aliases[name]; ok {
		name = canonical
	}
	if _, known := names[name]; !known {
		if ev.Kind != pipeline.KindCommand {
			return false, nil // "/etc is full" is a message, not a command
		}
		return true, say(ctx, out, fmt.Sprintf("I don't know `%s`. Try `/help`.", name))
	}
	key := ev.ThreadKey() // for a slash command: the channel ("C…:")
	c.Log.InfoContext(ctx, "command", "command", name, "user_id", ev.UserID, "thread", key)
	switch name {
	case "/mode":
		return true, c.mode(ctx, ev, a, key, args, out)
	case "/abort":
		return true, c.abort(ctx, ev, a, key, out)
	case "/compact":
		return true, c.compact(ctx, ev, a, key, out)
	case "/help":
		return true, say(ctx, out, c.help(a))
	case "/1on1":
		return true, c.oneOnOne(ctx, ev, a, key, args, out)
	case "/ingest":
		return true, c.ingest(ctx, ev, a, args, out)
	case "/schedule", "/schedules", "/unschedule":
		return true, c.schedule(ctx, ev, a, name, key, args, out)
	case "/ignore", "/ignore-thread", "/unignore", "/unignore-thread":
		return true, c.ignore(ctx, ev, a, name, key, args, out)
	case "/model":
		return true, c.model(ctx, ev, a, key, args, out)
	case "/remember":
		return true, c.remember(ctx, ev, a, args, out)
	case "/memory":
		return true, c.memoryList(ctx, ev, out)
	case "/forget":
		return true, c.forget(ctx, ev, a, args, out)
	case "/connect", "/disconnect", "/connections":
		return true, c.connections(ctx, ev, a, name, args, out)
	}
	return false, nil
}

// parse finds the command of a slash command, or of a message whose words
// (after the bot's mention) start with "/" (pipeline.ParseCommand, as the
// gateway reads /abort).
func (c *Commands) parse(ev *pipeline.Event) (name, args string, ok bool) {
	switch ev.Kind {
	case pipeline.KindCommand:
		if ev.Command == nil {
			return "", "", false
		}
		return strings.ToLower(ev.Command.Name), strings.TrimSpace(ev.Command.Args), true
	case pipeline.KindMessage:
		cmd, ok := pipeline.ParseCommand(ev.Text, c.Self().UserID)
		return cmd.Name, cmd.Args, ok
	}
	return "", "", false
}

func say(ctx context.Context, out pipeline.Outbox, text string) error {
	_, err := out.Post(ctx, text)
	return err
}

// refuse answers a command its sender may not run, and logs the attempt.
func (c *Commands) refuse(ctx context.Context, ev *pipeline.Event, name, key string, out pipeline.Outbox, text string) error {
	c.Log.WarnContext(ctx, "command refused", "command", name, "user_id", ev.UserID, "thread", key)
	return say(ctx, out, text)
}

// usageMode is pinned (interfaces.md).
const usageMode = "usage: /mode ask|accept-edits|bypass|plan|dont-ask"

func (c *Commands) mode(ctx context.Context, ev *pipeline.Event, a pipeline.Access, key, args string, out pipeline.Outbox) error {
	here := "This thread's"
	if ev.Kind == pipeline.KindCommand {
		here = "This channel's"
	}
	current := fmt.Sprintf("%s permission mode is `%s`.\n%s", here, a.Mode, usageMode)
	if args == "" {
		return say(ctx, out, current)
	}
	m, err := pipeline.ParseMode(args)
	if err != nil {
		// The words are not echoed: whatever they hold (a mention, a
		// broadcast) is not the bot's to post.
		return say(ctx, out, "That is not a permission mode. "+current)
	}
	if !mayChangeMode(a) {
		return c.refuse(ctx, ev, "/mode", key, out, msgModeRefused)
	}
	if m == pipeline.ModeBypass && c.NoBypass != "" {
		return c.refuse(ctx, ev, "/mode", key, out, "bypass is refused here: "+c.NoBypass)
	}
	if err := c.Store.SetThreadMode(ctx, key, string(m)); err != nil {
		return err
	}
	where := "this thread"
	if ev.Kind == pipeline.KindCommand {
		where = "this channel's new and current threads without a mode of their own"
	}
	msg := fmt.Sprintf("Permission mode of %s: `%s` (set by <@%s>).", where, m, ev.UserID)
	if eff := pipeline.EffectiveMode(a.Layer, m); eff != m {
		msg += fmt.Sprintf(" This channel is public, so it works as `%s`.", eff)
	}
	return say(ctx, out, msg)
}

// Answers of /abort: each starts with "aborted" (interfaces.md).
const (
	msgAborted        = "aborted: I stopped the running turn. The thread stays open: tell me what to do next."
	msgAbortedChannel = "aborted: I stopped %d running turn(s) in this channel."
	msgNothingRunning = "aborted: nothing was running."
)

// abort stops a running turn. The slash form acts on every thread of the
// channel, so it takes a role; typed in a thread it also lets the person
// whose message started the turn stop it, checked in the same step as the
// stop (AbortOwn), never anyone else's.
func (c *Commands) abort(ctx context.Context, ev *pipeline.Event, a pipeline.Access, key string, out pipeline.Outbox) error {
	if ev.Kind == pipeline.KindCommand {
		if !a.Privileged() {
			return c.refuse(ctx, ev, "/abort", key, out, msgAbortSlashRefused)
		}
		if n := c.Engine.AbortChannel(ev.ChannelID); n > 0 {
			return say(ctx, out, fmt.Sprintf(msgAbortedChannel, n))
		}
		return say(ctx, out, msgNothingRunning)
	}
	ended := c.Engine.Ended(key)
	if a.Privileged() {
		if c.Engine.Abort(key) {
			awaitEnd(ctx, ended)
			return say(ctx, out, msgAborted)
		}
		return say(ctx, out, msgNothingRunning)
	}
	stopped, running := c.Engine.AbortOwn(key, ev.UserID)
	switch {
	case stopped:
		awaitEnd(ctx, ended)
		return say(ctx, out, msgAborted)
	case running:
		return c.refuse(ctx, ev, "/abort", key, out, msgAbortRefused)
	}
	return say(ctx, out, msgNothingRunning)
}

// Answers of the stop button.
const (
	msgStopped        = "stopped by <@%s>: I stopped the running turn. The thread stays open: tell me what to do next."
	msgStoppedNothing = "stopped: nothing was running."
)

// stop is a click on the platform's stop button of a thread's agent
// session: the thread's /abort, with its rule of who may (the person who
// started the running turn, the manager, the backup manager, an approver;
// the button is the platform's, so whoever the platform showed it to may
// click it), answered in the thread. The stopped turn leaves its session
// active itself; with no turn running, the session is moved off
// processing here (the platform leaves that to the app).
func (c *Commands) stop(ctx context.Context, ev *pipeline.Event, a pipeline.Access, out pipeline.Outbox) error {
	key := ev.ThreadKey()
	c.Log.InfoContext(ctx, "command", "command", "stop", "user_id", ev.UserID, "thread", key)
	ended := c.Engine.Ended(key)
	var stopped, running bool
	if a.Privileged() {
		stopped = c.Engine.Abort(key)
	} else {
		stopped, running = c.Engine.AbortOwn(key, ev.UserID)
	}
	if ev.Stop != nil {
		ev.Stop.Stopped = stopped
	}
	switch {
	case stopped:
		awaitEnd(ctx, ended)
		return say(ctx, out, fmt.Sprintf(msgStopped, ev.UserID))
	case running:
		return c.refuse(ctx, ev, "stop", key, out, msgAbortRefused)
	}
	if c.Sessions != nil {
		err := c.Sessions(ctx, pipeline.SessionUpdate{ChannelID: ev.ChannelID, ThreadTS: ev.RootTS(), Status: pipeline.SessionActive})
		if err != nil {
			c.Log.DebugContext(ctx, "set agent session status", "thread", key, "err", err)
		}
	}
	return say(ctx, out, msgStoppedNothing)
}

// awaitEndMax bounds how long a stop's answer waits for the stopped turn
// to end: a turn ends within moments of its stop, unless a tool ignores
// it; the answer then goes first.
const awaitEndMax = 10 * time.Second

// awaitEnd waits for a stopped turn to end (ended, from Engine.Ended
// before the stop; nil for a turn stopped at another replica), so that
// the answer follows the turn's last word: its expired card, its
// session left active.
func awaitEnd(ctx context.Context, ended <-chan struct{}) {
	if ended == nil {
		return
	}
	t := time.NewTimer(awaitEndMax)
	defer t.Stop()
	select {
	case <-ended:
	case <-t.C:
	case <-ctx.Done():
	}
}

// compact folds the thread's older history into a summary: a model call,
// so it takes what starting a thread's turn of one's own does (a role, or
// having started the thread; the slash form, a role) and is held to the
// budgets like any turn's call.
func (c *Commands) compact(ctx context.Context, ev *pipeline.Event, a pipeline.Access, key string, out pipeline.Outbox) error {
	switch {
	case ev.Kind == pipeline.KindCommand && !a.Privileged():
		return c.refuse(ctx, ev, "/compact", key, out, msgCompactSlashRefused)
	case ev.Kind != pipeline.KindCommand && !a.Privileged() && !rootAuthor(ev):
		return c.refuse(ctx, ev, "/compact", key, out, msgCompactRefused)
	}
	s, err := c.Store.SessionByThread(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return say(ctx, out, "There is no conversation here to compact yet.")
	}
	if err != nil {
		return err
	}
	n, err := c.Engine.CompactTurn(ctx, &pipeline.Turn{Event: ev, Access: a, Out: out}, s.ID)
	if errors.Is(err, agent.ErrBudgetRefused) {
		return nil // the thread was told
	}
	if err != nil {
		return &pipeline.UserError{Message: "I could not compact this thread's history (error). It is unchanged.", Err: err}
	}
	if n == 0 {
		return say(ctx, out, "The history is short already; nothing to compact.")
	}
	return say(ctx, out, fmt.Sprintf("Compacted: %d older messages are now a summary.", n))
}

// oneOnOne locks a thread (typed in it) or a whole channel (the slash
// form) to the sender and the managers. Locking a channel takes a role;
// locking a thread takes a role or having started it: a member cannot
// shut others out of a conversation that is not theirs.
func (c *Commands) oneOnOne(ctx context.Context, ev *pipeline.Event, a pipeline.Access, key, args string, out pipeline.Outbox) error {
	th, err := c.Store.GetThread(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if th.LockedBy == "" && ev.Kind == pipeline.KindMessage {
		// A channel-wide lock (the slash form) covers the thread too.
		channel := pipeline.ThreadKey(ev.ChannelID, "")
		ch, err := c.Store.GetThread(ctx, channel)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if ch.LockedBy != "" {
			th, key = ch, channel
		}
	}
	manager := a.Managing()
	if strings.EqualFold(args, "off") {
		if th.LockedBy == "" {
			return say(ctx, out, "This thread is not locked.")
		}
		if th.LockedBy != ev.UserID && !manager {
			return say(ctx, out, fmt.Sprintf("unauthorized: only <@%s> or the manager can release this lock.", th.LockedBy))
		}
		if err := c.Store.SetThreadLock(ctx, key, ""); err != nil {
			return err
		}
		return say(ctx, out, "1on1 mode released: everyone who may talk to me here can again.")
	}
	if args != "" {
		return say(ctx, out, "Use `/1on1` to lock this thread or `/1on1 off` to release it.")
	}
	switch {
	case ev.Kind == pipeline.KindCommand && !a.Privileged():
		return c.refuse(ctx, ev, "/1on1", key, out, msgLockSlashRefused)
	case ev.Kind == pipeline.KindMessage && !a.Privileged() && !rootAuthor(ev):
		return c.refuse(ctx, ev, "/1on1", key, out, msgLockRefused)
	}
	if th.LockedBy != "" && th.LockedBy != ev.UserID && !manager {
		return say(ctx, out, fmt.Sprintf("unauthorized: this thread is locked to <@%s>.", th.LockedBy))
	}
	if err := c.Store.SetThreadLock(ctx, key, ev.UserID); err != nil {
		return err
	}
	where := "this thread"
	if key == pipeline.ThreadKey(ev.ChannelID, "") {
		where = "this channel"
	}
	return say(ctx, out, fmt.Sprintf("1on1 mode: %s is now between <@%s> and the manager; others' messages are ignored until `/1on1 off`.", where, ev.UserID))
}

func (c *Commands) ingest(ctx context.Context, ev *pipeline.Event, a pipeline.Access, args string, out pipeline.Outbox) error {
	if !a.Privileged() {
		return say(ctx, out, "unauthorized: only the manager, the backup manager and approvers can run /ingest.")
	}
	if c.Ingest == nil {
		return say(ctx, out, "manifest.agent_knowledge not set")
	}
	return c.Ingest.Ingest(ctx, args, ev.UserID, out)
}

// help describes the persona and who may do what, from SOUL.md.
func (c *Commands) help(a pipeline.Access) string {
	p := c.Persona
	var b strings.Builder
	name := p.Identity.Name
	if p.Identity.Role != "" {
		name += ", " + p.Identity.Role
	}
	fmt.Fprintf(&b, "*%s*\n", name)
	if m := strings.TrimSpace(p.Mandate); m != "" {
		fmt.Fprintf(&b, "\n*What I do*\n%s\n", m)
	}
	fmt.Fprintf(&b, "\n*Who decides*\n- Manager: <@%s>", p.Manager.UserID)
	if p.BackupManager.UserID != "" {
		fmt.Fprintf(&b, ", backup <@%s>", p.BackupManager.UserID)
	}
	b.WriteString(" — may approve anything\n")
	approvers := append([]persona.Approver(nil), p.Approvers...)
	sort.Slice(approvers, func(i, j int) bool { return approvers[i].UserID < approvers[j].UserID })
	for _, ap := range approvers {
		fmt.Fprintf(&b, "- <@%s> approves: %s\n", ap.UserID, strings.Join(ap.Scopes, ", "))
	}
	fmt.Fprintf(&b, "\n*Here*\nPermission mode `%s` (%s channel).\n", a.Mode, a.Layer)
	b.WriteString("\n*Commands*\n")
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if names[k] != "" { // told of with another
			b.WriteString("- " + names[k] + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
