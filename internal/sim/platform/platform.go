package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// DefaultBot is the identity Chat's AuthTest returns when Chat.Bot is not
// set.
var DefaultBot = pipeline.Identity{UserID: "U0SIMBOT", BotID: "B0SIMBOT", TeamID: "T0SIM"}

// ErrClosed is returned by Inject (and Send, Click, Command) once Run
// has returned: nothing would ever deliver the event.
var ErrClosed = errors.New("sim platform: closed")

// epoch is the first ts Chat hands out, in microseconds: a plausible
// platform ts (2023-11-14) whose seconds keep ten digits for ages, so that
// the ts strings also sort as text.
const epoch = 1700000000_000000

// Chat is the simulator's chat platform, in memory: a gateway.Transport that
// delivers the events the simulator injects, and the chat API the service
// posts and reads through (read.go), with the method set of the Slack
// adapter's Web API client. Everything the bot does is kept in a transcript. The zero value
// is ready; set Bot and Observer before first use. Methods are safe for
// concurrent use.
type Chat struct {
	// Bot is who AuthTest says the bot is; DefaultBot when UserID is empty.
	Bot pipeline.Identity
	// Observer, when set, sees every transcript entry, one at a time and in
	// transcript order (the REPL renders them live). It runs without locks
	// held and may call Chat's methods; the call that recorded an entry
	// may return before the Observer has seen it.
	Observer func(Entry)
	// AgentView: the platform takes agent sessions (SetSessionStatus) and
	// shows their stop button. Without it SetSessionStatus is refused as by
	// a workspace without the agent view, and the service falls back to the
	// assistant status line: the sim's default, the transcripts of most
	// scenarios being about something else.
	AgentView bool
	// Tasks: the platform shows tasks (StartTasks) without the agent
	// view's sessions.
	Tasks bool

	// Relay, when set, is handed each event the platform delivers to an
	// app of its own accord once there are other apps (AddApp): a post of
	// one app, and a person's channel message, reaching the others. The
	// event is not queued: Relay's caller queues it with Deliver when it
	// chooses (the simulator, one persona's turn at a time). Relay may set
	// the event's ID; it runs with the platform's lock held and must not
	// call Chat's methods.
	Relay func(to pipeline.Identity, ev *pipeline.Event)

	mu        sync.Mutex
	clock     int64 // ts counter
	ids       int   // event, trigger and file id counter
	queue     []*pipeline.Event
	wake      chan struct{} // cap 1: the queue grew
	changed   chan struct{} // closed and replaced at every change
	running   bool
	closed    bool
	again     bool // Reopen during Run: stay open when it returns
	delivered int
	log       []Entry
	state     map[string]*Entry                 // ts -> latest state of a post or upload
	order     []string                          // ts of posts and uploads, in post order
	files     map[string]File                   // URL -> file, for Download
	reactions map[string][]string               // channel+"/"+ts -> the bot's reactions (read.go)
	sessions  map[string]pipeline.SessionStatus // channel/thread -> its agent session's status
	threads   []string                          // channel/thread of each session, in creation order

	unseen   []Entry // entries the Observer has yet to see
	flushing bool    // a goroutine is feeding the Observer

	// apps are the other apps of the workspace (AddApp).
	apps []*App
}

var (
	_ gateway.Transport = (*Chat)(nil)
	_ pipeline.Poster   = (*Chat)(nil)
)

// Run delivers the injected events, in injection order, until ctx is done;
// events injected before Run are delivered when it starts. It returns nil
// when ctx is done (events still queued are delivered by the next Run
// after a Reopen, if any), and an error when another Run is in progress
// or Run returned and the platform was not reopened.
func (m *Chat) Run(ctx context.Context, deliver func(*pipeline.Event)) error {
	m.mu.Lock()
	m.init()
	switch {
	case m.running:
		m.mu.Unlock()
		return errors.New("sim platform: Run is already running")
	case m.closed:
		m.mu.Unlock()
		return ErrClosed
	}
	m.running = true
	m.notifyLocked()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.running, m.closed, m.again = false, !m.again, false
		m.notifyLocked()
		m.mu.Unlock()
	}()
	m.deliverQueued(ctx, &m.queue, m.wake, func() { m.delivered++ }, deliver)
	return nil
}

