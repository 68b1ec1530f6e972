package pipeline

import (
	"fmt"
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

// quotes pairs each opening quote with its closing one: straight quotes,
// and the curly ones chat clients put in place of them as people type.
var quotes = map[rune]rune{'"': '"', '\'': '\'', '“': '”', '”': '”', '‘': '’', '’': '’'}

// SplitArgs splits a command's Args into words: runs of non-space, or a
// quoted run (`"0 9 * * 1"`, `“post the digest”`) without its quotes, so
// that `/schedule "<when>" "<prompt>" [channel]` reads alike from every
// client. An opening quote without its closing one is an error naming it.
func SplitArgs(args string) ([]string, error) {
	var out []string
	rs := []rune(args)
	for i := 0; i < len(rs); {
		if unicode.IsSpace(rs[i]) {
			i++
			continue
		}
		if closing, ok := quotes[rs[i]]; ok {
			end := -1
			for j := i + 1; j < len(rs); j++ {
				if rs[j] == closing || closing == '"' && rs[j] == '”' || closing == '\'' && rs[j] == '’' {
					end = j
					break
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("unclosed quote %q", string(rs[i]))
			}
			out = append(out, string(rs[i+1:end]))
			i = end + 1
			continue
		}
		j := i
		for j < len(rs) && !unicode.IsSpace(rs[j]) {
			j++
		}
		out = append(out, string(rs[i:j]))
		i = j
	}
	return out, nil
}
