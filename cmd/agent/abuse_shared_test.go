package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// Issue 33, item 3: skills/ and knowledge/ are one store for every
// conversation. A write there from a conversation more private than the
// persona's most public layer asks a card naming it, in every mode.

// wallSentence ends the first line of such a card.
const wallSentence = ", which every channel the persona serves can read."

// sharedCard waits for the card in channel/thread and checks it is a
// walled write's: the category, the sentence naming rel, what it shows,
// approve and deny only.
func (h *harness) sharedCard(channel, thread, category, rel string, shows ...string) fake.Post {
	h.t.Helper()
	card, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return p.Channel == channel && p.ThreadTS == thread && len(p.Blocks) > 0
	})
	if err != nil {
		h.t.Fatalf("no approval card in %s/%s: %v\nposts: %+v\nlogs:\n%s", channel, thread, err, h.slack.Posts(), h.logs)
	}
	sentence := "This writes to `" + rel + "`" + wallSentence
	if want := "Approval needed (" + category + "): " + sentence; card.Text != want {
		h.t.Errorf("card notification %q, want %q", card.Text, want)
	}
	text := cardText(h.t, card)
	for _, want := range append([]string{sentence}, shows...) {
		if !strings.Contains(text, want) {
			h.t.Errorf("card:\n%s\nwant %q in it", text, want)
		}
	}
	if b := cardButtons(h.t, card); b["approve"] == "" || b["deny"] == "" || b["always"] != "" {
		h.t.Fatalf("card buttons %v: want approve and deny only", b)
	}
	return card
}

// noFile fails when path exists.
func noFile(t *testing.T, path, when string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("%s exists %s: %v", path, when, err)
	}
}

// fileHas fails unless path holds content.
func fileHas(t *testing.T, path, content string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != content {
		t.Fatalf("%s = %q (%v), want %q", path, got, err, content)
	}
}

// TestAbuseSharedFolderFromDM: in the manager's DM, in bypass, the model
// writes a skill file: a card names the path and says every channel can
// read it, showing the whole content; nothing is written until it is
// approved. From the allowed channel (the most public layer) the same
// write is decided as before: a card of its own category, no sentence.
func TestAbuseSharedFolderFromDM(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	private := filepath.Join(h.home, "skills", "x", "SKILL.md")
	public := filepath.Join(h.home, "skills", "y", "SKILL.md")
	const content = "---\nname: x\ndescription: Salaries.\n---\nAlice earns 123,456 a year.\n"
	h.script(
		use("t1", "Write", map[string]string{"file_path": private, "content": content}), say("r1"), end,
		use("t2", "Write", map[string]string{"file_path": public, "content": content}), say("r2"),
	)
	h.start()

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "note the salaries"})
	card := h.sharedCard("D0MGR", "100.1", "skills", "skills/x/SKILL.md", "Alice earns 123,456 a year.")
	noFile(t, private, "before the card is decided")
	h.click("U0MGR", card, "approve")
	if p := h.expectReply("D0MGR", "100.1", "x/SKILL.md"); strings.Contains(p.Text, "ERROR") {
		t.Fatalf("Write after approval: %q", p.Text)
	}
	fileHas(t, private, content)

	h.send(fake.Message{User: "U0MGR", Channel: "C0PUB", TS: "200.1", Text: "<@U0BOT> note it here"})
	pub, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return p.Channel == "C0PUB" && len(p.Blocks) > 0 })
	if err != nil {
		t.Fatalf("no card in the allowed channel: %v\nlogs:\n%s", err, h.logs)
	}
	if !strings.HasPrefix(pub.Text, "Approval needed (Write): `Write` wants to write") || strings.Contains(cardText(t, pub), wallSentence) {
		t.Fatalf("allowed channel's card %q:\n%s\nwant the Write card as before", pub.Text, cardText(t, pub))
	}
	h.click("U0MGR", pub, "approve")
	h.expectReply("C0PUB", "200.1", "y/SKILL.md")
	fileHas(t, public, content)
}

