package pipeline

import (
	"strings"
	"unicode"
)

// ParseCommand reads the thread command a message's text holds: its words,
// after the mentions of the bot (StripMention), start with "/name". The
// name comes back in lower case with its slash ("/abort"), Args is the
// rest, trimmed. The gateway queues /abort apart with it and the commands
// run what it finds, so that both read every message alike.
//
// ok is false for any other text. A "/name" the caller does not know is
// still returned: "/etc/hosts is broken" is for the caller to tell apart.
func ParseCommand(text, botUserID string) (c Command, ok bool) {
	text = StripMention(text, botUserID)
	if !strings.HasPrefix(text, "/") {
		return Command{}, false
	}
	name, args := text, ""
	if i := strings.IndexFunc(text, unicode.IsSpace); i >= 0 {
		name, args = text[:i], text[i:]
	}
	return Command{Name: strings.ToLower(name), Args: strings.TrimSpace(args)}, true
}
