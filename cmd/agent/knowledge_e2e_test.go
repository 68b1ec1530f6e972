package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/pkg/deps"
)

// gitOverHTTP serves g's repositories over HTTP at githost.test, which
// AGENT_EGRESS_HOSTS maps to 127.0.0.1 and the returned soul lists in "##
// Network" (an unconfined git cannot even resolve it): under the default
// AGENT_SANDBOX_NET=allowlist the runtime's own git reaches them only
// through the egress proxy. env is what the runtime and the CLI need.
func gitOverHTTP(t *testing.T, g *fake.Git, soul string) (string, map[string]string, *atomic.Int64) {
	t.Helper()
	port, hits := g.ServeHTTP("githost.test")
	return soul + fmt.Sprintf("\n## Network\n- githost.test:%d\n", port),
		map[string]string{"AGENT_EGRESS_HOSTS": "githost.test=127.0.0.1", "GIT_HTTP_PORT": fmt.Sprint(port)}, hits
}

// The runtime's own git reaches no host the allowlist did not allow: the
// skills repository's remote sent (by git's configuration) to the git
// host's address itself, 127.0.0.1, which nothing listed, is refused by
// the proxy, and the push fails; an unconfined git would have reached it.
func TestSkillsSyncCannotReachAnUnlistedHost(t *testing.T) {
	git := fake.NewGit(t, false)
	bare := git.Bare("git.example.com", "acme/skills")
	soul, env, hits := gitOverHTTP(t, git, rulesSoul)
	git.Redirect("http://127.0.0.1:" + env["GIT_HTTP_PORT"])
	h := newHarness(t, soul)
	maps.Copy(h.env, env)
	h.env["AGENT_SKILLS_REPO"] = "git.example.com:acme/skills"
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	h.script(
		use("t1", "mcp__agent_skills__write_skill", map[string]string{"slug": "deploy-checklist",
			"description": "Use before any deploy.", "body": "1. Check the dashboard."}),
		use("t2", "mcp__agent_skills__sync_manifest", map[string]string{}),
		say("r1"),
	)
	h.start()
	ctx := h.ctx()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "save the checklist as a skill"})
	h.click("U0MGR", h.sharedCard("D0MGR", "100.1", "skills", "skills/deploy-checklist/SKILL.md"), "approve")
	card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 && strings.Contains(p.Text, "sync_manifest") })
	if err != nil {
		t.Fatalf("no card: %v\n%s", err, h.logs)
	}
	h.click("U0MGR", card, "approve")
	h.expectReply("D0MGR", "100.1", "blocked by the persona's network allowlist: 127.0.0.1:"+env["GIT_HTTP_PORT"])
	if hits.Load() != 0 {
		t.Fatalf("the git host got %d requests from a host nobody allowed", hits.Load())
	}
	if r := h.metric(`agent_egress_requests_total{outcome="refused"}`); r < 1 {
		t.Fatalf("egress refused %v: the proxy never saw the push\n%s", r, h.logs)
	}
	if out, err := exec.Command("git", "--git-dir", bare, "rev-parse", "--verify", "--quiet", "main").Output(); err == nil {
		t.Fatalf("the skills repo got a push: %s", out)
	}
	if !strings.Contains(h.logs.String(), "egress refused") {
		t.Fatalf("no refusal logged:\n%s", h.logs)
	}
}

