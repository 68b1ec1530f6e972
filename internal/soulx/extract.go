package soulx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/pkg/persona"
)

// Version identifies the prompt and the answer schema. An extracted persona
// depends on them and on the model as well as on the file: put Version and
// the model in the cache key of a persona that went through Extract.
const Version = "1"

// maxTokens bounds the answer. The answer copies the mandate and the values
// out of the file, a few hundred words in a typical SOUL.md; 2048 tokens are
// some 1,500 words. A longer answer is cut off and rejected, not paid for
// without bound.
const maxTokens = 2048

// ErrInvalidAnswer is matched (errors.Is) by every error about what the
// model answered: no JSON object, invalid JSON, an id that is malformed or
// not in the file, an implausible approver scope.
var ErrInvalidAnswer = errors.New("invalid model answer")

// Model sends one Messages API call; *llm.Client satisfies it. Its errors
// are returned wrapped, so llm.ErrUnavailable, llm.ErrAuth and
// llm.ErrInvalidRequest still match.
type Model interface {
	Send(ctx context.Context, params anthropic.MessageNewParams) (*anthropic.Message, error)
}

// Extract fills in, from the prose of src, the fields persona.Parse left
// empty in p, which Parse returned for src. It returns a prepared copy of p
// and one note per field filled, for the log.
//
// The model is asked only when a required field is missing or p has no
// access list at all (no trusted or allowed channel, no approver): how a
// persona written as prose looks. Optional fields alone (role, voice,
// values, blocked users, backup manager) are not worth a model call; they
// are asked for along with the others, though. Without a reason to ask, or
// when src holds no text outside HTML comments, Extract returns p itself,
// no notes and no error, and makes no call.
//
// model names the model; empty leaves the choice to m (*llm.Client uses
// its default). The error wraps m's error, or ErrInvalidAnswer when the
// answer cannot be used; p is never modified.
func Extract(ctx context.Context, m Model, model string, src []byte, p *persona.Persona) (*persona.Persona, []string, error) {
	text := readable(src)
	if !needsModel(p) || text == "" {
		return p, nil, nil
	}
	msg, err := m.Send(ctx, anthropic.MessageNewParams{
		Model:       anthropic.Model(model),
		MaxTokens:   maxTokens,
		Temperature: anthropic.Float(0), // the same file should give the same persona
		System:      []anthropic.TextBlockParam{{Text: fmt.Sprintf(systemPrompt, strings.Join(wanted(p), ", "))}},
		Messages:    []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("soul extraction: %w", err)
	}
	a, err := decode(msg)
	if err != nil {
		return nil, nil, fmt.Errorf("soul extraction: %w", err)
	}
	f, err := a.check(words(text))
	if err != nil {
		return nil, nil, fmt.Errorf("soul extraction: %w", err)
	}
	out, err := clone(p)
	if err != nil {
		return nil, nil, fmt.Errorf("soul extraction: %w", err)
	}
	notes := f.fill(out)
	if err := out.Prepare(); err != nil {
		return nil, nil, fmt.Errorf("soul extraction: %w", err)
	}
	return out, notes, nil
}

// needsModel reports whether a model call is worth making for p.
func needsModel(p *persona.Persona) bool {
	return len(p.Missing()) > 0 || len(p.Trusted) == 0 && len(p.Allowed) == 0 && len(p.Approvers) == 0
}

// wanted returns the answer keys of the fields p lacks, the ones the model
// is asked to fill.
func wanted(p *persona.Persona) []string {
	var w []string
	add := func(empty bool, key string) {
		if empty {
			w = append(w, key)
		}
	}
	add(unset(p.Identity.Name), "identity.name")
	add(unset(p.Identity.Role), "identity.role")
	add(unset(p.Identity.Voice), "identity.voice")
	add(!isUserID(p.Manager.UserID), "manager.userId")
	add(!isUserID(p.BackupManager.UserID), "backupManager.userId")
	add(unset(p.Mandate), "mandate")
	add(len(p.Trusted) == 0, "trustedChannels")
	add(len(p.Allowed) == 0, "allowedChannels")
	add(len(p.Approvers) == 0, "approvers")
	add(len(p.Blocked) == 0, "blocked")
	add(len(p.Values) == 0, "values")
	return w
}

// systemPrompt explains the task and the answer's schema; %s is the list of
// keys to fill.
const systemPrompt = `You extract settings from SOUL.md, the markdown file that defines a chat agent's persona, for a program that could not find some of them in the file's usual "## Section" and "- Key: value" form. The file is the user message.

Answer with one JSON object and nothing else. Its schema, every key optional:

{
  "identity": {"name": string, "role": string, "voice": string},
  "manager": {"userId": string},
  "backupManager": {"userId": string},
  "mandate": string,
  "trustedChannels": [{"id": string, "name": string}],
  "allowedChannels": [{"id": string, "name": string}],
  "approvers": [{"userId": string, "scopes": [string]}],
  "blocked": [string],
  "values": [string]
}

- identity: the agent's name, its role, and its voice (how it writes).
- manager, backupManager: the person the agent reports to, and that person's backup.
- mandate: what the agent owns and what it refuses, in the file's words.
- trustedChannels: channels where any member may use the agent. allowedChannels: public channels where anyone may use it and risky actions need an approval.
- approvers: people other than the managers who may approve the agent's actions, each with scopes: tool names (Bash, Write, Edit, Read, mcp__server__tool) or categories (skills); "anything" covers every category.
- blocked: user ids whose messages the agent ignores.
- values: the agent's operating principles, one per item.

Rules:
- Fill only these keys: %s. Leave out every other key.
- Take only what the file states. Leave out a key the file does not state; never guess.
- User ids begin with U or W, channel ids with C or G, followed by capital letters and digits (U024BE7LH, C0123456789). Copy each id exactly as the file writes it, without <@ > or <# >. Leave out a person or channel the file names without an id (a name, an @handle, a #channel). Never make up an id.
- REPLACE_ME is a placeholder, not a value.`

// decode reads the first JSON object of the model's text, which may be
// fenced in ```json or surrounded by prose.
func decode(msg *anthropic.Message) (*answer, error) {
	var b strings.Builder
	for _, c := range msg.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	s := b.String()
	start := strings.IndexByte(s, '{')
	if start < 0 {
		return nil, fmt.Errorf("%w: no JSON object in %q", ErrInvalidAnswer, excerpt(s))
	}
	var a answer
	// A Decoder reads one value and leaves the rest: a closing fence or
	// prose after the object does not matter.
	if err := json.NewDecoder(strings.NewReader(s[start:])).Decode(&a); err != nil {
		if msg.StopReason == anthropic.StopReasonMaxTokens {
			return nil, fmt.Errorf("%w: the answer was cut off at %d tokens", ErrInvalidAnswer, maxTokens)
		}
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrInvalidAnswer, err)
	}
	return &a, nil
}

