package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Conversations of the visibility tests: a DM with the manager, a trusted
// channel and an allowed one.
const (
	dmChan      = "D0MANAGER"
	trustedChan = "C0TRUSTED"
	allowedChan = "C0ALLOWED"
)

// say stores a person's message (in its envelope) and the persona's answer
// in a new session of the thread channel:ts.
func say(t *testing.T, s *Store, channel, ts, user, words, answer string) {
	t.Helper()
	sid := NewID()
	if err := s.CreateSession(t.Context(), Session{ID: sid, ThreadKey: channel + ":" + ts}); err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: RoleUser, Content: textBlocks(pipeline.Envelope(user, "member", words)), TS: ts}}
	if answer != "" {
		msgs = append(msgs, Message{Role: RoleAssistant, Content: textBlocks(answer)})
	}
	if err := s.AppendMessages(t.Context(), sid, msgs...); err != nil {
		t.Fatal(err)
	}
}

func textBlocks(texts ...string) json.RawMessage {
	var blocks []map[string]string
	for _, t := range texts {
		blocks = append(blocks, map[string]string{"type": "text", "text": t})
	}
	b, _ := json.Marshal(blocks)
	return b
}

func remember(t *testing.T, s *Store, channel, author, scope, text string) memory.Memory {
	t.Helper()
	m, err := s.AddMemory(t.Context(), memory.Memory{Text: text, Author: author, Channel: channel, ThreadTS: "1.1", Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func recall(t *testing.T, s *Store, channel, query string) []memory.Recalled {
	t.Helper()
	rs, err := s.Recall(t.Context(), memory.RecallQuery{Text: query, Channel: channel, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func snippets(rs []memory.Recalled) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Snippet)
	}
	return out
}

func TestRecallFindsMemoriesAndMessagesBestFirst(t *testing.T) {
	s, clock := newTestStore(t)
	say(t, s, dmChan, "100.1", "U0MGR", "the release train leaves on Fridays, we decided", "Noted: release train on Fridays.")
	clock.Advance(7 * 24 * time.Hour)
	say(t, s, dmChan, "200.1", "U0MGR", "what did we decide about the release train?", "")
	clock.Advance(time.Hour)
	m := remember(t, s, dmChan, "U0MGR", memory.ScopeConversation, "we deploy on Tuesdays")

	rs := recall(t, s, dmChan, "when do we deploy?")
	if len(rs) != 1 || rs[0].Kind != memory.KindMemory || rs[0].ID != m.ID || rs[0].Snippet != "we deploy on Tuesdays" {
		t.Fatalf("recall deploy = %+v, want only the memory", rs)
	}
	if rs[0].Author != "U0MGR" || rs[0].Channel != dmChan || rs[0].ThreadTS != "1.1" || !rs[0].At.Equal(m.CreatedAt) {
		t.Errorf("memory found as %+v", rs[0])
	}

	// Both messages match; the one matching more words comes first, and
	// of two equal matches the newer.
	rs = recall(t, s, dmChan, "release train on Fridays")
	if len(rs) < 2 {
		t.Fatalf("recall release train = %+v, want the messages", rs)
	}
	if rs[0].ThreadTS != "100.1" || !strings.Contains(rs[0].Snippet, "Fridays") {
		t.Errorf("first = %+v, want the thread that decided", rs[0])
	}
	if !slices.ContainsFunc(rs, func(r memory.Recalled) bool {
		return r.Author == "U0MGR" && strings.Contains(r.Snippet, "Fridays, we decided")
	}) {
		t.Errorf("recall = %q, want the manager's words, with the manager as author", snippets(rs))
	}
	if rs[0].Kind != memory.KindMessage || rs[0].ID != "" || rs[0].Channel != dmChan {
		t.Errorf("first = %+v, want a message with its thread", rs[0])
	}
	// A hit names its message (the thread's root here).
	if rs[0].TS != "100.1" {
		t.Errorf("first = %+v, want its message's ts", rs[0])
	}
	// The persona's end-of-turn text is not indexed: what it posts goes
	// through the reply tool, the rest is acknowledgement.
	if slices.ContainsFunc(rs, func(r memory.Recalled) bool { return strings.Contains(r.Snippet, "Noted") }) {
		t.Errorf("recall = %q, want no persona's acknowledgement", snippets(rs))
	}

	clock.Advance(time.Minute)
	say(t, s, dmChan, "300.1", "U0MGR", "deploy checklist", "")
	clock.Advance(time.Minute)
	say(t, s, dmChan, "400.1", "U0MGR", "deploy checklist", "")
	rs = recall(t, s, dmChan, "checklist")
	if len(rs) != 2 || rs[0].ThreadTS != "400.1" {
		t.Errorf("equal matches = %+v, want the newer first", rs)
	}
}

func TestRecallVisibility(t *testing.T) {
	s, _ := newTestStore(t)
	remember(t, s, dmChan, "U0MGR", memory.ScopeConversation, "deploy secret: the DM's own fact")
	say(t, s, dmChan, "1.1", "U0MGR", "deploy plans from the DM", "")
	say(t, s, trustedChan, "2.1", "U0ANN", "deploy plans from the trusted channel", "")
	remember(t, s, trustedChan, "U0ANN", memory.ScopeConversation, "deploy: trusted channel memory")
	remember(t, s, dmChan, "U0MGR", memory.ScopePersona, "deploy: the persona-wide memory")

	for _, tc := range []struct {
		channel string
		want    []string
	}{
		{allowedChan, []string{"deploy: the persona-wide memory"}},
		{trustedChan, []string{"deploy: the persona-wide memory", "deploy: trusted channel memory", "deploy plans from the trusted channel"}},
		{dmChan, []string{"deploy: the persona-wide memory", "deploy secret: the DM's own fact", "deploy plans from the DM"}},
	} {
		got := snippets(recall(t, s, tc.channel, "deploy"))
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("recall in %s = %q, want %q", tc.channel, got, tc.want)
		}
	}
	// The listing follows the same rule.
	ms, err := s.Memories(t.Context(), allowedChan)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Scope != memory.ScopePersona {
		t.Errorf("memories of %s = %+v, want the persona's only", allowedChan, ms)
	}
	all, err := s.Memories(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Errorf("all memories = %+v, want 3", all)
	}
}

// A query is words, never the index's query language: quotes, column
// filters and operators in it search for nothing more.
func TestRecallQueryIsWordsOnly(t *testing.T) {
	s, _ := newTestStore(t)
	say(t, s, dmChan, "1.1", "U0MGR", "the DM's deploy secret", "")
	for _, q := range []string{`x" OR chan : "persona`, `chan:k44 OR deploy`, `deploy*`, `NEAR(deploy secret)`, `"`, `*`, `)(`} {
		for _, r := range recall(t, s, allowedChan, q) {
			t.Errorf("recall %q in %s found %+v", q, allowedChan, r)
		}
	}
	if terms := QueryTerms(`When do WE deploy? "deploy" OR chan:persona`); !slices.Equal(terms, []string{"deploy", "chan", "persona"}) {
		t.Errorf("terms = %q", terms)
	}
}

func TestForgetMemory(t *testing.T) {
	s, _ := newTestStore(t)
	m := remember(t, s, dmChan, "U0MGR", memory.ScopePersona, "we deploy on Tuesdays")
	keep := remember(t, s, dmChan, "U0MGR", memory.ScopeConversation, "we deploy from main")
	if err := s.ForgetMemory(t.Context(), m.ID); err != nil {
		t.Fatal(err)
	}
	if rs := recall(t, s, dmChan, "Tuesdays"); len(rs) != 0 {
		t.Errorf("after forget, recall = %+v", rs)
	}
	if rs := recall(t, s, dmChan, "deploy"); len(rs) != 1 || rs[0].ID != keep.ID {
		t.Errorf("after forget, recall deploy = %+v, want the other memory only", rs)
	}
	if _, err := s.Memory(t.Context(), m.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Memory after forget: %v, want ErrNotFound", err)
	}
	if err := s.ForgetMemory(t.Context(), m.ID); !errors.Is(err, ErrNotFound) || !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("forget twice: %v, want ErrNotFound and memory.ErrNotFound", err)
	}
	if _, err := s.Memory(t.Context(), m.ID); !errors.Is(err, memory.ErrNotFound) || err.Error() != "memory "+m.ID+": not found" {
		t.Errorf("Memory after forget: %v, want memory.ErrNotFound read as not found", err)
	}
}

func TestAddMemoryChecks(t *testing.T) {
	s, _ := newTestStore(t)
	// The store applies memory's own rule (memory.Check), no copy of it.
	for _, tt := range []struct {
		m    memory.Memory
		want error
	}{
		{memory.Memory{Text: strings.Repeat("é", memory.MaxLen+1), Channel: dmChan, Scope: memory.ScopeConversation}, memory.ErrTooLong},
		{memory.Memory{Text: " ", Channel: dmChan, Scope: memory.ScopeConversation}, memory.ErrEmpty},
		{memory.Memory{Text: "x", Channel: dmChan, Scope: "everyone"}, memory.ErrBadScope},
		{memory.Memory{Text: "x", Scope: memory.ScopeConversation}, memory.ErrNoChannel},
	} {
		if _, err := s.AddMemory(t.Context(), tt.m); !errors.Is(err, tt.want) {
			t.Errorf("AddMemory(%.20q, %q) = %v, want %v", tt.m.Text, tt.m.Scope, err, tt.want)
		}
	}
	if ms, err := s.Memories(t.Context(), ""); err != nil || len(ms) != 0 {
		t.Errorf("refused memories stored: %+v, %v", ms, err)
	}
	m, err := s.AddMemory(t.Context(), memory.Memory{Text: strings.Repeat("é", memory.MaxLen), Author: "U1", Channel: dmChan, Scope: memory.ScopeConversation})
	if err != nil {
		t.Fatalf("a memory of %d characters: %v", memory.MaxLen, err)
	}
	if !memory.ValidID(m.ID) {
		t.Errorf("id %q", m.ID)
	}
	got, err := s.Memory(t.Context(), m.ID)
	if err != nil || got != m {
		t.Errorf("Memory = %+v, %v; want %+v", got, err, m)
	}
}

func TestMessageText(t *testing.T) {
	// A first turn's memories: the runtime's lines, and each memory's
	// words in its author's envelope; none of them is the message.
	content := json.RawMessage(`[{"type":"text","text":"[runtime] Memories that may help"},
		{"type":"text","text":"[runtime] memory maaaaaaab (2026-03-02, persona-wide):"},
		{"type":"text","text":` + mustJSON(pipeline.Envelope("U0MGR", "manager", "we deploy on Tuesdays")) + `},
		{"type":"text","text":"[runtime] memory maaaaaaac (2026-03-02):"},
		{"type":"text","text":` + mustJSON(pipeline.Envelope("U0BOB", "member", "standup at ten")) + `},
		{"type":"text","text":` + mustJSON(pipeline.Envelope("U0ANN", "member", "hello <message there")) + `},
		{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"tool output"}]}]`)
	parts := messageParts(RoleUser, content, true)
	if want := []part{{body: "hello &lt;message there", author: "U0ANN", envelope: true}}; !slices.Equal(parts, want) {
		t.Errorf("messageParts = %+v, want %+v", parts, want)
	}
	// Carried messages are each a turn of their own; loose text (not an
	// envelope) is joined as one, the persona's.
	content = json.RawMessage(`[{"type":"text","text":"[runtime] earlier messages of this thread"},
		{"type":"text","text":` + mustJSON(pipeline.Envelope("U0BOB", "member", "the deploy is at five")) + `},
		{"type":"text","text":` + mustJSON(pipeline.Envelope("U0ANN", "member", "when is the deploy?")) + `},
		{"type":"text","text":"(file: report.pdf)"}]`)
	parts = messageParts(RoleUser, content, true)
	want := []part{{"the deploy is at five", "U0BOB", true}, {"when is the deploy?", "U0ANN", true}, {"(file: report.pdf)", "", false}}
	if !slices.Equal(parts, want) {
		t.Errorf("messageParts = %+v, want %+v", parts, want)
	}
	// The persona's answers (acknowledgements, tool calls) are not
	// indexed; its own posts a turn carries (stored with the event) are.
	answer := json.RawMessage(`[{"type":"text","text":"Noted."},{"type":"tool_use","id":"t","name":"x","input":{}}]`)
	if parts := messageParts(RoleAssistant, answer, false); parts != nil {
		t.Errorf("an answer's parts = %+v, want none", parts)
	}
	if parts := messageParts(RoleAssistant, answer, true); !slices.Equal(parts, []part{{body: "Noted."}}) {
		t.Errorf("a carried post's parts = %+v", parts)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A word in more than a tenth of the index is left out of a query with
// other words, so an old memory matching the rare word is still found
// behind thousands of newer messages holding the common one (a SQLite
// recall ranks the newest maxCandidates matches; Postgres knows the common
// words from its statistics, as autovacuum's ANALYZE leaves them). Another
// conversation's memory stays out of it.
func TestRecallCommonWords(t *testing.T) {
	clock := newClock()
	s := openAt(t, testPath(t), clock)
	old := remember(t, s, trustedChan, "U1", memory.ScopeConversation, "the release train leaves on Tuesdays")
	remember(t, s, allowedChan, "U2", memory.ScopeConversation, "the train in the allowed channel")
	const n = 10_500
	clock.Advance(time.Hour)
	err := s.inTx(t.Context(), func(ctx context.Context, tx bun.Tx) error {
		for i := range n {
			if _, err := s.indexDoc(ctx, tx, doc{kind: memory.KindMessage, ref: "s1", channel: trustedChan, threadTS: fmt.Sprintf("%d.1", i),
				scope: memory.ScopeConversation, body: fmt.Sprintf("status check %d is green", i), at: clock.Now().UnixMilli() + int64(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.pg {
		if got := recall(t, s, trustedChan, "status of the train"); len(got) != 10 {
			t.Errorf("before ANALYZE: %d found, want ten (no statistics: no common word)", len(got))
		}
		if _, err := s.db.ExecContext(t.Context(), "ANALYZE recall"); err != nil {
			t.Fatal(err)
		}
	}
	rs := recall(t, s, trustedChan, "status of the train")
	if len(rs) != 1 || rs[0].ID != old.ID {
		t.Fatalf("status of the train: %+v, want only memory %s", snippets(rs), old.ID)
	}
	rs = recall(t, s, trustedChan, "status check")
	if len(rs) != 10 || rs[0].Snippet != fmt.Sprintf("status check %d is green", n-1) {
		t.Fatalf("common words alone: %q, want the newest ten", snippets(rs))
	}
}

// A long message's snippet is its words around the first that matches.
func TestRecallSnippet(t *testing.T) {
	var words []string
	for i := range 60 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	words[40] = "Deployed,"
	got := snippet(strings.Join(words, " "), []string{"deploy"})
	want := "…" + strings.Join(words[34:58], " ") + "…"
	if got != want {
		t.Errorf("snippet = %q\nwant %q", got, want)
	}
	if got := snippet("short and sweet", []string{"sweet"}); got != "short and sweet" {
		t.Errorf("short: %q", got)
	}
	if got := snippet(strings.Join(words, " "), []string{"nothing"}); got != strings.Join(words[:24], " ")+"…" {
		t.Errorf("no hit: %q", got)
	}
}
