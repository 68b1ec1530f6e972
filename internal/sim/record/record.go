package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Store is what a recording reads (*store.Store, either backend).
type Store interface {
	SessionByThread(ctx context.Context, key string) (store.Session, error)
	History(ctx context.Context, sessionID string) ([]store.Message, error)
	ApprovalsSince(ctx context.Context, since time.Time) ([]store.Approval, error)
}

// Redactor removes the secrets the service knows (*redact.Redactor).
type Redactor interface {
	Redact(text string) string
}

// Thread names the thread to record.
type Thread struct {
	Channel, ThreadTS string
}

// replyTool is the tool whose calls post the persona's replies.
const replyTool = "mcp__agent_chat__reply"

// ErrNoThread is the error of a thread the store holds no session of.
var ErrNoThread = errors.New("no stored session for this thread")

// turn is one person's message of the thread and what followed it.
type turn struct {
	user, words string
	at          time.Time
	answers     []scripted.Answer
	cards       []store.Approval
}

// Record reads the thread th from st and returns its scenario file. p is
// the persona the thread ran under: its people's roles (manager, backup,
// approvers, blocked) become the scenario's soul, and its layer of the
// thread's channel the scenario's layer. Notes are what the recording
// could not carry (said in the file's head too).
func Record(ctx context.Context, st Store, p *persona.Persona, red Redactor, th Thread) (file []byte, notes []string, err error) {
	key := pipeline.ThreadKey(th.Channel, th.ThreadTS)
	sess, err := st.SessionByThread(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, fmt.Errorf("%s %s: %w", th.Channel, th.ThreadTS, ErrNoThread)
	}
	if err != nil {
		return nil, nil, err
	}
	msgs, err := st.History(ctx, sess.ID)
	if err != nil {
		return nil, nil, err
	}
	if sess.Summary != "" {
		notes = append(notes, "the thread was compacted: only the turns after its summary are recorded")
	}
	turns, skipped := turnsOf(msgs)
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d turn(s) not started by a person (scheduled runs, other apps) are left out", skipped))
	}
	if len(turns) == 0 {
		return nil, nil, fmt.Errorf("%s %s: the stored thread holds no person's message", th.Channel, th.ThreadTS)
	}
	cards, err := st.ApprovalsSince(ctx, sess.CreatedAt)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range cards {
		if c.ThreadKey != key {
			continue
		}
		if c.Tool != "" || c.Category == persona.ScopeBudget {
			notes = append(notes, fmt.Sprintf("the %s card of %s is left out: the simulator's mode and budgets do not ask it", c.Category, c.RequestedAt.UTC().Format(time.RFC3339)))
			continue
		}
		i := len(turns) - 1
		for i > 0 && c.RequestedAt.Before(turns[i].at) {
			i--
		}
		turns[i].cards = append(turns[i].cards, c)
	}
	out, err := scenario(p, red, th, turns, notes)
	if err != nil {
		return nil, nil, err
	}
	// What is written must be a scenario the simulator runs.
	if _, err := sim.ParseScenario("recorded.yaml", out); err != nil {
		return nil, nil, fmt.Errorf("the recorded scenario does not parse (a bug): %w", err)
	}
	return out, notes, nil
}

// block is a content block of a stored message, the fields a recording
// reads.
type block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// turnsOf cuts the history into the turns people started: a user message
// carrying an envelope begins one, the assistant messages after it are its
// answers. A turn begun by a schedule, a bot or a peer is skipped with its
// answers, and counted.
func turnsOf(msgs []store.Message) (turns []turn, skipped int) {
	var cur *turn
	for _, m := range msgs {
		var blocks []block
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		switch m.Role {
		case store.RoleUser:
			var env *turn
			for _, b := range blocks {
				if b.Type != "text" {
					continue
				}
				if user, role, words, ok := pipeline.ParseEnvelope(b.Text); ok {
					if role == pipeline.EnvelopeScheduled || role == pipeline.EnvelopeBot || role == "peer" {
						env = &turn{} // not a person's: skipped below
						continue
					}
					env = &turn{user: strings.TrimSuffix(strings.TrimPrefix(user, "<@"), ">"), words: words, at: m.CreatedAt}
				}
			}
			if env == nil {
				continue // tool results
			}
			if env.user == "" {
				skipped++
				cur = nil
				continue
			}
			turns = append(turns, *env)
			cur = &turns[len(turns)-1]
		case store.RoleAssistant:
			if cur == nil {
				continue
			}
			var a scripted.Answer
			for _, b := range blocks {
				switch b.Type {
				case "text":
					a.Text += b.Text
				case "tool_use":
					a.Tools = append(a.Tools, scripted.ToolCall{Name: b.Name, Input: b.Input})
				}
			}
			cur.answers = append(cur.answers, a)
		}
	}
	return turns, skipped
}