// deliverQueued delivers the events of *queue (guarded by m.mu) in order,
// waiting on wake while it is empty, until ctx is done: the delivery loop
// of the platform's own bot and of every other app (AddApp). taken, when
// set, runs under m.mu as an event leaves the queue.
func (m *Chat) deliverQueued(ctx context.Context, queue *[]*pipeline.Event, wake <-chan struct{}, taken func(), deliver func(*pipeline.Event)) {
	for {
		m.mu.Lock()
		for len(*queue) == 0 {
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			m.mu.Lock()
		}
		if ctx.Err() != nil {
			m.mu.Unlock()
			return
		}
		ev := (*queue)[0]
		(*queue)[0] = nil
		*queue = (*queue)[1:]
		if taken != nil {
			taken()
		}
		m.notifyLocked()
		m.mu.Unlock()
		deliver(ev)
	}
}

// Reopen keeps the platform open for a service started again: called
// while Run runs, the platform stays open when Run returns; called after,
// it opens again. Either way what is injected queues for the next Run,
// which delivers first what the last one left queued (the platform
// delivers again what was never acknowledged), so that nothing sent
// while the service restarts is refused.
func (m *Chat) Reopen() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	if m.running {
		m.again = true
		return
	}
	m.closed = false
	m.notifyLocked()
}

// Inject queues ev for Run and records it in the transcript. It does not
// wait for Run: events queue until Run starts. It fills, where empty, ID
// (a fresh id), Kind (message), Type, ChannelType (from the channel id),
// TeamID, Received, and for a message TS (the next ts; commands have none,
// as on the platform) and, in a thread, ParentUserID (the root's author).
// Run delivers a copy, so ev stays the caller's. After Run has returned it
// fails with ErrClosed.
func (m *Chat) Inject(ev *pipeline.Event) error {
	if ev == nil {
		return errors.New("sim platform: nil event")
	}
	if err := m.lockOpen(); err != nil {
		return err
	}
	m.commitAndUnlock(m.queueLocked(ev))
	return nil
}

// InjectMention injects a channel message that mentions the bot as the
// platform delivers one: twice, as ev and as twin, its app_mention copy,
// which gets ev's ts. Both are queued and recorded at once, so that the bot
// posts nothing between them: a transcript reads the same on every run.
// Each is filled as Inject fills an event.
func (m *Chat) InjectMention(ev, twin *pipeline.Event) error {
	if ev == nil || twin == nil {
		return errors.New("sim platform: nil event")
	}
	if err := m.lockOpen(); err != nil {
		return err
	}
	e := m.queueLocked(ev)
	twin.TS = ev.TS
	m.commitAndUnlock(e, m.queueLocked(twin))
	return nil
}

