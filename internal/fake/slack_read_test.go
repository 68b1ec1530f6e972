package fake

import (
	"encoding/base64"
	"net/url"
	"testing"
)

// The reads answer in the platform's shapes: cursors as it writes them,
// threads oldest first with the root first, histories newest first with
// reply counts, the platform's error codes.
func TestSlackReadsAnswerAsThePlatform(t *testing.T) {
	s := NewSlack(t)
	s.AddHistory(
		Message{User: "U1", Channel: "C1", TS: "10.000001", Text: "root"},
		Message{User: "U2", Channel: "C1", TS: "10.000002", ThreadTS: "10.000001", Text: "reply"},
		Message{User: "U2", Channel: "C1", TS: "10.000003", Text: "later"},
	)
	with := func(kv ...string) url.Values {
		v := url.Values{"token": {DefaultBotToken}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	r := slackPostForm(t, s, "conversations.replies", with("channel", "C1", "ts", "10.000001", "limit", "1"))
	next := r["response_metadata"].(map[string]any)["next_cursor"].(string)
	if raw, _ := base64.StdEncoding.DecodeString(next); string(raw) != "next_ts:10.000002" || r["has_more"] != true {
		t.Fatalf("replies page 1 = %v (cursor %q)", r, raw)
	}
	r = slackPostForm(t, s, "conversations.replies", with("channel", "C1", "ts", "10.000001", "cursor", next))
	if msgs := r["messages"].([]any); len(msgs) != 1 || msgs[0].(map[string]any)["text"] != "reply" || r["has_more"] != false {
		t.Fatalf("replies page 2 = %v", r)
	}
	r = slackPostForm(t, s, "conversations.history", with("channel", "C1"))
	msgs := r["messages"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["text"] != "later" || msgs[1].(map[string]any)["reply_count"] != float64(1) {
		t.Fatalf("history = %v", r)
	}
	for _, tc := range []struct {
		method string
		params url.Values
		code   string
	}{
		{"conversations.replies", with("channel", "C1", "ts", "10.000001", "cursor", "bogus"), "invalid_cursor"},
		{"conversations.info", with("channel", "X1"), "channel_not_found"},
		{"users.info", with("user", "nobody"), "user_not_found"},
		{"reactions.add", with("channel", "C1", "name", "eyes"), "no_item_specified"},
		{"reactions.add", with("channel", "C1", "timestamp", "10.000001", "name", ":eyes:"), "invalid_name"},
		{"reactions.add", with("channel", "C2", "timestamp", "10.000001", "name", "eyes"), "message_not_found"},
		{"reactions.remove", with("channel", "C1", "timestamp", "10.000001", "name", "eyes"), "no_reaction"},
	} {
		if r := slackPostForm(t, s, tc.method, tc.params); r["ok"] != false || r["error"] != tc.code {
			t.Errorf("%s %v = %v, want %s", tc.method, tc.params, r, tc.code)
		}
	}
	if r := slackPostForm(t, s, "reactions.add", with("channel", "C1", "timestamp", "10.000001", "name", "eyes")); r["ok"] != true {
		t.Errorf("reactions.add = %v", r)
	}
	if r := slackPostForm(t, s, "reactions.add", with("channel", "C1", "timestamp", "10.000001", "name", "eyes")); r["error"] != "already_reacted" {
		t.Errorf("second reactions.add = %v", r)
	}
	s.Errors = map[string]string{"conversations.members": "missing_scope"}
	if r := slackPostForm(t, s, "conversations.members", with("channel", "C1")); r["needed"] != "channels:read,groups:read,mpim:read,im:read" {
		t.Errorf("missing scope = %v", r)
	}
}
