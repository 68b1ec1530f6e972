package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// A team of personas (issue 38): two personas, two processes of the
// binary, each its own home, tokens and bot identity, against one fake
// workspace (fake.Workspace) in which each app receives the other's posts
// as the platform delivers them.

const (
	relUser, relBot = "U0REL", "B0REL" // the release persona
	oncUser, oncBot = "U0ONC", "B0ONC" // the on-call persona
	peerChannel     = "C0TEAM"
	peerKey         = "sk-ant-api03-peers-key-0000000000"
)

// peerSoul is a persona working in #team with one peer.
func peerSoul(name, peer string) string {
	return `## Identity
- Name: ` + name + `

## Reporting
- Manager: U0MGR

## Mandate
- Works with the team.

## Trusted channels
- <#` + peerChannel + `>

## Peers
- <@` + peer + `>
`
}

// peerApp is one app of the workspace: its fake, its model, its process.
type peerApp struct {
	t       *testing.T
	name    string
	user    string
	slack   *fake.Slack
	model   *fake.Anthropic
	home    string
	log     string
	port    int
	env     []string
	cmd     *exec.Cmd
	done    chan struct{}
	started int // sockets opened so far
}

// peerBinary builds the binary once for the test.
func peerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and runs two of it")
	}
	bin := filepath.Join(t.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// newPeerApp makes an app with its own identity and a persona whose peer
// is peer; respond scripts its model.
func newPeerApp(t *testing.T, name, user, bot, peer string, respond func(fake.AnthropicRequest) fake.AnthropicResponse) *peerApp {
	t.Helper()
	s := fake.NewSlack(t)
	lower := strings.ToLower(name)
	s.BotToken, s.AppToken = "xoxb-"+lower+"-token", "xapp-"+lower+"-token"
	s.BotUserID, s.BotID, s.AppID = user, bot, "A0"+strings.ToUpper(name)
	s.T = nil // a stopped process leaves half-done requests behind
	m := fake.NewAnthropic(t)
	m.T, m.Key, m.Respond = nil, peerKey, respond
	a := &peerApp{t: t, name: name, user: user, slack: s, model: m, home: t.TempDir()}
	a.log = filepath.Join(a.home, "agent.log")
	if err := os.WriteFile(filepath.Join(a.home, "SOUL.md"), []byte(peerSoul(name, peer)), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// start runs the app's process (again, after stop: the same home and
// database) and waits until it is healthy with its socket open.
func (a *peerApp) start(bin string) {
	a.t.Helper()
	a.port = freePort(a.t)
	logf, err := os.OpenFile(a.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		a.t.Fatal(err)
	}
	cmd := exec.Command(bin, "start")
	cmd.Env = append([]string{
		"HOME=" + a.home, "PATH=" + os.Getenv("PATH"),
		"CHAT_BOT_TOKEN=" + a.slack.BotToken, "CHAT_APP_TOKEN=" + a.slack.AppToken, "CHAT_API_URL=" + a.slack.URL(),
		"LLM_API_KEY=" + peerKey, "LLM_BASE_URL=" + a.model.URL(), "AGENT_MODEL=claude-test",
		"AGENT_HOME=" + a.home, "AGENT_HEALTH_PORT=" + strconv.Itoa(a.port), "AGENT_STREAM=off",
		"AGENT_LOG_LEVEL=debug", "AGENT_SANDBOX=off", "GORACE=atexit_sleep_ms=0",
	}, a.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	logf.Close()
	a.cmd, a.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(a.done) }()
	a.t.Cleanup(a.kill)
	a.started++
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", a.port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && a.slack.Connections() >= a.started && a.slack.OpenSockets() >= 1 {
				return
			}
		}
		select {
		case <-a.done:
			a.t.Fatalf("%s exited early:\n%s", a.name, a.logs())
		default:
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("%s not up:\n%s", a.name, a.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the process gracefully (SIGTERM) and waits for it.
func (a *peerApp) stop() {
	a.t.Helper()
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.done:
	case <-time.After(60 * time.Second):
		a.t.Fatalf("%s did not stop:\n%s", a.name, a.logs())
	}
	a.cmd = nil
	for a.slack.OpenSockets() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
}

func (a *peerApp) kill() {
	if a.cmd != nil && a.cmd.Process != nil {
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// logs is the end of the process's log, for a failure's message.
func (a *peerApp) logs() string {
	s := a.allLogs()
	if len(s) > 20000 {
		s = s[len(s)-20000:]
	}
	return s
}

// allLogs is the process's whole log, for counting its lines.
func (a *peerApp) allLogs() string {
	b, _ := os.ReadFile(a.log)
	return string(b)
}

// metric reads one series of the process's /metrics; 0 when absent.
func (a *peerApp) metric(series string) float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", a.port))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// postsIn counts the app's posts in a thread.
func (a *peerApp) postsIn(thread string) int {
	n := 0
	for _, p := range a.slack.Posts() {
		if p.Channel == peerChannel && p.ThreadTS == thread {
			n++
		}
	}
	return n
}

// person sends a person's message to every app, as the platform delivers
// a channel message to each app in the channel (an app_mention too to an
// app it mentions).
func person(apps []*peerApp, user, ts, thread, text string) {
	for _, a := range apps {
		m := fake.Message{User: user, Channel: peerChannel, TS: ts, ThreadTS: thread, Text: text}
		a.slack.SendEvent(m.Payload())
		if strings.Contains(text, "<@"+a.user+">") {
			a.slack.SendEvent(fake.AppMention{User: user, Channel: peerChannel, TS: ts, ThreadTS: thread, Text: text}.Payload())
		}
	}
}

// handBack scripts a persona that, whatever it is told, answers by
// mentioning its peer (the loop of two courteous bots), except to a
// peer's message holding "quiet", which it leaves unanswered; asked by a
// person to have its peer stay quiet, it says so to the peer.
func handBack(peer string) func(fake.AnthropicRequest) fake.AnthropicResponse {
	var mu sync.Mutex
	n := 0
	return func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		said := req.LastUserText()
		if b := last[len(last)-1]; b.Type == "tool_result" || strings.Contains(said, `role="peer">`) && strings.Contains(said, "quiet") {
			return fake.TextReply("")
		}
		text := "<@" + peer + "> over to you"
		if strings.Contains(said, "stay quiet") {
			text = "<@" + peer + "> quiet please"
		}
		mu.Lock()
		n++
		id := fmt.Sprintf("toolu_peer_%d", n)
		mu.Unlock()
		return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": text})
	}
}

// waitFor waits until cond holds (a minute at most: the processes run
// under -race on a loaded machine).
func waitFor(t *testing.T, what string, cond func() bool, apps ...*peerApp) {
	t.Helper()
	if !fake.Eventually(60*time.Second, cond) {
		var b strings.Builder
		for _, a := range apps {
			fmt.Fprintf(&b, "--- %s:\n%s\n", a.name, a.logs())
		}
		t.Fatalf("%s: not reached\n%s", what, b.String())
	}
}

const peerLimitDrops = `agent_chat_drops_total{reason="peer_limit"}`

// Two personas told to always mention each other stop within the bound
// (AGENT_PEER_TURNS=3 each), start again only after a person writes, and
// say it in one log line per thread per hour; a bot that is not a peer is
// dropped; a peer's message that does not mention the persona is not
// admitted; a peer-admitted turn without a reply posts nothing and is not
// sent back; and the bound survives a restart.
func TestPeersHandOverWithinBounds(t *testing.T) {
	bin := peerBinary(t)
	rel := newPeerApp(t, "Rel", relUser, relBot, oncUser, handBack(oncUser))
	onc := newPeerApp(t, "Onc", oncUser, oncBot, relUser, handBack(relUser))
	fake.Workspace(rel.slack, onc.slack)
	apps := []*peerApp{rel, onc}
	rel.start(bin)
	onc.start(bin)

	// A bot that is not a peer, mentioning the persona: dropped, counted.
	rel.slack.SendEvent(fake.Message{User: "U0OTHER", BotID: "B0OTHER", Channel: peerChannel, TS: "1600000001.000100", Text: "<@" + relUser + "> hi"}.Payload())
	waitFor(t, "non-peer bot dropped", func() bool { return rel.metric(`agent_chat_drops_total{reason="self"}`) >= 1 }, rel)

	// A person asks the release persona; it hands over to on-call, which
	// hands back, and so on: each persona takes 3 peer-admitted turns.
	root := "1600000002.000100"
	person(apps, "U0MGR", root, "", "<@"+relUser+"> check the deploy")
	waitFor(t, "the loop is stopped", func() bool { return onc.metric(peerLimitDrops) >= 1 }, apps...)
	if got, want := rel.postsIn(root), 1+3; got != want {
		t.Fatalf("release persona posted %d times in the thread, want %d", got, want)
	}
	if got := onc.postsIn(root); got != 3 {
		t.Fatalf("on-call persona posted %d times in the thread, want 3", got)
	}
	waitFor(t, "the release persona's fourth turn ends", func() bool { return len(rel.model.Requests()) >= 2*4 }, rel)
	if n := len(rel.model.Requests()); n != 2*4 {
		t.Fatalf("release persona's model asked %d times, want 8 (4 turns)", n)
	}

	// The peer's envelope: the on-call persona read the release persona's
	// message in role peer.
	reqs := onc.model.Requests()
	if txt := reqs[0].LastUserText(); !strings.Contains(txt, `<message from="<@`+relUser+`>" role="peer">over to you</message>`) {
		t.Fatalf("on-call's first turn reads %q", txt)
	}

	// A person writes: both counts start again (the release persona is
	// mentioned; on-call sees the person's message in the thread).
	person(apps, "U0MGR", "1600000003.000100", root, "<@"+relUser+"> once more")
	waitFor(t, "the second round is stopped", func() bool { return onc.metric(peerLimitDrops) >= 2 }, apps...)
	if got := onc.postsIn(root); got != 6 {
		t.Fatalf("on-call posted %d times after a person wrote, want 6", got)
	}
	if n := strings.Count(onc.allLogs(), "peer turns past their bound"); n != 1 {
		t.Fatalf("the bound was logged %d times, want once per thread per hour", n)
	}
	// The release persona's last turn of the round posted the mention
	// on-call dropped; its model's second call (after the reply's result)
	// may still be on its way.
	waitFor(t, "the release persona's eighth turn ends", func() bool { return len(rel.model.Requests()) >= 2*8 }, rel)
	if n := len(rel.model.Requests()); n != 2*8 {
		t.Fatalf("release persona's model asked %d times, want 16 (8 turns)", n)
	}

	// A peer's post that does not mention the persona is not admitted,
	// even in a thread it is engaged in.
	before := len(rel.model.Requests())
	rel.slack.SendEvent(fake.Message{User: oncUser, BotID: oncBot, Channel: peerChannel, TS: "1600000004.000100", ThreadTS: root, Text: "no mention here"}.Payload())
	waitFor(t, "unmentioned peer dropped", func() bool { return rel.metric(`agent_chat_drops_total{reason="self"}`) >= 2 }, rel)
	if len(rel.model.Requests()) != before {
		t.Fatal("a peer's post without a mention reached a model")
	}

	// Silence: on-call leaves a peer's "quiet" message unanswered; nothing
	// is posted and the model is not sent back.
	quiet := "1600000005.000100"
	person(apps, "U0MGR", quiet, "", "<@"+relUser+"> ask on-call to stay quiet")
	waitFor(t, "on-call's silent turn", func() bool {
		return onc.metric(`agent_turns_total{outcome="silent"}`) >= 1
	}, apps...)
	if got := onc.postsIn(quiet); got != 0 {
		t.Fatalf("on-call posted %d times after choosing silence", got)
	}
	for _, r := range onc.model.Requests() {
		if strings.Contains(string(r.Body), "You ended your turn without posting") {
			t.Fatal("a silent peer turn was sent back to the model")
		}
	}

	// The bound survives a restart: the release persona, past its bound
	// in the first thread, still drops a peer's mention there.
	rel.stop()
	rel.start(bin)
	rel.slack.SendEvent(fake.Message{User: oncUser, BotID: oncBot, Channel: peerChannel, TS: "1600000006.000100", ThreadTS: root, Text: "<@" + relUser + "> one more"}.Payload())
	waitFor(t, "bound kept across the restart", func() bool { return rel.metric(peerLimitDrops) >= 1 }, rel)
	if got := rel.postsIn(root); got != 1+3+1+3 {
		t.Fatalf("release persona posted %d times in the thread after the restart, want 8", got)
	}
}

// The bound is shared by two replicas of one persona on Postgres: five
// peer mentions in one thread, spread over both replicas' sockets, take
// three turns in all.
func TestPeersBoundSharedByReplicas(t *testing.T) {
	base := os.Getenv("AGENT_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("needs AGENT_TEST_POSTGRES_URL: .ci/run starts a PostgreSQL for it")
	}
	bin := peerBinary(t)
	dbURL := freshDatabase(t, base)
	reply := func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		if last[len(last)-1].Type == "tool_result" {
			return fake.TextReply("")
		}
		return fake.ToolUse(fmt.Sprintf("toolu_r_%d", len(msgs)), "mcp__agent_chat__reply", map[string]string{"text": "on it"})
	}
	one := newPeerApp(t, "Rel", relUser, relBot, oncUser, reply)
	one.env = []string{"AGENT_DB_URL=" + dbURL}
	one.slack.Spread = true
	two := &peerApp{t: t, name: "Rel2", user: relUser, slack: one.slack, model: one.model, home: t.TempDir(), env: one.env}
	two.log = filepath.Join(two.home, "agent.log")
	if err := os.WriteFile(filepath.Join(two.home, "SOUL.md"), []byte(peerSoul("Rel", oncUser)), 0o600); err != nil {
		t.Fatal(err)
	}
	one.start(bin)
	two.started = one.started
	two.start(bin)
	for one.slack.OpenSockets() < 2 {
		time.Sleep(10 * time.Millisecond)
	}

	root := "1600000010.000100"
	one.slack.SendEvent(fake.Message{User: "U0MGR", Channel: peerChannel, TS: root, Text: "the deploy thread"}.Payload())
	for i := range 5 {
		ts := fmt.Sprintf("1600000010.%06d", 200+i)
		one.slack.SendEvent(fake.Message{User: oncUser, BotID: oncBot, Channel: peerChannel, TS: ts, ThreadTS: root,
			Text: "<@" + relUser + "> step " + strconv.Itoa(i)}.Payload())
	}
	both := []*peerApp{one, two}
	waitFor(t, "five peer mentions settled", func() bool {
		return one.metric(peerLimitDrops)+two.metric(peerLimitDrops) >= 2 && one.postsIn(root) >= 3
	}, both...)
	if got := one.postsIn(root); got != 3 {
		t.Fatalf("two replicas posted %d times for five peer mentions, want 3 (AGENT_PEER_TURNS)", got)
	}
}
