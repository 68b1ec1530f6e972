package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// MemoryBot is the identity Memory's AuthTest returns when Memory.Bot is
// not set.
var MemoryBot = pipeline.Identity{UserID: "U0SIMBOT", BotID: "B0SIMBOT", TeamID: "T0SIM"}

// ErrMemoryClosed is returned by Inject (and Send, Click, Command) once Run
// has returned: nothing would ever deliver the event.
var ErrMemoryClosed = errors.New("memory transport: closed")

// memoryEpoch is the first ts Memory hands out, in microseconds: a plausible
// platform ts (2023-11-14) whose seconds keep ten digits for ages, so that
// the ts strings also sort as text.
const memoryEpoch = 1700000000_000000

// Memory is the simulator's chat platform, in memory: a Transport that
// delivers the events the simulator injects, and the chat API the service
// posts through, with the method set of *slackio.Chat. Everything the bot does
// is kept in a transcript. The zero value is ready; set Bot and Observer
// before first use. Methods are safe for concurrent use.
type Memory struct {
	// Bot is who AuthTest says the bot is; MemoryBot when UserID is empty.
	Bot pipeline.Identity
	// Observer, when set, sees every transcript entry, one at a time and in
	// transcript order (the REPL renders them live). It runs without locks
	// held and may call Memory's methods; the call that recorded an entry
	// may return before the Observer has seen it.
	Observer func(SimMessage)

	mu        sync.Mutex
	clock     int64 // ts counter
	ids       int   // event, trigger and file id counter
	queue     []*pipeline.Event
	wake      chan struct{} // cap 1: the queue grew
	changed   chan struct{} // closed and replaced at every change
	running   bool
	closed    bool
	delivered int
	log       []SimMessage
	state     map[string]*SimMessage // ts -> latest state of a post or upload
	order     []string               // ts of posts and uploads, in post order
	files     map[string]SimFile     // URL -> file, for Download

	unseen   []SimMessage // entries the Observer has yet to see
	flushing bool         // a goroutine is feeding the Observer
}

var (
	_ Transport       = (*Memory)(nil)
	_ pipeline.Poster = (*Memory)(nil)
)

// SimOp says what a transcript entry records.
type SimOp string

// The transcript entries.
const (
	SimInbound   SimOp = "inbound"   // an event injected by the simulator
	SimPost      SimOp = "post"      // chat.postMessage
	SimUpdate    SimOp = "update"    // chat.update
	SimEphemeral SimOp = "ephemeral" // chat.postEphemeral
	SimUpload    SimOp = "upload"    // a file upload
	SimStatus    SimOp = "status"    // assistant.threads.setStatus ("" clears)
)

// SimMessage is one transcript entry.
type SimMessage struct {
	// Seq is the entry's position in the transcript, from 1.
	Seq int
	Op  SimOp
	// Kind is the inbound event's kind (message, action, command); 0 for
	// the bot's output.
	Kind      pipeline.Kind
	ChannelID string
	ThreadTS  string
	// TS is the message's own ts (post, upload, inbound message), the ts of
	// the message edited (update) or of the card clicked (action); "" for
	// ephemerals, statuses and commands.
	TS string
	// UserID is the author: the person for inbound entries, the bot's user
	// id for everything else.
	UserID string
	// To is the only person who sees an ephemeral.
	To string
	// Text is the message text, the upload's comment, the status line, or
	// a command's "/name args".
	Text string
	Card *pipeline.Card // a card posted or updated
	// Feedback is set on a post or edit that carries the feedback buttons.
	Feedback bool
	Action   *pipeline.Action // an inbound click
	Files    []SimFile        // an upload's file, an inbound message's attachments
}

// SimFile is a file in the transcript.
type SimFile struct {
	ID, Name, Title, MimeType, URL string
	Content                        []byte
}

// SimCard is the latest state of a message carrying a card.
type SimCard struct {
	TS, ChannelID, ThreadTS string
	Card                    pipeline.Card
	// Resolved is true once the card offers no action (len(Card.Actions) == 0).
	Resolved bool
}

// Offers reports whether the card is unresolved and has a button for action.
func (c SimCard) Offers(action string) bool {
	return !c.Resolved && slices.Contains(c.Card.Actions, action)
}

// Snapshot is the transcript at one moment.
type Snapshot struct {
	Messages []SimMessage
	Cards    []SimCard
	// Delivered counts the injected events Run has handed to deliver;
	// Queued those still waiting for it.
	Delivered, Queued int
	// Running is true while Run is running.
	Running bool
}

