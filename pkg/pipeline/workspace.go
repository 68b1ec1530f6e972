package pipeline

import "time"

// What the agent reads back from the workspace, in platform-neutral form:
// the platform's Web API client and the simulator's platform fill these,
// the agent_chat read tools render them for the model.

// PostedMessage is a message read back from a conversation: a thread's
// reply or a channel's top-level message, the bot's own posts included.
type PostedMessage struct {
	TS       string
	ThreadTS string // the thread's root; "" (or TS) at top level
	UserID   string // the author; "" for some bots' posts
	BotID    string // set when a bot posted it (the bot's own posts too)
	Subtype  string // "", "bot_message", "file_share", "channel_join", ...
	Text     string // as the platform keeps it (its markup, entities escaped)
	Files    []File // names, types and sizes; URL left empty
	// Replies is how many replies a thread root has (channel history).
	Replies int
}

// MessagePage is one page of a conversation's messages, in the
// platform's order (a thread oldest first, a channel newest first). Next
// is the platform's cursor of the page after it, "" when there is none.
type MessagePage struct {
	Messages []PostedMessage
	Next     string
}

// Profile is the public part of a person's profile: what anyone in the
// workspace sees of them. It carries no email and no phone.
type Profile struct {
	UserID      string
	Name        string // the handle
	RealName    string
	DisplayName string
	Title       string
	TimeZone    string // IANA name ("Europe/Paris")
	TZLabel     string // "Central European Summer Time"
	IsBot       bool
	Deleted     bool
}

// ConversationInfo describes a conversation: a channel, a private
// channel, a DM or a group DM.
type ConversationInfo struct {
	ID         string
	Name       string // "" for a DM
	IsIM       bool
	IsMPIM     bool
	IsPrivate  bool
	IsArchived bool
	Topic      string
	Purpose    string
	Members    int       // 0 when the platform did not say
	Created    time.Time // zero when unknown
	Creator    string
	// User is the other person of a DM.
	User string
}

// SearchHit is one message the platform's real-time search found, as the
// person asking sees the workspace.
type SearchHit struct {
	ChannelID   string
	ChannelName string
	TS          string
	AuthorID    string
	AuthorName  string
	IsBot       bool
	Text        string
	Permalink   string
}