// lockOpen locks m.mu, or fails with ErrClosed (unlocked) once Run has
// returned.
func (m *Chat) lockOpen() error {
	m.mu.Lock()
	m.init()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// queueLocked fills ev (Inject), queues a copy for Run and returns its
// transcript entry.
func (m *Chat) queueLocked(ev *pipeline.Event) Entry {
	return m.queueToLocked(nil, ev)
}

// queueToLocked is queueLocked for the app to (nil: the bot's own Run).
// With other apps in the workspace (AddApp), a channel's message is also
// delivered to each of them but to (relayLocked).
func (m *Chat) queueToLocked(to *App, ev *pipeline.Event) Entry {
	if ev.Kind == 0 {
		ev.Kind = pipeline.KindMessage
	}
	if ev.ID == "" || ev.Type == "" {
		id, typ := "Ev0SIM", "message"
		switch ev.Kind {
		case pipeline.KindAction:
			id, typ = "action:T0SIM", "block_actions"
		case pipeline.KindCommand:
			id, typ = "command:T0SIM", "slash_command"
		case pipeline.KindStop:
			typ = "agent_session_stopped"
		}
		if ev.ID == "" {
			ev.ID = m.nextIDLocked(id)
		}
		if ev.Type == "" {
			ev.Type = typ
		}
	}
	if ev.TS == "" && ev.Kind == pipeline.KindMessage {
		ev.TS = m.nextTSLocked()
	}
	if ev.ChannelType == "" {
		ev.ChannelType = gateway.ChannelType(ev.ChannelID)
	}
	if ev.Kind == pipeline.KindMessage && ev.ParentUserID == "" && ev.ThreadTS != "" && ev.ThreadTS != ev.TS {
		ev.ParentUserID = m.rootAuthorLocked(ev.ChannelID, ev.ThreadTS)
	}
	if ev.TeamID == "" {
		ev.TeamID = m.bot().TeamID
	}
	if ev.Received.IsZero() {
		ev.Received = time.Now()
	}
	cp := cloneEvent(ev)
	if to != nil {
		to.queue = append(to.queue, cp)
		to.wakeUp()
	} else {
		m.queue = append(m.queue, cp)
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
	if len(m.apps) > 0 && ev.Type == "message" {
		m.relayLocked(to, ev)
	}
	e := Entry{Op: OpInbound, Kind: ev.Kind, ChannelID: ev.ChannelID, ThreadTS: ev.ThreadTS, TS: ev.TS,
		UserID: ev.UserID, BotID: ev.BotID, Text: ev.Text}
	if ev.Action != nil {
		a := *ev.Action
		e.Action = &a
	}
	for _, f := range ev.Files {
		sf := File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, URL: f.URL}
		if stored, ok := m.files[f.URL]; ok {
			sf.Content = stored.Content
		}
		e.Files = append(e.Files, sf)
	}
	return e
}

// rootAuthorLocked is who posted the message at ts in channel, as the
// platform tells in a thread message's parent_user_id: a person whose
// message was injected, or the bot; "" when the transcript lacks it.
func (m *Chat) rootAuthorLocked(channelID, ts string) string {
	for _, e := range m.log {
		if e.TS == ts && e.ChannelID == channelID && (e.Op == OpInbound || e.Op == OpPost || e.Op == OpUpload) {
			return e.UserID
		}
	}
	return ""
}

// Send injects a person's message: in the thread at threadTS, or starting
// a thread when it is empty. It returns the message's ts. A mention of the
// bot is part of text; it is delivered once, as a "message" event.
func (m *Chat) Send(userID, channelID, threadTS, text string, files ...pipeline.File) (string, error) {
	ev := &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", UserID: userID, ChannelID: channelID,
		ThreadTS: threadTS, Text: text, Files: files}
	if err := m.Inject(ev); err != nil {
		return "", err
	}
	return ev.TS, nil
}

// Click injects userID's click on the button actionID of the card at cardTS,
// whose value (the approval id) is value.
func (m *Chat) Click(userID, channelID, threadTS, cardTS, actionID, value string) error {
	m.mu.Lock()
	m.init()
	trigger := m.nextIDLocked("T0SIM")
	m.mu.Unlock()
	return m.Inject(&pipeline.Event{ID: "action:" + trigger, Kind: pipeline.KindAction, Type: "block_actions",
		UserID: userID, ChannelID: channelID, ThreadTS: threadTS, TS: cardTS,
		Action: &pipeline.Action{ActionID: actionID, Value: value, MessageTS: cardTS}})
}

// Command injects userID's slash command name ("/ingest") with args, typed
// in channelID. As on the platform it carries no thread.
func (m *Chat) Command(userID, channelID, name, args string) error {
	m.mu.Lock()
	m.init()
	trigger := m.nextIDLocked("T0SIM")
	m.mu.Unlock()
	args = strings.TrimSpace(args)
	return m.Inject(&pipeline.Event{ID: "command:" + trigger, Kind: pipeline.KindCommand, Type: "slash_command",
		UserID: userID, ChannelID: channelID, Text: strings.TrimSpace(name + " " + args),
		Command: &pipeline.Command{Name: name, Args: args, TriggerID: trigger}})
}

// AddFile stores a file that a message can carry (Send's files) and that
// Download returns, and gives its pipeline form.
func (m *Chat) AddFile(name, mimeType string, content []byte) pipeline.File {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	f := m.addFileLocked(File{Name: name, MimeType: mimeType, Content: content})
	return pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Size: int64(len(f.Content)), URL: f.URL}
}

