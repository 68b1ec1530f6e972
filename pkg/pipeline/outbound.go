package pipeline

import "errors"

// Outbound messages in platform-neutral form. The gateway renders them to the
// platform's wire format (Block Kit for cards); the simulator keeps them as
// they are.

// Message is something the bot posts or edits.
type Message struct {
	ChannelID string
	ThreadTS  string // the thread's root; "" posts at top level
	Text      string // in the platform's markup dialect (already converted)
	Card      *Card  // optional interactive card
	// Feedback adds the good/bad feedback buttons under the text (the
	// final reply of a turn).
	Feedback bool
	// Table, when set, shows the message as its text around a native
	// table; Text stays the whole message (the table as text), for
	// notifications and clients without tables.
	Table *Table
	// RecipientUser and RecipientTeam are whom a streamed message is
	// written for (StreamPoster.StartStream).
	RecipientUser, RecipientTeam string
	// For is the id of the inbound event this post answers ("" for none).
	// The platform keeps it with the message (as message metadata), so
	// that after a crash the runtime can tell whether the answer landed.
	For string
}

// Card actions (the action_id of each button).
const (
	// ActionFeedback is the action_id of the feedback buttons of a final
	// reply; the click's value is FeedbackGood or FeedbackBad.
	ActionFeedback = "feedback"
	ActionApprove  = "approve"
	ActionDeny     = "deny"
	ActionAlways   = "always"
)

// The values of the feedback buttons.
const (
	FeedbackGood = "good"
	FeedbackBad  = "bad"
)

// Card is an interactive card the bot posts in a thread.
type Card struct {
	Kind     string // "approval"
	ID       string // the approval's id: the value of every button
	Category string // the approval category ("Bash", "skills", ...)
	Summary  string // what is asked, already redacted
	Details  string // optional longer text, already redacted
	Digest   string // short digest of the exact call the card releases
	// Actions are the buttons offered, in order (ActionApprove, ActionDeny,
	// ActionAlways). An empty list means the card is resolved.
	Actions []string
	// Outcome is set once decided: "approved by <@U…>", "timed out", ...
	Outcome string
	// ActsAs, when its Server is set, says above the summary whose own
	// account the call acts with.
	ActsAs ActsAs
}

// Body is what the card says above its details, as a person reads it: the
// ActsAs line, when there is one, then the summary.
func (c *Card) Body() string {
	if c.ActsAs.Server == "" {
		return c.Summary
	}
	line := c.ActsAs.Sentence(func(s string) string { return s })
	if c.Summary == "" {
		return line
	}
	return line + "\n" + c.Summary
}

// ActsAs names the person whose own account a tool server's tool acts
// with ("auth": "oauth"): the card of such a call says so, the person as
// a mention, on a line of its own, outside the summary (which is escaped
// whole, so that a summary cannot imitate the line).
type ActsAs struct {
	User   string // the person's user id: the turn's sender
	Server string // the tool server, as mcp.json names it
}

// Sentence is the card's line, "This acts with <@U…>'s own <server>
// account.", in the platform's markup: escape escapes the server's name
// (and a user id that is not one: letters and digits only).
func (a ActsAs) Sentence(escape func(string) string) string {
	who := "<@" + a.User + ">"
	if !isUserID(a.User) {
		who = escape(who)
	}
	return "This acts with " + who + "'s own " + escape(a.Server) + " account."
}

// isUserID reports whether s is shaped like a platform user id: upper-case
// letters and digits, nothing that could close a mention.
func isUserID(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Upload is a file the bot uploads into a thread.
type Upload struct {
	ChannelID string
	ThreadTS  string
	Filename  string
	Title     string
	Comment   string // initial comment, in the platform dialect
	Content   []byte
}

// Check refuses what the platform refuses to upload: an empty file, a
// file with no name, a file for no channel.
func (u Upload) Check() error {
	switch {
	case len(u.Content) == 0:
		return errors.New("upload: empty content (the platform refuses empty files)")
	case u.Filename == "":
		return errors.New("upload: no filename")
	case u.ChannelID == "":
		return errors.New("upload: no channel")
	}
	return nil
}

// Identity is who the bot is on the platform (from auth.test).
type Identity struct {
	UserID string // the bot user's id, as mentions name it (<@U…>)
	BotID  string // the bot id that the bot's own posts carry
	TeamID string
}
