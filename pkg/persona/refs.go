package persona

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// isUserID reports whether s has the shape of a chat user id: "U" (or "W"
// for enterprise users) and one or more upper-case letters or digits. Real
// ids are longer (U024BE7LH), but short ones are common in tests and the
// simulator (U0MGR), so no length is required.
func isUserID(s string) bool {
	return len(s) >= 2 && (s[0] == 'U' || s[0] == 'W') && upperAlnum(s[1:])
}

// isChannelID reports whether s has the shape of a channel id: "C" (public)
// or "G" (private) and upper-case letters or digits.
func isChannelID(s string) bool {
	return len(s) >= 2 && (s[0] == 'C' || s[0] == 'G') && upperAlnum(s[1:])
}

func upperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// parseUserRef reads a user reference at the start of s: "<@U123>",
// "<@U123|name>", "@U123" or a bare "U123", optionally followed by other
// text. ok is false when there is no user id there.
func parseUserRef(s string) (id string, ok bool) {
	s = unemphasize(strings.TrimSpace(s))
	if rest, found := strings.CutPrefix(s, "<@"); found {
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			return "", false
		}
		id, _, _ = strings.Cut(rest[:end], "|")
		id = strings.TrimSpace(id)
		return id, isUserID(id)
	}
	f := strings.Fields(s)
	if len(f) == 0 {
		return "", false
	}
	id = strings.TrimPrefix(f[0], "@")
	return id, isUserID(id)
}

// unmark drops the markdown around a channel reference: channel names hold
// no '`' or '*'.
var unmark = strings.NewReplacer("`", "", "*", "")

// parseChannelRef reads a channel reference: "<#C123|name>", "<#C123>" or a
// bare "C123", optionally followed by a "; comment" or other text. problem
// says why there is no usable id ("#name" without one, an id that cannot be
// right).
func parseChannelRef(s string) (ref ChannelRef, problem string) {
	s, _, _ = strings.Cut(s, ";")
	s = strings.TrimSpace(unmark.Replace(s))
	var id string
	switch {
	case strings.HasPrefix(s, "<#"):
		end := strings.IndexByte(s, '>')
		if end < 0 {
			return ref, fmt.Sprintf("channel reference %q is not closed with >", s)
		}
		id, ref.Name, _ = strings.Cut(s[2:end], "|")
		id, ref.Name = strings.TrimSpace(id), strings.TrimSpace(ref.Name)
	case strings.HasPrefix(s, "#"):
		name := strings.TrimPrefix(strings.Fields(s)[0], "#")
		return ref, fmt.Sprintf("channel #%s has no id: write it as <#C…|%s>", name, name)
	case s == "":
		return ref, "empty channel entry"
	default:
		id = strings.Fields(s)[0]
	}
	if !isChannelID(id) {
		return ref, fmt.Sprintf("channel id %q cannot be right: channel ids begin with C or G", id)
	}
	ref.ID = id
	return ref, ""
}

// maxScopeLen is the longest tool name the model provider accepts
// (^[a-zA-Z0-9_-]{1,128}$), so no longer scope can name a tool.
const maxScopeLen = 128

