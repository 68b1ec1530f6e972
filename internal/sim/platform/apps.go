package platform

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A workspace of several apps (a team of personas, issue 38): the Chat is
// the first app's platform, and AddApp gives another app its own — its
// bot, its events — over the same transcript, ts sequence and files. What
// one app posts in a channel the others receive as the platform delivers
// another app's post to an app subscribed to the channel's messages: a
// message event with the poster's bot user and bot id, no subtype, the
// mention in the text (as internal/fake's Workspace does for the
// end-to-end tests); a person's channel message reaches every app, its
// app_mention twin only the app mentioned. A DM is the first app's only.

// App is another app of the Chat's workspace: a gateway.Transport and the
// chat API of its bot, reading and writing the Chat's transcript. Made by
// AddApp; methods are safe for concurrent use.
type App struct {
	chat *Chat
	bot  pipeline.Identity
	// queue and wake are the app's events, guarded by chat.mu.
	queue   []*pipeline.Event
	wake    chan struct{} // cap 1: the queue grew
	running bool
}

var (
	_ gateway.Transport = (*App)(nil)
	_ pipeline.Poster   = (*App)(nil)
)

// AddApp adds another app of the workspace, whose bot is bot (its
// AuthTest), and returns its platform. Add apps before the events that
// they should see are injected.
func (m *Chat) AddApp(bot pipeline.Identity) *App {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	a := &App{chat: m, bot: bot, wake: make(chan struct{}, 1)}
	m.apps = append(m.apps, a)
	return a
}

// Bot is the app's bot.
func (a *App) Bot() pipeline.Identity { return a.bot }

// Deliver queues ev for the app whose bot user is to.UserID (the Chat's
// own or one added): what Relay was handed. It fails for a bot the
// workspace does not have.
func (m *Chat) Deliver(to pipeline.Identity, ev *pipeline.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	cp := cloneEvent(ev)
	if to.UserID == m.bot().UserID {
		m.queue = append(m.queue, cp)
		select {
		case m.wake <- struct{}{}:
		default:
		}
		m.notifyLocked()
		return nil
	}
	for _, a := range m.apps {
		if a.bot.UserID == to.UserID {
			a.queue = append(a.queue, cp)
			a.wakeUp()
			m.notifyLocked()
			return nil
		}
	}
	return errors.New("sim platform: no app with bot user " + to.UserID)
}

// relayLocked delivers a person's channel message, queued for from (nil:
// the Chat's bot), to every other app of the workspace. m.mu must be held.
func (m *Chat) relayLocked(from *App, ev *pipeline.Event) {
	if ev.Kind != pipeline.KindMessage || strings.HasPrefix(ev.ChannelID, "D") {
		return
	}
	if from != nil && ev.UserID != m.bot().UserID {
		m.sendLocked(nil, ev)
	}
	for _, a := range m.apps {
		if a != from && ev.UserID != a.bot.UserID {
			m.sendLocked(a, ev)
		}
	}
}

// relayPostLocked delivers who's post e, in a channel, to every other app
// of the workspace. m.mu must be held.
func (m *Chat) relayPostLocked(who pipeline.Identity, e Entry) {
	if strings.HasPrefix(e.ChannelID, "D") {
		return
	}
	ev := &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", UserID: who.UserID, BotID: who.BotID,
		ChannelID: e.ChannelID, ChannelType: gateway.ChannelType(e.ChannelID), ThreadTS: e.ThreadTS, TS: e.TS,
		Text: e.Text, TeamID: who.TeamID, Received: time.Now()}
	if e.ThreadTS != "" && e.ThreadTS != e.TS {
		ev.ParentUserID = m.rootAuthorLocked(e.ChannelID, e.ThreadTS)
	}
	if who.UserID != m.bot().UserID {
		m.sendLocked(nil, ev)
	}
	for _, a := range m.apps {
		if a.bot.UserID != who.UserID {
			m.sendLocked(a, ev)
		}
	}
}

// sendLocked hands a copy of ev for to (nil: the Chat's bot) to Relay, or
// queues it when Relay is not set. m.mu must be held.
func (m *Chat) sendLocked(to *App, ev *pipeline.Event) {
	cp := cloneEvent(ev)
	cp.ID = m.nextIDLocked("Ev0SIM")
	target := m.bot()
	if to != nil {
		target = to.bot
	}
	if m.Relay != nil {
		m.Relay(target, cp)
		return
	}
	if to != nil {
		to.queue = append(to.queue, cp)
		to.wakeUp()
		return
	}
	m.queue = append(m.queue, cp)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (a *App) wakeUp() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// botIDLocked is the bot id of the app whose bot user is userID; "" for
// none. m.mu must be held.
func (m *Chat) botIDLocked(userID string) string {
	if userID == m.bot().UserID {
		return m.bot().BotID
	}
	for _, a := range m.apps {
		if a.bot.UserID == userID {
			return a.bot.BotID
		}
	}
	return ""
}

// isApp reports whether userID is the bot user of an app added with AddApp.
func (m *Chat) isApp(userID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.apps {
		if a.bot.UserID == userID {
			return true
		}
	}
	return false
}

// InjectMention injects a person's channel message that mentions this
// app's bot, as the platform delivers one: ev to every app of the
// workspace, its app_mention twin (which gets ev's ts) to this app only.
// Each is filled as Chat.Inject fills an event.
func (a *App) InjectMention(ev, twin *pipeline.Event) error {
	if ev == nil || twin == nil {
		return errors.New("sim platform: nil event")
	}
	m := a.chat
	if err := m.lockOpen(); err != nil {
		return err
	}
	e := m.queueToLocked(a, ev)
	twin.TS = ev.TS
	m.commitAndUnlock(e, m.queueToLocked(a, twin))
	return nil
}

// Run delivers the app's events, in order, until ctx is done.
func (a *App) Run(ctx context.Context, deliver func(*pipeline.Event)) error {
	m := a.chat
	m.mu.Lock()
	if a.running {
		m.mu.Unlock()
		return errors.New("sim platform: the app's Run is already running")
	}
	a.running = true
	m.notifyLocked()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		a.running = false
		m.notifyLocked()
		m.mu.Unlock()
	}()
	m.deliverQueued(ctx, &a.queue, a.wake, nil, deliver)
	return nil
}

