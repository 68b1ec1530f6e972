package pipeline

import (
	"strings"
	"time"
)

// Kind says what an Event is.
type Kind uint8

const (
	// KindMessage is a message a person (or a bot) posted: an app_mention or
	// a message event in a channel, a group or a DM.
	KindMessage Kind = iota + 1
	// KindAction is a click on a button of a card the bot posted.
	KindAction
	// KindCommand is a slash command.
	KindCommand
	// KindReply is outbound: text the agent posts or edits through its chat
	// tools, on its way from the agent stage through markup to delivery.
	KindReply
	// KindStop is a click on the platform's own stop button of a thread's
	// agent session (agent_session_stopped): it stops the thread's running
	// turn as a typed /abort does, with the same rule of who may.
	KindStop
	// KindHome is a person opening the persona's DM (app_home_opened on
	// its messages tab): the persona offers its suggested prompts.
	KindHome
	// KindSchedule is a scheduled run coming due: its creator's prompt,
	// run in its target thread with the creator's authority (Schedule).
	KindSchedule
)

// kinds is the one place a kind's properties are written down; a new kind
// (a scheduled run) is a line here and a route where it is handled (the
// agent stage's).
var kinds = [...]struct {
	name string
	// apart: the kind's events do not wait in their thread's queue. A
	// click or a slash command must not wait behind the thread's running
	// turn, which may itself be waiting for that very click.
	apart bool
}{
	KindMessage: {name: "message"},
	KindAction:  {name: "action", apart: true},
	KindCommand: {name: "command", apart: true},
	KindReply:   {name: "reply"},
	// A stop must not wait behind the very turn it stops.
	KindStop: {name: "stop", apart: true},
	// Opening a DM belongs to no thread's order.
	KindHome: {name: "home", apart: true},
	// A run answers in its thread and session, in their order.
	KindSchedule: {name: "schedule"},
}

func (k Kind) String() string {
	if int(k) < len(kinds) && kinds[k].name != "" {
		return kinds[k].name
	}
	return "unknown"
}

// Apart reports whether events of kind k run apart from their thread's
// queue, each on its own, instead of in arrival order behind the thread's
// running turn (clicks and slash commands). Who may do what is checked
// down the chain all the same: running apart grants nothing.
func (k Kind) Apart() bool {
	return int(k) < len(kinds) && kinds[k].apart
}

// Channel types as the chat platform names them.
const (
	ChannelIM      = "im"
	ChannelMPIM    = "mpim"
	ChannelPublic  = "channel"
	ChannelPrivate = "group"
)

// Event is one chat event in the platform-neutral form the pipeline works on.
// The gateway fills the inbound fields; stages read them and may rewrite Text
// (redaction). Outbound replies (KindReply) carry Reply.
type Event struct {
	// ID is the platform's event id (the deduplication key of a delivery);
	// empty for outbound events.
	ID   string
	Kind Kind
	// Type is the platform event type ("app_mention", "message", ...).
	Type string
	// Subtype is the message subtype ("", "bot_message", "message_changed", ...).
	Subtype string

	TeamID      string
	ChannelID   string
	ChannelType string // ChannelIM, ChannelMPIM, ChannelPublic, ChannelPrivate
	UserID      string
	BotID       string // set when a bot posted the message (the bot's own posts too)
	TS          string // the message's own timestamp
	ThreadTS    string // the root of the thread it belongs to; "" when top-level
	// ParentUserID is who posted the thread's root, as the platform says
	// in a thread message ("" at top level or when it does not say).
	ParentUserID string
	Text         string
	Files        []File

	// Retry is the platform's retry attempt for this delivery (0 = first).
	Retry int
	// Received is when the gateway read the event off the wire.
	Received time.Time
	// Resumed marks an event run again after a crash cut its first run
	// short: it is not a redelivery, and its message may already be in the
	// session's history.
	Resumed bool
	// Recorded marks an event whose inbox record its maker wrote (a
	// scheduled run's, in its claim's transaction): the gateway does not
	// record it again.
	Recorded bool `json:"-"`
	// Redelivery marks a copy of an event the inbox recorded before (the
	// platform's retry, or an envelope another replica got too): it is
	// dropped as a duplicate.
	Redelivery bool `json:"-"`
	// Marked is whether the inbox recorded the event's dedupe key
	// (DedupeKey) as it received the event, and Fresh whether it was the
	// first to: the drop stage then neither reads nor writes the key
	// itself.
	Marked, Fresh bool `json:"-"`
	// Unseen is set by the engage stage on a message that engages the bot
	// in a thread holding messages it has not seen: the ts of the first of
	// them (Engagements.Engage). The turn carries them before the message
	// (ThreadContext). A resumed event gets it again from the engage stage.
	Unseen string `json:"-"`
	// Peer is set by the drop stage on a message of a peer (## Peers)
	// that mentions the persona: the auth stage gives it RolePeer.
	Peer bool `json:"-"`
	// ActionToken is the platform's token for acting as the message's
	// sender on this message only (its real-time search). It is never
	// stored (a resumed event has none) nor logged.
	ActionToken string `json:"-"`

	Action   *Action   // KindAction only
	Command  *Command  // KindCommand only
	Reply    *Reply    // KindReply only
	Stop     *Stop     // KindStop only
	Schedule *Schedule // KindSchedule only
	// HomeTab marks a person opening the app's Home tab, or clicking in
	// it (Action set), as opposed to opening its DM (KindHome).
	HomeTab bool
}