// validScope reports whether s could be a tool name or category.
func validScope(s string) bool {
	if s == "" || len(s) > maxScopeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// knownScopes are categories whose spelling is known, so that "bash" can be
// flagged: scopes are compared exactly.
var knownScopes = []string{"Read", "Write", "Edit", "Grep", "Glob", "LS", "Bash", "skills", ScopeMode, ScopeBudget, ScopeModel}

// catchallTypos are scope words people use for the catch-all.
var catchallTypos = []string{"all", "any", "everything", "*"}

// parseApprover reads "<@U…>: scope, scope ; comment". warns are problems
// with the line; ok is false when it gives no usable approver.
func parseApprover(s string) (a Approver, warns []string, ok bool) {
	body, comment, _ := strings.Cut(s, ";")
	a.Comment = strings.TrimSpace(comment)
	body = strings.TrimSpace(body)
	var who, list string
	if strings.HasPrefix(body, "<@") {
		end := strings.IndexByte(body, '>')
		if end < 0 {
			return a, []string{fmt.Sprintf("approver %q: user reference is not closed with >: ignored", body)}, false
		}
		who, list = body[:end+1], strings.TrimSpace(body[end+1:])
		list = strings.TrimPrefix(list, ":")
	} else {
		who, list, _ = strings.Cut(body, ":")
	}
	id, okID := parseUserRef(who)
	if !okID {
		return a, []string{fmt.Sprintf("approver %q is not a user id (<@U…>): ignored", strings.TrimSpace(who))}, false
	}
	a.UserID = id
	if strings.TrimSpace(list) == "" {
		return a, []string{fmt.Sprintf("approver <@%s> has no scopes: ignored", id)}, false
	}
	seen := make(map[string]bool)
	for _, raw := range strings.Split(list, ",") {
		sc := unemphasize(strings.TrimSpace(raw))
		switch {
		case strings.EqualFold(sc, ScopeAnything):
			sc = ScopeAnything
		case sc == "":
			warns = append(warns, fmt.Sprintf("approver <@%s>: empty scope in %q", id, strings.TrimSpace(list)))
			continue
		case sc == "*":
			warns = append(warns, fmt.Sprintf("approver <@%s>: scope \"*\" cannot be right: the catch-all is %q", id, ScopeAnything))
			continue
		case sc == CategoryMemory:
			warns = append(warns, fmt.Sprintf("approver <@%s>: scope %q gives nothing: only the manager and the backup manager decide persona-wide memories", id, sc))
			continue
		case !validScope(sc):
			warns = append(warns, fmt.Sprintf("approver <@%s>: scope %q cannot be right: a scope is a tool name or category (letters, digits, _ and -)", id, sc))
			continue
		}
		for _, k := range knownScopes {
			if sc != k && strings.EqualFold(sc, k) {
				warns = append(warns, fmt.Sprintf("approver <@%s>: scope %q matches no tool (scopes are case-sensitive): did you mean %q?", id, sc, k))
			}
		}
		for _, k := range catchallTypos {
			if strings.EqualFold(sc, k) {
				warns = append(warns, fmt.Sprintf("approver <@%s>: scope %q is not the catch-all: write %q", id, sc, ScopeAnything))
			}
		}
		if !seen[sc] {
			seen[sc] = true
			a.Scopes = append(a.Scopes, sc)
		}
	}
	if len(a.Scopes) == 0 {
		return a, append(warns, fmt.Sprintf("approver <@%s> has no usable scopes: ignored", id)), false
	}
	return a, warns, true
}

// splitRedaction splits "<regular expression> ; <description>". A regular
// expression may itself contain ';', so the separator is the last ';' that
// has white space (or the start or end of the line) on both sides; a line
// without one is all pattern. A pattern may also be quoted in backticks,
// "`a ; b` ; description", and then the separator is the first ';' after
// the closing backtick.
func splitRedaction(s string) (pattern, description string) {
	s = strings.TrimSpace(s)
	if len(s) > 1 && s[0] == '`' {
		for j := 1; j < len(s); j++ {
			if s[j] != '`' {
				continue
			}
			rest := strings.TrimSpace(s[j+1:])
			if rest == "" {
				return s[1:j], ""
			}
			if rest[0] == ';' && (len(rest) == 1 || isBlank(rest[1])) {
				return s[1:j], strings.TrimSpace(rest[1:])
			}
		}
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != ';' || (i > 0 && !isBlank(s[i-1])) || (i+1 < len(s) && !isBlank(s[i+1])) {
			continue
		}
		return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:])
	}
	return s, ""
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// compileRedaction compiles an operator pattern, refusing one that does not
// compile or that matches empty text (it would mark every position of every
// message). The error names file and line.
func compileRedaction(file string, line int, pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, &ParseError{File: file, Line: line, Msg: "empty redaction regex"}
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = string(se.Code)
			if se.Expr != "" && se.Expr != pattern {
				msg += fmt.Sprintf(" at %q", se.Expr)
			}
		}
		return nil, &ParseError{File: file, Line: line, Msg: fmt.Sprintf("invalid redaction regex %q: %s", pattern, msg), Err: err}
	}
	if re.MatchString("") {
		return nil, &ParseError{File: file, Line: line, Msg: fmt.Sprintf("redaction regex %q matches empty text", pattern)}
	}
	return re, nil
}