func (m *Chat) addFileLocked(f File) File {
	f.ID = m.nextIDLocked("F0SIM")
	f.URL = "sim://files/" + f.ID + "/" + f.Name
	f.Content = slices.Clone(f.Content)
	m.files[f.URL] = f
	return f
}

// Post records m as a new message and returns its ts.
func (m *Chat) Post(ctx context.Context, msg pipeline.Message) (string, error) {
	return m.post(ctx, m.bot(), msg)
}

// post records msg as who's new message; in a channel, each other app of
// the workspace (AddApp) receives it as the platform delivers another
// app's post.
func (m *Chat) post(ctx context.Context, who pipeline.Identity, msg pipeline.Message) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("chat.postMessage: %w", err)
	}
	if msg.ChannelID == "" {
		return "", errors.New("chat.postMessage: no channel")
	}
	m.mu.Lock()
	m.init()
	e := Entry{Op: OpPost, ChannelID: msg.ChannelID, ThreadTS: msg.ThreadTS, TS: m.nextTSLocked(),
		UserID: who.UserID, Text: msg.Text, Card: cloneCard(msg.Card), Feedback: msg.Feedback}
	m.keepLocked(e)
	if len(m.apps) > 0 {
		m.relayPostLocked(who, e)
	}
	m.commitAndUnlock(e)
	return e.TS, nil
}

// Update replaces the text and card of the message at ts, as chat.update
// does: an update without a card removes the card. Like the platform it
// fails for a ts that is not a post of the bot in that channel.
func (m *Chat) Update(ctx context.Context, ts string, msg pipeline.Message) error {
	return m.update(ctx, m.bot(), ts, msg)
}

func (m *Chat) update(ctx context.Context, who pipeline.Identity, ts string, msg pipeline.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chat.update: %w", err)
	}
	if msg.ChannelID == "" || ts == "" {
		return errors.New("chat.update: no channel or ts")
	}
	m.mu.Lock()
	m.init()
	cur, ok := m.state[ts]
	if !ok || cur.ChannelID != msg.ChannelID || cur.Op == OpUpload || cur.UserID != who.UserID {
		m.mu.Unlock()
		return errors.New("chat.update: message_not_found")
	}
	cur.Text, cur.Card = msg.Text, cloneCard(msg.Card)
	e := Entry{Op: OpUpdate, ChannelID: cur.ChannelID, ThreadTS: cur.ThreadTS, TS: ts,
		UserID: who.UserID, Text: msg.Text, Card: cloneCard(msg.Card), Feedback: msg.Feedback}
	m.commitAndUnlock(e)
	return nil
}

// PostEphemeral records text shown to userID only.
func (m *Chat) PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error {
	return m.postEphemeral(ctx, m.bot(), channelID, threadTS, userID, text)
}

func (m *Chat) postEphemeral(ctx context.Context, who pipeline.Identity, channelID, threadTS, userID, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chat.postEphemeral: %w", err)
	}
	if channelID == "" || userID == "" {
		return errors.New("chat.postEphemeral: no channel or user")
	}
	m.mu.Lock()
	m.init()
	m.commitAndUnlock(Entry{Op: OpEphemeral, ChannelID: channelID, ThreadTS: threadTS,
		UserID: who.UserID, To: userID, Text: text})
	return nil
}

// Upload records a file posted into its thread (a message with its own ts);
// the file can then be downloaded. It refuses what the platform refuses.
func (m *Chat) Upload(ctx context.Context, u pipeline.Upload) error {
	return m.upload(ctx, m.bot(), u)
}

func (m *Chat) upload(ctx context.Context, who pipeline.Identity, u pipeline.Upload) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if err := u.Check(); err != nil {
		return err
	}
	m.mu.Lock()
	m.init()
	f := m.addFileLocked(File{Name: u.Filename, Title: u.Title, Content: u.Content})
	e := Entry{Op: OpUpload, ChannelID: u.ChannelID, ThreadTS: u.ThreadTS, TS: m.nextTSLocked(),
		UserID: who.UserID, Text: u.Comment, Files: []File{f}}
	m.keepLocked(e)
	m.commitAndUnlock(e)
	return nil
}

// SetStatus records the assistant thread's status line ("" clears it).
func (m *Chat) SetStatus(ctx context.Context, channelID, threadTS, status string) error {
	return m.setStatus(ctx, m.bot(), channelID, threadTS, status)
}