// Run delivers the injected events, in injection order, until ctx is done;
// events injected before Run are delivered when it starts. It returns nil
// when ctx is done (events still queued are never delivered), and an error
// when another Run is in progress or Run already returned once.
func (m *Memory) Run(ctx context.Context, deliver func(*pipeline.Event)) error {
	m.mu.Lock()
	m.init()
	switch {
	case m.running:
		m.mu.Unlock()
		return errors.New("memory transport: Run is already running")
	case m.closed:
		m.mu.Unlock()
		return ErrMemoryClosed
	}
	m.running = true
	m.notifyLocked()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.running, m.closed = false, true
		m.notifyLocked()
		m.mu.Unlock()
	}()
	for {
		m.mu.Lock()
		for len(m.queue) == 0 {
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil
			case <-m.wake:
			}
			m.mu.Lock()
		}
		if ctx.Err() != nil {
			m.mu.Unlock()
			return nil
		}
		ev := m.queue[0]
		m.queue[0] = nil
		m.queue = m.queue[1:]
		m.delivered++
		m.notifyLocked()
		m.mu.Unlock()
		deliver(ev)
	}
}

// Inject queues ev for Run and records it in the transcript. It does not
// wait for Run: events queue until Run starts. It fills, where empty, ID
// (a fresh id), Kind (message), Type, ChannelType (from the channel id),
// TeamID, Received, and for a message TS (the next ts; commands have none,
// as on the platform) and, in a thread, ParentUserID (the root's author).
// Run delivers a copy, so ev stays the caller's. After Run has returned it
// fails with ErrMemoryClosed.
func (m *Memory) Inject(ev *pipeline.Event) error {
	if ev == nil {
		return errors.New("memory transport: nil event")
	}
	m.mu.Lock()
	m.init()
	if m.closed {
		m.mu.Unlock()
		return ErrMemoryClosed
	}
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
		ev.ChannelType = ChannelType(ev.ChannelID)
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
	m.queue = append(m.queue, cp)
	select {
	case m.wake <- struct{}{}:
	default:
	}
	e := SimMessage{Op: SimInbound, Kind: ev.Kind, ChannelID: ev.ChannelID, ThreadTS: ev.ThreadTS, TS: ev.TS,
		UserID: ev.UserID, Text: ev.Text}
	if ev.Action != nil {
		a := *ev.Action
		e.Action = &a
	}
	for _, f := range ev.Files {
		sf := SimFile{ID: f.ID, Name: f.Name, MimeType: f.MimeType, URL: f.URL}
		if stored, ok := m.files[f.URL]; ok {
			sf.Content = stored.Content
		}
		e.Files = append(e.Files, sf)
	}
	m.commitAndUnlock(e)
	return nil
}

// rootAuthorLocked is who posted the message at ts in channel, as the
// platform tells in a thread message's parent_user_id: a person whose
// message was injected, or the bot; "" when the transcript lacks it.
func (m *Memory) rootAuthorLocked(channelID, ts string) string {
	for _, e := range m.log {
		if e.TS == ts && e.ChannelID == channelID && (e.Op == SimInbound || e.Op == SimPost || e.Op == SimUpload) {
			return e.UserID
		}
	}
	return ""
}

// Send injects a person's message: in the thread at threadTS, or starting
// a thread when it is empty. It returns the message's ts. A mention of the
// bot is part of text; it is delivered once, as a "message" event.
func (m *Memory) Send(userID, channelID, threadTS, text string, files ...pipeline.File) (string, error) {
	ev := &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", UserID: userID, ChannelID: channelID,
		ThreadTS: threadTS, Text: text, Files: files}
	if err := m.Inject(ev); err != nil {
		return "", err
	}
	return ev.TS, nil
}

// Click injects userID's click on the button actionID of the card at cardTS,
// whose value (the approval id) is value.
func (m *Memory) Click(userID, channelID, threadTS, cardTS, actionID, value string) error {
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
func (m *Memory) Command(userID, channelID, name, args string) error {
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
func (m *Memory) AddFile(name, mimeType string, content []byte) pipeline.File {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	f := m.addFileLocked(SimFile{Name: name, MimeType: mimeType, Content: content})
	return pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Size: int64(len(f.Content)), URL: f.URL}
}

func (m *Memory) addFileLocked(f SimFile) SimFile {
	f.ID = m.nextIDLocked("F0SIM")
	f.URL = "sim://files/" + f.ID + "/" + f.Name
	f.Content = slices.Clone(f.Content)
	m.files[f.URL] = f
	return f
}

// Post records m as a new message and returns its ts.
func (m *Memory) Post(ctx context.Context, msg pipeline.Message) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("chat.postMessage: %w", err)
	}
	if msg.ChannelID == "" {
		return "", errors.New("chat.postMessage: no channel")
	}
	m.mu.Lock()
	m.init()
	e := SimMessage{Op: SimPost, ChannelID: msg.ChannelID, ThreadTS: msg.ThreadTS, TS: m.nextTSLocked(),
		UserID: m.bot().UserID, Text: msg.Text, Card: cloneCard(msg.Card), Feedback: msg.Feedback}
	m.keepLocked(e)
	m.commitAndUnlock(e)
	return e.TS, nil
}

