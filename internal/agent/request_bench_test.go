package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/persona-runtime/agent/internal/store"
)

// benchHistory is a thread's stored history, written as the engine
// writes it: n rounds of a user message, a tool call and its ~1 KB result.
func benchHistory(n int) []store.Message {
	var rows []store.Message
	add := func(m anthropic.MessageParam) {
		b, err := json.Marshal(m.Content)
		if err != nil {
			panic(err)
		}
		rows = append(rows, store.Message{Seq: int64(len(rows) + 1), Role: string(m.Role), Content: b})
	}
	same := func(s string) string { return s }
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		add(anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("<@U0ALICE> (member): question %d about the deploy & co", i))))
		add(anthropic.NewAssistantMessage(anthropic.NewToolUseBlock(id,
			redactJSON(json.RawMessage(`{"timeout":30,"command":"kubectl get pods -n prod | grep '<none>'"}`), same), "Bash")))
		add(anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, strings.Repeat("pod-abc-123 Running 0 5d\n", 40), false)))
	}
	return rows
}

// The history's share of a model request: read from the stored rows and
// encoded into the request body, on every model call of every turn.
func BenchmarkHistoryRequest(b *testing.B) {
	for _, rounds := range []int{5, 50} {
		rows := benchHistory(rounds)
		b.Run(fmt.Sprintf("%d-messages", len(rows)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msgs, err := requestHistory(rows)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(anthropic.MessageNewParams{Model: "m", MaxTokens: 1, Messages: mergeRoles(msgs)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Sent as stored JSON or decoded and encoded again, the history is the
// same bytes: the provider's prompt cache sees no difference.
func TestRequestHistoryBytes(t *testing.T) {
	rows := benchHistory(4)
	// A failed turn's lone user message before the next (a run to merge),
	// an empty message, and a run at the very end.
	extra := func(role, content string) store.Message {
		return store.Message{Seq: int64(len(rows) + 1), Role: role, Content: json.RawMessage(content)}
	}
	// A text block as the engine stores it.
	rows = append(rows[:3], append([]store.Message{extra(store.RoleUser, `[{"text":"are you there?","type":"text"}]`),
		extra(store.RoleAssistant, `[]`)}, rows[3:]...)...)
	rows = append(rows, extra(store.RoleUser, `[{"text":"and now?","type":"text"}]`))
	for n := 1; n <= len(rows); n++ {
		full, err := decodeHistory(rows[:n])
		if err != nil {
			t.Fatal(err)
		}
		light, err := requestHistory(rows[:n])
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(anthropic.MessageNewParams{Model: "m", MaxTokens: 1, Messages: mergeRoles(full)})
		got, _ := json.Marshal(anthropic.MessageNewParams{Model: "m", MaxTokens: 1, Messages: mergeRoles(light)})
		if string(got) != string(want) {
			t.Fatalf("%d rows: the request differs\n got %s\nwant %s", n, got, want)
		}
		if _, ok := interruptedResults(full); ok != func() bool { _, ok := interruptedResults(light); return ok }() {
			t.Fatalf("%d rows: unanswered tool calls seen differently", n)
		}
	}
	if _, err := requestHistory([]store.Message{{Seq: 7, Role: store.RoleUser, Content: json.RawMessage(`{"not":"an array"}`)}}); err == nil ||
		!strings.Contains(err.Error(), "history message 7") {
		t.Fatalf("a stored message that is not an array: %v", err)
	}
}