func (m *Chat) setStatus(ctx context.Context, who pipeline.Identity, channelID, threadTS, status string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("assistant.threads.setStatus: %w", err)
	}
	m.mu.Lock()
	m.init()
	m.commitAndUnlock(Entry{Op: OpStatus, ChannelID: channelID, ThreadTS: threadTS,
		UserID: who.UserID, Text: status})
	return nil
}

// SetSessionStatus records a thread's agent session status; the first
// update of a thread creates its session, with its title (later titles
// are ignored, as on the platform). Like the platform it refuses an
// update without a thread, and every update without AgentView.
func (m *Chat) SetSessionStatus(ctx context.Context, u pipeline.SessionUpdate) error {
	return m.setSessionStatus(ctx, m.bot(), u)
}

func (m *Chat) setSessionStatus(ctx context.Context, who pipeline.Identity, u pipeline.SessionUpdate) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("agents.sessions.setStatus: %w", err)
	}
	if !m.AgentView {
		return fmt.Errorf("agents.sessions.setStatus: unknown_method: %w", pipeline.ErrNoAgentSessions)
	}
	if u.ChannelID == "" || u.ThreadTS == "" {
		return errors.New("agents.sessions.setStatus: invalid_arguments")
	}
	m.mu.Lock()
	m.init()
	key := u.ChannelID + "/" + u.ThreadTS
	e := Entry{Op: OpSession, ChannelID: u.ChannelID, ThreadTS: u.ThreadTS, UserID: who.UserID, Text: string(u.Status)}
	if _, ok := m.sessions[key]; !ok {
		e.Title = u.Title
		m.threads = append(m.threads, key)
	}
	m.sessions[key] = u.Status
	m.commitAndUnlock(e)
	return nil
}

// Session returns the status of the agent session of the thread at
// channelID/threadTS, "" when it has none.
func (m *Chat) Session(channelID, threadTS string) pipeline.SessionStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[channelID+"/"+threadTS]
}

// Busy returns the thread whose agent session shows a turn at work
// (processing, or suspended on a card), the newest such session first:
// the one whose stop button a person sees.
func (m *Chat) Busy() (channelID, threadTS string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.threads) - 1; i >= 0; i-- {
		key := m.threads[i]
		if st := m.sessions[key]; st == pipeline.SessionProcessing || st == pipeline.SessionSuspended {
			channelID, threadTS, _ = strings.Cut(key, "/")
			return channelID, threadTS, true
		}
	}
	return "", "", false
}

// Stop injects userID's click on the stop button of the agent session of
// the thread at channelID/threadTS (agent_session_stopped). The platform
// has no streaming here: no stream is stopped with it.
func (m *Chat) Stop(userID, channelID, threadTS string) error {
	return m.Inject(&pipeline.Event{Kind: pipeline.KindStop, Type: "agent_session_stopped", UserID: userID,
		ChannelID: channelID, ThreadTS: threadTS, Stop: &pipeline.Stop{}})
}

// SuggestPrompts records the suggested prompts offered in a DM.
func (m *Chat) SuggestPrompts(ctx context.Context, channelID string, prompts []string) error {
	return m.suggestPrompts(ctx, m.bot(), channelID, prompts)
}

func (m *Chat) suggestPrompts(ctx context.Context, who pipeline.Identity, channelID string, prompts []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("assistant.threads.setSuggestedPrompts: %w", err)
	}
	m.mu.Lock()
	m.init()
	m.commitAndUnlock(Entry{Op: OpPrompts, ChannelID: channelID, UserID: who.UserID, Prompts: slices.Clone(prompts)})
	return nil
}

// Download returns a file added with AddFile or uploaded by the bot. A file
// over maxBytes fails with gateway.ErrFileTooLarge, as on the platform.
func (m *Chat) Download(ctx context.Context, f pipeline.File, maxBytes int64) ([]byte, error) {
	sf, err := m.file(ctx, f.URL, maxBytes)
	if err != nil {
		return nil, err
	}
	return slices.Clone(sf.Content), nil
}