// Update replaces the text and card of the message at ts, as chat.update
// does: an update without a card removes the card. Like the platform it
// fails for a ts that is not a post of the bot in that channel.
func (m *Memory) Update(ctx context.Context, ts string, msg pipeline.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chat.update: %w", err)
	}
	if msg.ChannelID == "" || ts == "" {
		return errors.New("chat.update: no channel or ts")
	}
	m.mu.Lock()
	m.init()
	cur, ok := m.state[ts]
	if !ok || cur.ChannelID != msg.ChannelID || cur.Op == SimUpload {
		m.mu.Unlock()
		return errors.New("chat.update: message_not_found")
	}
	cur.Text, cur.Card = msg.Text, cloneCard(msg.Card)
	e := SimMessage{Op: SimUpdate, ChannelID: cur.ChannelID, ThreadTS: cur.ThreadTS, TS: ts,
		UserID: m.bot().UserID, Text: msg.Text, Card: cloneCard(msg.Card), Feedback: msg.Feedback}
	m.commitAndUnlock(e)
	return nil
}

// PostEphemeral records text shown to userID only.
func (m *Memory) PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("chat.postEphemeral: %w", err)
	}
	if channelID == "" || userID == "" {
		return errors.New("chat.postEphemeral: no channel or user")
	}
	m.mu.Lock()
	m.init()
	m.commitAndUnlock(SimMessage{Op: SimEphemeral, ChannelID: channelID, ThreadTS: threadTS,
		UserID: m.bot().UserID, To: userID, Text: text})
	return nil
}

// Upload records a file posted into its thread (a message with its own ts);
// the file can then be downloaded. It refuses what slackio.Chat refuses.
func (m *Memory) Upload(ctx context.Context, u pipeline.Upload) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("upload: %w", ctx.Err())
	case len(u.Content) == 0:
		return errors.New("upload: empty content (the platform refuses empty files)")
	case u.Filename == "":
		return errors.New("upload: no filename")
	case u.ChannelID == "":
		return errors.New("upload: no channel")
	}
	m.mu.Lock()
	m.init()
	f := m.addFileLocked(SimFile{Name: u.Filename, Title: u.Title, Content: u.Content})
	e := SimMessage{Op: SimUpload, ChannelID: u.ChannelID, ThreadTS: u.ThreadTS, TS: m.nextTSLocked(),
		UserID: m.bot().UserID, Text: u.Comment, Files: []SimFile{f}}
	m.keepLocked(e)
	m.commitAndUnlock(e)
	return nil
}

// SetStatus records the assistant thread's status line ("" clears it).
func (m *Memory) SetStatus(ctx context.Context, channelID, threadTS, status string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("assistant.threads.setStatus: %w", err)
	}
	m.mu.Lock()
	m.init()
	m.commitAndUnlock(SimMessage{Op: SimStatus, ChannelID: channelID, ThreadTS: threadTS,
		UserID: m.bot().UserID, Text: status})
	return nil
}

// Download returns a file added with AddFile or uploaded by the bot. A file
// over maxBytes fails with ErrFileTooLarge, as with slackio.Chat.
func (m *Memory) Download(ctx context.Context, url string, maxBytes int64) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := m.DownloadTo(ctx, url, &buf, maxBytes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DownloadTo writes a file added with AddFile or uploaded by the bot to w,
// as slackio.Chat.DownloadTo streams one, and returns the bytes written. A
// file over maxBytes fails with ErrFileTooLarge before anything is written.
func (m *Memory) DownloadTo(ctx context.Context, url string, w io.Writer, maxBytes int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("download: %w", err)
	}
	if maxBytes <= 0 {
		return 0, errors.New("download: the limit must be positive")
	}
	m.mu.Lock()
	f, ok := m.files[url]
	m.mu.Unlock()
	switch {
	case !ok:
		return 0, errors.New("download: file_not_found")
	case int64(len(f.Content)) > maxBytes:
		return 0, fmt.Errorf("download: %w (limit %d bytes)", ErrFileTooLarge, maxBytes)
	}
	// The stored content is never changed in place (addFileLocked keeps
	// a copy), so it is written without holding the lock.
	n, err := w.Write(f.Content)
	if err != nil {
		return int64(n), fmt.Errorf("download: %w", err)
	}
	return int64(n), nil
}

