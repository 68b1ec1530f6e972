package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/fake/golden"
)

// tableReply is a reply with a table whose cells carry style and a link.
const tableReply = "The **rollout**:\n\n| service | state | owner |\n|:---|:---:|---:|\n| `api` | **up** | <@U0MGR> |\n" +
	"| worker | ~~down~~ _degraded_ | [oncall](https://oncall.example/w) |\n\nAsk me for the logs."

// A reply's markdown table within the platform's limits reaches the chat
// as a native table block between its text's sections (golden: the
// blocks' JSON, the final edit with its feedback buttons); the message's
// text keeps the table as text for notifications. A table past the
// limits (21 columns) is text only, as before.
func TestTableBlockInReply(t *testing.T) {
	h := newHarness(t, testSoul)
	wide := "|" + strings.Repeat(" c |", 21) + "\n|" + strings.Repeat("---|", 21) + "\n|" + strings.Repeat(" 1 |", 21) + "\n"
	h.script(say("r1"), end, say("r2"))
	h.model.Respond = nil
	h.model.Enqueue(replyWith(tableReply)...)
	h.model.Enqueue(replyWith("Wide:\n\n" + wide)...)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "status?"})
	post := h.expectReply("D0MGR", "100.1", "rollout")
	if !strings.Contains(post.Text, "```\nservice |") || !strings.Contains(post.Text, "worker  | down degraded |") {
		t.Errorf("the text fallback lost the table:\n%s", post.Text)
	}
	final, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { return p.TS == post.TS })
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]fake.Post{"post": post, "edit": final} {
		if !bytes.Contains(p.Blocks, []byte(`"type":"table"`)) {
			t.Fatalf("%s has no table block: %s", name, p.Blocks)
		}
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, final.Blocks, "", "  "); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "table_blocks.golden"), pretty.Bytes())

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.2", ThreadTS: "100.1", Text: "and wide?"})
	wideReply := h.expectReply("D0MGR", "100.1", "Wide:")
	if bytes.Contains(wideReply.Blocks, []byte(`"type":"table"`)) || !strings.Contains(wideReply.Text, "```") {
		t.Errorf("a table past 20 columns: blocks %s, text %q", wideReply.Blocks, wideReply.Text)
	}
}
