package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Ids, timestamps and the temporary home get stable names; a drop, a tool
// call and a card's life each get their line.
func TestRender(t *testing.T) {
	const root, card = "1700000000.000100", "1700000000.000200"
	ask := &pipeline.Card{Kind: "approval", ID: "appr-7f3a", Category: "deploy", Summary: "deploy prod",
		Actions: []string{pipeline.ActionApprove, pipeline.ActionDeny}}
	done := &pipeline.Card{Kind: "approval", ID: "appr-7f3a", Outcome: "approved by <@U0APP>"}
	got := Render(Transcript{
		Scenario: &sim.Scenario{Name: "deploy", Layer: "trusted", As: "member"},
		Entries: []platform.Entry{
			{Op: platform.OpInbound, Kind: pipeline.KindMessage, ChannelID: "C0TEAM", TS: root, UserID: "U0ALICE", Text: "<@U0BOT> please\ndeploy"},
			{Op: platform.OpInbound, Kind: pipeline.KindMessage, ChannelID: "C0TEAM", TS: root, UserID: "U0ALICE", Text: "<@U0BOT> please\ndeploy"},
			{Op: platform.OpPost, ChannelID: "C0TEAM", ThreadTS: root, TS: card, Card: ask},
			{Op: platform.OpInbound, Kind: pipeline.KindAction, ChannelID: "C0TEAM", ThreadTS: root, TS: card, UserID: "U0APP",
				Action: &pipeline.Action{ActionID: "approve", Value: "appr-7f3a", MessageTS: card}},
			{Op: platform.OpUpdate, ChannelID: "C0TEAM", ThreadTS: root, TS: card, Card: done},
		},
		Events: []Event{{Type: "message"}, {Type: "app_mention", Dropped: "duplicate"}, {Type: "block_actions"}},
		Tools: []ToolCall{{After: 5, Line: ToolLine("Read", `{"file_path":"/tmp/agent-sim-1/notes <b>"}`, "read "+card, "ok")},
			{After: 5, Line: RestartLine(3*time.Hour+30*time.Minute, time.Date(2026, 1, 5, 12, 30, 0, 0, time.UTC)), Plain: true}},
		Home: "/tmp/agent-sim-1",
		Bot:  "U0BOT",
	})
	want := `# deploy
# layer trusted · actor member · agent reply
> t1 m1 · C0TEAM [trusted] · member <@U0ALICE>: <@U0BOT> please
  | deploy
> t1 m1 · the same message again, as app_mention
  dropped: duplicate
< t1 m2 card ap1 · approval · deploy · [approve, deny]: deploy prod
> t1 · C0TEAM [trusted] · approver <@U0APP> clicks approve on m2 (card ap1)
< t1 m2 card ap1 resolved: approved by <@U0APP>
  tool Read {"file_path":"$AGENT_HOME/notes <b>"} → ok: read m2
~ restart: down 3h30m0s, up at 2026-01-05 12:30 UTC
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{"a\tb\nc": "a b c", "abcdef": "abcd…", "héllo": "héllo", "ééééé": "ééééé", "éééééé": "éééé…"} {
		if got := OneLine(in, 5); got != want {
			t.Errorf("OneLine(%q, 5) = %q, want %q", in, got, want)
		}
	}
}

// Check passes a match and fails a difference with a diff; Update rewrites
// the file; Skip compares nothing; a scenario without a golden file passes.
func TestCompare(t *testing.T) {
	file := filepath.Join(t.TempDir(), "dm.yaml")
	if note, err := Compare(file, "a\n", Check); note != "no golden file" || err != nil {
		t.Fatalf("without a file: %q, %v", note, err)
	}
	if note, err := Compare(file, "a\n", Update); note != "updated dm.golden" || err != nil {
		t.Fatalf("update: %q, %v", note, err)
	}
	if b, _ := os.ReadFile(Path(file)); string(b) != "a\n" {
		t.Fatalf("the golden file holds %q", b)
	}
	if note, err := Compare(file, "a\n", Check); note != "" || err != nil {
		t.Fatalf("a match: %q, %v", note, err)
	}
	_, err := Compare(file, "b\n", Check)
	if err == nil || !strings.Contains(err.Error(), "transcript differs from dm.golden") || !strings.Contains(err.Error(), "    -a") {
		t.Fatalf("a difference: %v", err)
	}
	if note, err := Compare(file, "b\n", Skip); !strings.Contains(note, "not compared") || err != nil {
		t.Fatalf("skip: %q, %v", note, err)
	}
}

// Free text names the messages named so far, including those named after
// an earlier text was renamed.
func TestRenamerText(t *testing.T) {
	n := newRenamer()
	if got := n.text("at 1700000000.000100"); got != "at 1700000000.000100" {
		t.Errorf("nothing named: %q", got)
	}
	n.msg("1700000000.000100")
	if got := n.text("at 1700000000.000100"); got != "at m1" {
		t.Errorf("one named: %q", got)
	}
	n.msg("1700000000.000200")
	if got := n.text("1700000000.000200 after 1700000000.000100"); got != "m2 after m1" {
		t.Errorf("two named: %q", got)
	}
}