// AuthTest returns Bot, or MemoryBot when Bot is not set.
func (m *Memory) AuthTest(ctx context.Context) (pipeline.Identity, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.Identity{}, fmt.Errorf("auth.test: %w", err)
	}
	return m.bot(), nil
}

func (m *Memory) bot() pipeline.Identity {
	if m.Bot.UserID != "" {
		return m.Bot
	}
	return MemoryBot
}

// Messages returns the transcript: every entry, in order, updates included.
func (m *Memory) Messages() []SimMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.messagesLocked()
}

// Message returns the latest state of the post or upload at ts.
func (m *Memory) Message(ts string) (SimMessage, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.state[ts]
	if !ok {
		return SimMessage{}, false
	}
	return cloneMessage(*cur), true
}

// Cards returns the latest state of every message that carries a card, in
// the order they were posted.
func (m *Memory) Cards() []SimCard {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cardsLocked()
}

// Snapshot returns the transcript, the cards and the delivery counts at
// one moment.
func (m *Memory) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshotLocked()
}

// Changed returns a channel closed at the next change: a transcript entry,
// a delivery, Run's start or end. Take it before reading, so that no change is
// missed between the read and the wait.
func (m *Memory) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	return m.changed
}

// Wait returns nil as soon as cond holds on a snapshot, checking at once and
// after every change, or ctx's error when ctx is done first. cond runs
// without the Memory locked.
func (m *Memory) Wait(ctx context.Context, cond func(Snapshot) bool) error {
	for {
		m.mu.Lock()
		m.init()
		ch := m.changed
		snap := m.snapshotLocked()
		m.mu.Unlock()
		if cond(snap) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (m *Memory) init() {
	if m.changed == nil {
		m.changed = make(chan struct{})
		m.wake = make(chan struct{}, 1)
		m.state = make(map[string]*SimMessage)
		m.files = make(map[string]SimFile)
	}
}

// nextTSLocked returns the next ts: "1700000000.000100", "1700000000.000200", ...
func (m *Memory) nextTSLocked() string {
	m.clock++
	us := memoryEpoch + m.clock*100
	return fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000)
}

// nextIDLocked returns a fresh id: prefix and a number unique in m.
func (m *Memory) nextIDLocked(prefix string) string {
	m.ids++
	return fmt.Sprintf("%s%06d", prefix, m.ids)
}

// keepLocked starts tracking the latest state of a post or upload.
func (m *Memory) keepLocked(e SimMessage) {
	cur := cloneMessage(e)
	m.state[e.TS] = &cur
	m.order = append(m.order, e.TS)
}

func (m *Memory) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// commitAndUnlock appends e to the transcript, wakes the waiters, releases
// m.mu and shows the new entries to the Observer. m.mu must be held.
//
// One goroutine at a time feeds the Observer (the flusher), without any lock
// held, so entries reach it in transcript order and it may call back into m;
// an entry recorded meanwhile is shown by the running flusher.
func (m *Memory) commitAndUnlock(e SimMessage) {
	e.Seq = len(m.log) + 1
	m.log = append(m.log, e)
	m.notifyLocked()
	if m.Observer == nil {
		m.mu.Unlock()
		return
	}
	m.unseen = append(m.unseen, cloneMessage(e))
	if m.flushing {
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

func (m *Memory) messagesLocked() []SimMessage {
	out := make([]SimMessage, len(m.log))
	for i, e := range m.log {
		out[i] = cloneMessage(e)
	}
	return out
}

func (m *Memory) cardsLocked() []SimCard {
	var out []SimCard
	for _, ts := range m.order {
		cur := m.state[ts]
		if cur.Card == nil {
			continue
		}
		c := *cloneCard(cur.Card)
		out = append(out, SimCard{TS: ts, ChannelID: cur.ChannelID, ThreadTS: cur.ThreadTS, Card: c,
			Resolved: len(c.Actions) == 0})
	}
	return out
}

func (m *Memory) snapshotLocked() Snapshot {
	return Snapshot{Messages: m.messagesLocked(), Cards: m.cardsLocked(), Delivered: m.delivered, Queued: len(m.queue),
		Running: m.running}
}

func cloneCard(c *pipeline.Card) *pipeline.Card {
	if c == nil {
		return nil
	}
	cp := *c
	cp.Actions = slices.Clone(c.Actions)
	return &cp
}

func cloneMessage(e SimMessage) SimMessage {
	e.Card = cloneCard(e.Card)
	if e.Action != nil {
		a := *e.Action
		e.Action = &a
	}
	e.Files = slices.Clone(e.Files)
	for i := range e.Files {
		e.Files[i].Content = slices.Clone(e.Files[i].Content)
	}
	return e
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
	if ev.Reply != nil {
		r := *ev.Reply
		cp.Reply = &r
	}
	return &cp
}