// DownloadTo writes a file added with AddFile or uploaded by the bot to w,
// as the Web API client streams one, and returns the bytes written. A
// file over maxBytes fails with gateway.ErrFileTooLarge before anything is written.
func (m *Chat) DownloadTo(ctx context.Context, f pipeline.File, w io.Writer, maxBytes int64) (int64, error) {
	sf, err := m.file(ctx, f.URL, maxBytes)
	if err != nil {
		return 0, err
	}
	// The stored content is never changed in place (addFileLocked keeps
	// a copy), so it is written without holding the lock.
	n, err := w.Write(sf.Content)
	if err != nil {
		return int64(n), fmt.Errorf("download: %w", err)
	}
	return int64(n), nil
}

// file is the file at url, refused as the platform refuses a download.
func (m *Chat) file(ctx context.Context, url string, maxBytes int64) (File, error) {
	if err := ctx.Err(); err != nil {
		return File{}, fmt.Errorf("download: %w", err)
	}
	if maxBytes <= 0 {
		return File{}, errors.New("download: the limit must be positive")
	}
	m.mu.Lock()
	f, ok := m.files[url]
	m.mu.Unlock()
	switch {
	case !ok:
		return File{}, errors.New("download: file_not_found")
	case int64(len(f.Content)) > maxBytes:
		return File{}, fmt.Errorf("download: %w (limit %d bytes)", gateway.ErrFileTooLarge, maxBytes)
	}
	return f, nil
}

// AuthTest returns Bot, or DefaultBot when Bot is not set.
func (m *Chat) AuthTest(ctx context.Context) (pipeline.Identity, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.Identity{}, fmt.Errorf("auth.test: %w", err)
	}
	return m.bot(), nil
}

func (m *Chat) bot() pipeline.Identity {
	if m.Bot.UserID != "" {
		return m.Bot
	}
	return DefaultBot
}

func (m *Chat) init() {
	if m.changed == nil {
		m.changed = make(chan struct{})
		m.wake = make(chan struct{}, 1)
		m.state = make(map[string]*Entry)
		m.files = make(map[string]File)
		m.reactions = make(map[string][]string)
		m.sessions = make(map[string]pipeline.SessionStatus)
	}
}

// nextTSLocked returns the next ts: "1700000000.000100", "1700000000.000200", ...
func (m *Chat) nextTSLocked() string {
	m.clock++
	us := epoch + m.clock*100
	return fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000)
}

// nextIDLocked returns a fresh id: prefix and a number unique in m.
func (m *Chat) nextIDLocked(prefix string) string {
	m.ids++
	return fmt.Sprintf("%s%06d", prefix, m.ids)
}

// keepLocked starts tracking the latest state of a post or upload.
func (m *Chat) keepLocked(e Entry) {
	cur := cloneEntry(e)
	m.state[e.TS] = &cur
	m.order = append(m.order, e.TS)
}