// TestAbuseSharedFolderWriteSkillFromDM: write_skill from the manager's
// DM asks the same card; denied, no skill is written.
func TestAbuseSharedFolderWriteSkillFromDM(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	h.script(use("t1", "mcp__agent_skills__write_skill",
		map[string]string{"slug": "payroll", "description": "Payroll facts.", "body": "Alice earns 123,456 a year."}), say("r1"))
	h.start()

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "make it a skill"})
	card := h.sharedCard("D0MGR", "100.1", "skills", "skills/payroll/SKILL.md", "Alice earns 123,456 a year.")
	h.click("U0MGR", card, "deny")
	h.expectReply("D0MGR", "100.1", "ERROR")
	noFile(t, filepath.Join(h.home, "skills", "payroll"), "after a denied card")
}

// TestAbuseSharedFolderKnowledgeFromDM: a Write into a knowledge base
// from the manager's DM asks a card of category knowledge; nothing is
// written until it is approved.
func TestAbuseSharedFolderKnowledgeFromDM(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	fake.WriteFile(t, filepath.Join(h.home, "knowledge", "team", "README.md"), "# Team\n")
	page := filepath.Join(h.home, "knowledge", "team", "raw", "pay.md")
	const content = "Alice earns 123,456 a year.\n"
	h.script(use("t1", "Write", map[string]string{"file_path": page, "content": content}), say("r1"))
	h.start()

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "put it in the wiki"})
	card := h.sharedCard("D0MGR", "100.1", "knowledge", "knowledge/team/raw/pay.md", "Alice earns 123,456 a year.")
	noFile(t, page, "before the card is decided")
	h.click("U0MGR", card, "approve")
	h.expectReply("D0MGR", "100.1", "pay.md")
	fileHas(t, page, content)
}

// TestAbuseSharedFolderFromTrustedBesideAllowed: with allowed channels, a
// trusted channel is more private than the most public layer: the
// manager's bypass there asks the card too.
func TestAbuseSharedFolderFromTrustedBesideAllowed(t *testing.T) {
	h := newHarness(t, rulesSoul)
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	path := filepath.Join(h.home, "skills", "team", "SKILL.md")
	h.script(use("t1", "Write", map[string]string{"file_path": path, "content": "---\nname: team\ndescription: Team.\n---\nx\n"}), say("r1"))
	h.start()

	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> note it"})
	card := h.sharedCard("C0TEAM", "100.1", "skills", "skills/team/SKILL.md")
	noFile(t, path, "before the card is decided")
	h.click("U0MGR", card, "deny")
	h.expectReply("C0TEAM", "100.1", "ERROR")
	noFile(t, path, "after a denied card")
}

// TestAbuseSharedFolderFromTrustedWithoutAllowed: without allowed
// channels a trusted channel is the most public layer: the manager's
// bypass there writes the skill without a card, as before; the DM still
// asks.
func TestAbuseSharedFolderFromTrustedWithoutAllowed(t *testing.T) {
	h := newHarness(t, gatekeeperSoul)
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	team := filepath.Join(h.home, "skills", "team", "SKILL.md")
	dm := filepath.Join(h.home, "skills", "dm", "SKILL.md")
	const content = "---\nname: team\ndescription: Team.\n---\nx\n"
	h.script(
		use("t1", "Write", map[string]string{"file_path": team, "content": content}), say("r1"), end,
		use("t2", "Write", map[string]string{"file_path": dm, "content": content}), say("r2"),
	)
	h.start()

	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> note it"})
	h.expectReply("C0TEAM", "100.1", "team/SKILL.md")
	fileHas(t, team, content)
	for _, p := range h.slack.Posts() {
		if len(p.Blocks) > 0 && strings.HasPrefix(p.Text, "Approval needed") {
			t.Fatalf("the trusted channel's write asked a card: %+v", p)
		}
	}

	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "200.1", Text: "note it"})
	h.click("U0MGR", h.sharedCard("D0MGR", "200.1", "skills", "skills/dm/SKILL.md"), "approve")
	h.expectReply("D0MGR", "200.1", "dm/SKILL.md")
	fileHas(t, dm, content)
}