// Schedule is the scheduled part of a KindSchedule event: the event's
// UserID is the schedule's creator, whose authority the run has; its Text
// is the schedule's prompt; its channel and thread are the run's target
// (for a channel target, the top-level post made for the run).
type Schedule struct {
	ID   string
	Name string
	// Due is the due time that runs.
	Due time.Time
	// Channel and ThreadTS are where the schedule was made: a creator who
	// may no longer schedule work is told there (to the manager).
	Channel, ThreadTS string
}

// File is a file attached to a message.
type File struct {
	ID       string
	Name     string
	MimeType string
	Size     int64
	URL      string // private download address; needs the bot token
}

// IsHTML reports whether the platform describes f as an HTML page (by its
// type or its name's extension): only then may its download answer HTML.
// A download that answers HTML for any other file is the platform's
// sign-in page, not the file.
func (f File) IsHTML() bool {
	mt, _, _ := strings.Cut(f.MimeType, ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "text/html", "application/xhtml+xml":
		return true
	}
	name := strings.ToLower(f.Name)
	return strings.HasSuffix(name, ".html") || strings.HasSuffix(name, ".htm") || strings.HasSuffix(name, ".xhtml")
}

// Action is a button click.
type Action struct {
	ActionID    string // "approve", "deny", "always"
	Value       string // the card's approval id
	MessageTS   string // the card's ts
	ResponseURL string
}

// Stop is a click on the stop button of a thread's agent session. The
// event's ChannelID and ThreadTS name the thread, UserID who clicked.
type Stop struct {
	// Streams are the ts of the bot's streamed messages the platform
	// stopped itself on the click (none when no stream ran).
	Streams []string
	// Stopped is set by the handling of the click when it stopped the
	// thread's running turn (which then ends on its own): for whoever
	// waits on that end (the simulator).
	Stopped bool `json:"-"`
}

// Command is a slash command, or a thread command typed in a message
// (ParseCommand fills Name and Args only).
type Command struct {
	Name        string // "/ingest"
	Args        string // the text after the command
	ResponseURL string
	TriggerID   string
}

// ReplyOp is what an outbound reply does.
type ReplyOp uint8

const (
	// ReplyPost posts a new message in the thread.
	ReplyPost ReplyOp = iota + 1
	// ReplyUpdate edits the message at Reply.TS.
	ReplyUpdate
	// ReplyStreamStart shows the first words of a reply being written;
	// after delivery Reply.TS is its message and Reply.Native tells
	// whether the platform's streaming API took it (or it was posted).
	ReplyStreamStart
	// ReplyStreamAppend shows more of it (Text: all so far; Delta: the
	// new markdown, for the streaming API).
	ReplyStreamAppend
	// ReplyStreamStop ends the platform's stream of Reply.TS.
	ReplyStreamStop
)

// Reply is the outbound part of a KindReply event.
type Reply struct {
	Op ReplyOp
	// TS is the message to edit (ReplyUpdate); after delivery of a ReplyPost
	// it holds the ts of the posted message (the first one if it was split).
	TS string
	// Markdown is true while Text is still the agent's markdown; the markup
	// stage converts it to the platform dialect and clears it.
	Markdown bool
	// For is the id of the inbound event this reply answers (Message.For).
	For string
	// Feedback asks for the feedback buttons (Message.Feedback).
	Feedback bool
	// Overflow, on an update, posts the parts of a long text that do not
	// fit the message after it.
	Overflow bool
	// Raw is the markdown of a stream op, kept by the markup stage;
	// Delta the markdown a ReplyStreamAppend adds.
	Raw, Delta string
	// Native is set when the platform's streaming API carries the stream.
	Native bool
	// RecipientUser and RecipientTeam are whom a stream is written for
	// (the platform's streaming API wants them).
	RecipientUser, RecipientTeam string
	// LastTS and LastText are, after delivery, the ts and the text (in
	// the platform's dialect) of the last message posted or edited: the
	// last part of a split post.
	LastTS, LastText string
	// Table is the reply's table shown natively (set by the markup
	// stage on a post or final edit; Message.Table); LastTable, after
	// delivery, the one the last message shows.
	Table, LastTable *Table
}

// RootTS is the ts of the thread's root message: ThreadTS, or TS for a
// message that starts a thread.
func (e *Event) RootTS() string {
	if e.ThreadTS != "" {
		return e.ThreadTS
	}
	return e.TS
}

// ThreadKey identifies the conversation an event belongs to: one chat thread
// is one agent session. It is "<channel>:<root ts>".
func (e *Event) ThreadKey() string {
	return ThreadKey(e.ChannelID, e.RootTS())
}

// ThreadKey builds the key of the thread rooted at rootTS in channel.
func ThreadKey(channel, rootTS string) string {
	return channel + ":" + rootTS
}

// IsDM reports whether the event happened in a direct message with the bot.
func (e *Event) IsDM() bool {
	return e.ChannelType == ChannelIM || (e.ChannelType == "" && strings.HasPrefix(e.ChannelID, "D"))
}