func (m *Chat) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// commitAndUnlock appends es to the transcript, wakes the waiters, releases
// m.mu and shows the new entries to the Observer. m.mu must be held.
//
// One goroutine at a time feeds the Observer (the flusher), without any lock
// held, so entries reach it in transcript order and it may call back into m;
// an entry recorded meanwhile is shown by the running flusher.
func (m *Chat) commitAndUnlock(es ...Entry) {
	for _, e := range es {
		e.Seq = len(m.log) + 1
		m.log = append(m.log, e)
		if m.Observer != nil {
			m.unseen = append(m.unseen, cloneEntry(e))
		}
	}
	m.notifyLocked()
	if m.Observer == nil || m.flushing {
		m.mu.Unlock()
		return
	}
	m.flushing = true
	for {
		batch := m.unseen
		m.unseen = nil
		if len(batch) == 0 {
			m.flushing = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		for _, e := range batch {
			m.Observer(e)
		}
		m.mu.Lock()
	}
}

func cloneEvent(ev *pipeline.Event) *pipeline.Event {
	cp := *ev
	cp.Files = slices.Clone(ev.Files)
	if ev.Action != nil {
		a := *ev.Action
		cp.Action = &a
	}
	if ev.Command != nil {
		c := *ev.Command
		cp.Command = &c
	}
	if ev.Stop != nil {
		st := *ev.Stop
		st.Streams = slices.Clone(ev.Stop.Streams)
		cp.Stop = &st
	}
	if ev.Reply != nil {
		r := *ev.Reply
		cp.Reply = &r
	}
	return &cp
}

var _ pipeline.TaskPoster = (*Chat)(nil)

// StartTasks starts a streamed message of tasks in m's thread. Like a
// workspace without the agent view, the platform refuses tasks without
// AgentView (pipeline.ErrNoTasks): the service shows the status line.
func (m *Chat) StartTasks(ctx context.Context, msg pipeline.Message, tasks []pipeline.Task) (string, error) {
	return m.startTasks(ctx, m.bot(), msg, tasks)
}

func (m *Chat) startTasks(ctx context.Context, who pipeline.Identity, msg pipeline.Message, tasks []pipeline.Task) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("chat.startStream: %w", err)
	}
	if !m.AgentView && !m.Tasks {
		return "", fmt.Errorf("chat.startStream: invalid_chunks: %w", pipeline.ErrNoTasks)
	}
	if msg.ChannelID == "" || msg.ThreadTS == "" {
		return "", errors.New("chat.startStream: invalid_thread_ts")
	}
	m.mu.Lock()
	m.init()
	e := Entry{Op: OpTasks, ChannelID: msg.ChannelID, ThreadTS: msg.ThreadTS, TS: m.nextTSLocked(),
		UserID: who.UserID, Text: "start", Tasks: slices.Clone(tasks)}
	m.keepLocked(e)
	m.commitAndUnlock(e)
	return e.TS, nil
}

// AppendTasks records task updates of the message at ts.
func (m *Chat) AppendTasks(ctx context.Context, channelID, ts string, tasks []pipeline.Task) error {
	return m.taskCall(ctx, m.bot(), "append", channelID, ts, tasks)
}

// StopTasks records the end of the task message at ts.
func (m *Chat) StopTasks(ctx context.Context, channelID, ts string, tasks []pipeline.Task) error {
	return m.taskCall(ctx, m.bot(), "stop", channelID, ts, tasks)
}

func (m *Chat) taskCall(ctx context.Context, who pipeline.Identity, op, channelID, ts string, tasks []pipeline.Task) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chat.%sStream: %w", op, err)
	}
	m.mu.Lock()
	m.init()
	cur, ok := m.state[ts]
	if !ok || cur.ChannelID != channelID || cur.Op != OpTasks {
		m.mu.Unlock()
		return fmt.Errorf("chat.%sStream: message_not_found", op)
	}
	if cur.Text == "stop" {
		m.mu.Unlock()
		return fmt.Errorf("chat.%sStream: message_not_in_streaming_state", op)
	}
	cur.Text = op
	m.commitAndUnlock(Entry{Op: OpTasks, ChannelID: channelID, ThreadTS: cur.ThreadTS, TS: ts,
		UserID: who.UserID, Text: op, Tasks: slices.Clone(tasks)})
	return nil
}

var _ pipeline.HomePublisher = (*Chat)(nil)

// PublishHome records the Home view published for userID.
func (m *Chat) PublishHome(ctx context.Context, userID string, v pipeline.HomeView) error {
	return m.publishHome(ctx, m.bot(), userID, v)
}

func (m *Chat) publishHome(ctx context.Context, who pipeline.Identity, userID string, v pipeline.HomeView) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("views.publish: %w", err)
	}
	if userID == "" {
		return errors.New("views.publish: user_not_found")
	}
	m.mu.Lock()
	m.init()
	m.commitAndUnlock(Entry{Op: OpHome, UserID: who.UserID, To: userID, Home: &v})
	return nil
}

// OpenHome injects userID's opening of the app's Home tab.
func (m *Chat) OpenHome(userID string) error {
	return m.Inject(&pipeline.Event{Kind: pipeline.KindHome, Type: "app_home_opened", UserID: userID, HomeTab: true})
}

// ClickHome injects userID's click on a button of their Home tab.
func (m *Chat) ClickHome(userID, actionID, value string) error {
	return m.Inject(&pipeline.Event{Kind: pipeline.KindHome, Type: "block_actions", UserID: userID, HomeTab: true,
		Action: &pipeline.Action{ActionID: actionID, Value: value}})
}