// excerpt shortens a text quoted in an error.
func excerpt(s string) string {
	const n = 80
	if r := []rune(strings.TrimSpace(s)); len(r) > n {
		return string(r[:n]) + "…"
	}
	return strings.TrimSpace(s)
}

// clone returns a deep copy of p through its JSON form, the form the cache
// stores, so that nothing is shared with p.
func clone(p *persona.Persona) (*persona.Persona, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("copy persona: %w", err)
	}
	var out persona.Persona
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("copy persona: %w", err)
	}
	return &out, nil
}

// readable returns the text the parser reads: a leading BOM dropped, line
// ends normalised, HTML comments outside fenced code removed (an unclosed
// one runs to the end of the file, as for the parser). The model sees only
// this text and ids are checked against it, so an example id in a comment,
// as the scaffold has, cannot become a manager or an approver.
func readable(src []byte) string {
	s := strings.ToValidUTF8(string(src), "\uFFFD")
	s = strings.TrimPrefix(s, "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var (
		b         strings.Builder
		inComment bool
		fence     string // the opening fence marker while inside one
	)
	for _, line := range strings.Split(s, "\n") {
		if fence != "" {
			if strings.HasPrefix(strings.TrimSpace(line), fence) {
				fence = ""
			}
			b.WriteString(line + "\n")
			continue
		}
		if inComment || strings.Contains(line, "<!--") {
			line, inComment = stripComments(line, inComment)
			if strings.TrimSpace(line) == "" {
				continue
			}
		}
		switch t := strings.TrimSpace(line); {
		case strings.HasPrefix(t, "```"):
			fence = "```"
		case strings.HasPrefix(t, "~~~"):
			fence = "~~~"
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimSpace(b.String())
}

// stripComments removes the HTML comments of one line; open says whether
// the line starts inside one, and the result whether it ends inside one.
func stripComments(line string, open bool) (string, bool) {
	var b strings.Builder
	for {
		if open {
			end := strings.Index(line, "-->")
			if end < 0 {
				return b.String(), true
			}
			line, open = line[end+len("-->"):], false
			continue
		}
		start := strings.Index(line, "<!--")
		if start < 0 {
			b.WriteString(line)
			return b.String(), false
		}
		b.WriteString(line[:start])
		line, open = line[start+len("<!--"):], true
	}
}

// words returns the set of the text's words: maximal runs of ASCII letters
// and digits. An id "appears in the text" when it is one of them, so that
// U0AL does not pass for being part of U0ALICE.
func words(text string) map[string]bool {
	set := make(map[string]bool)
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isAlnum(r) }) {
		set[w] = true
	}
	return set
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// isUserID and isChannelID are the shapes persona's parser accepts (its
// refs.go; not exported): U or W, or C or G, then capital letters and
// digits, any length.
func isUserID(s string) bool {
	return len(s) >= 2 && (s[0] == 'U' || s[0] == 'W') && upperAlnum(s[1:])
}

func isChannelID(s string) bool {
	return len(s) >= 2 && (s[0] == 'C' || s[0] == 'G') && upperAlnum(s[1:])
}

func upperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// scopeRE is the parser's rule for an approver scope (not exported): the
// pattern the model provider requires of a tool name, so no other string
// can name a tool or category.
var scopeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`) })

// unset reports whether a text field counts as absent, as for
// persona.Missing: blank or still holding the placeholder.
func unset(s string) bool {
	return strings.TrimSpace(s) == "" || strings.Contains(s, persona.Placeholder)
}