// AuthTest returns the app's bot.
func (a *App) AuthTest(ctx context.Context) (pipeline.Identity, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.Identity{}, err
	}
	return a.bot, nil
}

// The writes of the app's bot: as the Chat's, in its own name.

// Post records msg as the app's post; the other apps receive it.
func (a *App) Post(ctx context.Context, msg pipeline.Message) (string, error) {
	return a.chat.post(ctx, a.bot, msg)
}

// Update edits a post of the app's.
func (a *App) Update(ctx context.Context, ts string, msg pipeline.Message) error {
	return a.chat.update(ctx, a.bot, ts, msg)
}

// PostEphemeral records text shown to userID only.
func (a *App) PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error {
	return a.chat.postEphemeral(ctx, a.bot, channelID, threadTS, userID, text)
}

// Upload records a file the app posts.
func (a *App) Upload(ctx context.Context, u pipeline.Upload) error {
	return a.chat.upload(ctx, a.bot, u)
}

// SetStatus records the app's status line in a thread.
func (a *App) SetStatus(ctx context.Context, channelID, threadTS, status string) error {
	return a.chat.setStatus(ctx, a.bot, channelID, threadTS, status)
}

// SetSessionStatus records the app's agent session status.
func (a *App) SetSessionStatus(ctx context.Context, u pipeline.SessionUpdate) error {
	return a.chat.setSessionStatus(ctx, a.bot, u)
}

// SuggestPrompts records the app's suggested prompts.
func (a *App) SuggestPrompts(ctx context.Context, channelID string, prompts []string) error {
	return a.chat.suggestPrompts(ctx, a.bot, channelID, prompts)
}

// StartTasks starts the app's streamed message of tasks.
func (a *App) StartTasks(ctx context.Context, msg pipeline.Message, tasks []pipeline.Task) (string, error) {
	return a.chat.startTasks(ctx, a.bot, msg, tasks)
}

// AppendTasks records task updates of the app's message at ts.
func (a *App) AppendTasks(ctx context.Context, channelID, ts string, tasks []pipeline.Task) error {
	return a.chat.taskCall(ctx, a.bot, "append", channelID, ts, tasks)
}

// StopTasks records the end of the app's task message at ts.
func (a *App) StopTasks(ctx context.Context, channelID, ts string, tasks []pipeline.Task) error {
	return a.chat.taskCall(ctx, a.bot, "stop", channelID, ts, tasks)
}

// PublishHome records the app's Home view for userID.
func (a *App) PublishHome(ctx context.Context, userID string, v pipeline.HomeView) error {
	return a.chat.publishHome(ctx, a.bot, userID, v)
}

// React adds the app's reaction name to the message at ts.
func (a *App) React(ctx context.Context, channelID, ts, name string) error {
	return a.chat.reaction(ctx, a.bot, "reactions.add", channelID, ts, name, true)
}

// Unreact removes the app's reaction name from the message at ts.
func (a *App) Unreact(ctx context.Context, channelID, ts, name string) error {
	return a.chat.reaction(ctx, a.bot, "reactions.remove", channelID, ts, name, false)
}

// The reads are the Chat's: one workspace's messages, people and files.

// ThreadReplies reads a page of a thread (Chat.ThreadReplies).
func (a *App) ThreadReplies(ctx context.Context, q pipeline.RepliesQuery) (pipeline.MessagePage, error) {
	return a.chat.ThreadReplies(ctx, q)
}

// ThreadHistory reads a thread (Chat.ThreadHistory).
func (a *App) ThreadHistory(ctx context.Context, channelID, threadTS, cursor string, limit int) (pipeline.MessagePage, error) {
	return a.chat.ThreadHistory(ctx, channelID, threadTS, cursor, limit)
}

// ChannelHistory reads a channel (Chat.ChannelHistory).
func (a *App) ChannelHistory(ctx context.Context, channelID, oldest, cursor string, limit int) (pipeline.MessagePage, error) {
	return a.chat.ChannelHistory(ctx, channelID, oldest, cursor, limit)
}

// UserProfile makes up a user's profile (Chat.UserProfile).
func (a *App) UserProfile(ctx context.Context, userID string) (pipeline.Profile, error) {
	return a.chat.UserProfile(ctx, userID)
}

// ConversationInfo makes up a conversation (Chat.ConversationInfo).
func (a *App) ConversationInfo(ctx context.Context, channelID string) (pipeline.ConversationInfo, error) {
	return a.chat.ConversationInfo(ctx, channelID)
}

// ConversationMembers lists a conversation's members (Chat.ConversationMembers).
func (a *App) ConversationMembers(ctx context.Context, channelID, cursor string, limit int) ([]string, string, error) {
	return a.chat.ConversationMembers(ctx, channelID, cursor, limit)
}

// Download returns a file (Chat.Download).
func (a *App) Download(ctx context.Context, f pipeline.File, maxBytes int64) ([]byte, error) {
	return a.chat.Download(ctx, f, maxBytes)
}

// DownloadTo writes a file to w (Chat.DownloadTo).
func (a *App) DownloadTo(ctx context.Context, f pipeline.File, w io.Writer, maxBytes int64) (int64, error) {
	return a.chat.DownloadTo(ctx, f, w, maxBytes)
}