func TestSkillReachesTheSkillsRepoAndAFreshHomeIsRebuilt(t *testing.T) {
	git := fake.NewGit(t, false)
	bare := git.Bare("git.example.com", "acme/skills")
	soul, env, hits := gitOverHTTP(t, git, rulesSoul)
	h := newHarness(t, soul)
	maps.Copy(h.env, env)
	h.env["AGENT_SKILLS_REPO"] = "git.example.com:acme/skills"
	h.env["AGENT_DEFAULT_MODE"] = "bypass"
	h.script(
		use("t1", "mcp__agent_skills__write_skill", map[string]string{"slug": "deploy-checklist",
			"description": "Use before any deploy.", "body": "1. Check the dashboard.\n2. Ask for approval."}),
		use("t2", "mcp__agent_skills__sync_manifest", map[string]string{}),
		say("r1"),
	)
	h.start()
	ctx := h.ctx()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "save the checklist as a skill"})

	// write_skill from the manager's DM asks the card of a write every
	// channel reads (abuse_shared_test.go).
	h.click("U0MGR", h.sharedCard("D0MGR", "100.1", "skills", "skills/deploy-checklist/SKILL.md"), "approve")
	// sync_manifest needs a card (category skills) even in bypass, without "always".
	card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 && strings.Contains(p.Text, "sync_manifest") })
	if err != nil {
		t.Fatalf("no card: %v\n%s", err, h.logs)
	}
	if b := cardButtons(t, card); b["always"] != "" || !strings.Contains(string(card.Blocks), "skills") {
		t.Fatalf("sync card: %v %s", b, card.Blocks)
	}
	h.click("U0MGR", card, "approve")
	reply := h.expectReply("D0MGR", "100.1", "pushed")
	if strings.Contains(reply.Text, "ERROR") {
		t.Fatalf("sync failed: %s", reply.Text)
	}
	if got := fake.RunGit(t, "", "--git-dir", bare, "show", "main:deploy-checklist/SKILL.md"); !strings.Contains(got, "Check the dashboard") {
		t.Fatalf("skills repo has: %s", got)
	}
	// The push went through the proxy, which allowed it.
	if a := h.metric(`agent_egress_requests_total{outcome="allowed"}`); a < 1 || hits.Load() == 0 {
		t.Fatalf("egress allowed %v, git host hits %d: the sync did not go through the proxy", a, hits.Load())
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// A fresh home, from agent.json + agent.lock (and its SOUL.md) alone,
	// at the same sha: install-deps's git goes through a proxy of its own.
	fresh := t.TempDir()
	for _, f := range []string{"agent.json", "agent.lock", "SOUL.md"} {
		data, err := os.ReadFile(filepath.Join(h.home, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(fresh, f), data, 0o600)
	}
	before := hits.Load()
	if out, stderr, code := runCLI(t, map[string]string{"AGENT_HOME": fresh, "AGENT_EGRESS_HOSTS": env["AGENT_EGRESS_HOSTS"]}, "install-deps", "--frozen"); code != 0 {
		t.Fatalf("install-deps --frozen: exit %d\n%s\n%s", code, out, stderr)
	}
	if hits.Load() == before {
		t.Fatal("install-deps did not reach the git host")
	}
	got, err := os.ReadFile(filepath.Join(fresh, "skills", "deploy-checklist", "SKILL.md"))
	if err != nil || !strings.Contains(string(got), "Check the dashboard") {
		t.Fatalf("rebuilt skill: %q, %v", got, err)
	}
	if out, _, code := runCLI(t, map[string]string{"AGENT_HOME": fresh}, "install-deps", "--check"); code != 0 {
		t.Fatalf("--check after the rebuild: exit %d\n%s", code, out)
	}
}

func TestIngestEndToEnd(t *testing.T) {
	git := fake.NewGit(t, false)
	bare := git.Bare("git.example.com", "acme/notes")
	git.Seed(bare, map[string]string{
		"README.md":         "# Team notes\n\nWhat the team learned.\n",
		"raw/2026-11-20.md": "Deploys on Fridays caused two incidents.\n",
	})
	soul, env, hits := gitOverHTTP(t, git, rulesSoul)
	h := newHarness(t, soul)
	maps.Copy(h.env, env)
	os.WriteFile(filepath.Join(h.home, "agent.json"),
		[]byte(`{"agent_knowledge":{"label":"notes","git":"git.example.com:acme/notes","ref":"main"}}`), 0o600)
	if out, stderr, code := runCLI(t, map[string]string{"AGENT_HOME": h.home, "AGENT_GIT_AUTHOR": "Test <t@example.com>",
		"AGENT_EGRESS_HOSTS": env["AGENT_EGRESS_HOSTS"]}, "install-deps"); code != 0 {
		t.Fatalf("install-deps: exit %d\n%s\n%s", code, out, stderr)
	}
	// The sub-agent reads a raw file, writes a page by its relative path,
	// and tries README.md, which is refused: the refusal is its tool result.
	var refusal string
	h.model.Respond = func(r fake.AnthropicRequest) fake.AnthropicResponse {
		res, isErr, ok := lastResult(r)
		steps := 0
		for _, m := range r.ParsedMessages() {
			for _, c := range m.Content {
				if c.Type == "tool_result" {
					steps++
				}
			}
		}
		switch {
		case !ok && steps == 0:
			return fake.ToolUse("t1", "Read", map[string]string{"file_path": "raw/2026-11-20.md"})
		case steps == 1:
			return fake.ToolUse("t2", "Write", map[string]string{"file_path": "wiki/deploys.md", "content": "# Deploys\n\nNo deploys on Fridays.\n"})
		case steps == 2:
			return fake.ToolUse("t3", "Write", map[string]string{"file_path": "README.md", "content": "# pwned\n"})
		}
		if isErr {
			refusal = res
		}
		return fake.TextReply("Wrote wiki/deploys.md.")
	}
	h.start()

	// Unauthorised first: a member may not ingest.
	h.slack.Send("slash_commands", fake.SlashCommand{Command: "/ingest", User: "U0ALICE", Channel: "C0TEAM"}.Payload(), 0)
	h.expectNotice("C0TEAM", "", "unauthorized")

	h.slack.Send("slash_commands", fake.SlashCommand{Command: "/ingest", User: "U0MGR", Channel: "C0TEAM"}.Payload(), 0)
	p := h.expectNotice("C0TEAM", "", "ingested")
	m := regexp.MustCompile(`^ingested 1 raw file\(s\); 1 wiki pages changed; pushed ([0-9a-f]{7})$`).FindStringSubmatch(p.Text)
	if m == nil {
		t.Fatalf("reply %q", p.Text)
	}
	head := fake.RunGit(t, "", "--git-dir", bare, "rev-parse", "main")
	if !strings.HasPrefix(head, m[1]) {
		t.Fatalf("pushed %s, remote main is %s", m[1], head)
	}
	if got := fake.RunGit(t, "", "--git-dir", bare, "show", "main:wiki/deploys.md"); !strings.Contains(got, "No deploys on Fridays") {
		t.Fatalf("wiki page: %s", got)
	}
	if a := h.metric(`agent_egress_requests_total{outcome="allowed"}`); a < 1 || hits.Load() == 0 {
		t.Fatalf("egress allowed %v, git host hits %d: the ingest did not go through the proxy", a, hits.Load())
	}
	lock, err := deps.LoadLock(filepath.Join(h.home, "agent.lock"))
	if err != nil || lock.AgentKnowledge == nil || lock.AgentKnowledge.WikiSHA != head {
		t.Fatalf("agent.lock wiki_sha = %+v, %v; want %s", lock.AgentKnowledge, err, head)
	}
	if !strings.Contains(refusal, "README.md cannot be written") {
		t.Errorf("the refused write's tool result = %q", refusal)
	}
	if got := fake.RunGit(t, "", "--git-dir", bare, "show", "main:README.md"); strings.Contains(got, "pwned") {
		t.Fatalf("README.md was written: %s", got)
	}

	// A failing model is not silence: the thread hears why.
	h.model.Respond = func(fake.AnthropicRequest) fake.AnthropicResponse {
		return fake.APIError(400, "invalid_request_error", "prompt is too long")
	}
	h.slack.Send("slash_commands", fake.SlashCommand{Command: "/ingest", User: "U0MGR", Channel: "C0TEAM"}.Payload(), 0)
	p = h.expectNotice("C0TEAM", "", "ingest failed")
	if !strings.HasPrefix(p.Text, "ingest failed: model call: ") || !strings.Contains(p.Text, "prompt is too long") {
		t.Fatalf("failure line %q", p.Text)
	}
}

// The runtime's own git in its network of its own, as an unprivileged
// user too: as root, the tests above run again in this test binary
// re-executed as nobody (the abuse suite's pattern).
func TestRuntimeGitNetworkAsAnUnprivilegedUser(t *testing.T) {
	if os.Getenv(abuseAsEnv) != "" || os.Geteuid() != 0 {
		t.Skip("as an unprivileged user the tests above run directly")
	}
	if sandbox.LandlockABI() == 0 {
		t.Skip("the kernel has no Landlock: the abuse suite needs it")
	}
	tests := []string{"TestSkillReachesTheSkillsRepoAndAFreshHomeIsRebuilt", "TestSkillsSyncCannotReachAnUnlistedHost", "TestIngestEndToEnd"}
	bin := fake.CopyTestBinary(t, "agent.test")
	child := exec.Command(bin, "-test.run=^("+strings.Join(tests, "|")+")$", "-test.count=1", "-test.v")
	child.Dir = filepath.Dir(bin)
	child.Env = []string{abuseAsEnv + "=1", "PATH=" + os.Getenv("PATH"), "TMPDIR=/tmp", "GORACE=atexit_sleep_ms=0"}
	child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	for _, name := range tests {
		if !bytes.Contains(out, []byte("--- PASS: "+name+" ")) {
			t.Errorf("as nobody, %s did not pass:\n%s", name, out)
		}
	}
}
