package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/inbox"
)

// chaosIterations is how many times the chaos test kills the runtime.
const chaosIterations = 30

const chaosKey = "sk-ant-api03-chaos-key-0000000000"

// The chaos test: the real binary against the fakes, the model slow, and
// SIGKILL at a random point of the turns running — before the model call,
// during it, between a tool call and its result, during an approval wait,
// after the reply was posted. Every acknowledged message ends with exactly
// one answer or one explanation, no reply is doubled, and a side effect
// (a Bash that appends to a file) runs twice only if the model was told
// that the first run was interrupted.
func TestChaosKillMidTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test builds and restarts the binary")
	}
	bin := filepath.Join(t.TempDir(), "agent")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	slack, model := fake.NewSlack(t), fake.NewAnthropic(t)
	slack.T, model.T = nil, nil // a killed process leaves half-done requests behind
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "SOUL.md"), []byte(rulesSoul), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &chaos{t: t, bin: bin, home: home, tmp: t.TempDir(), slack: slack, model: model, port: freePort(t), logs: filepath.Join(home, "runs.log")}
	model.Respond, model.Key = c.respond, chaosKey

	started := time.Now()
	type thread struct {
		n  int
		ts string
	}
	var threads []thread
	n := 0
	for i := 0; i < chaosIterations; i++ {
		c.start()
		// Two new messages per run: a plain one (Bash, then reply) and,
		// every third run, one that waits on an approval card.
		for k := 0; k < 2; k++ {
			n++
			ts := fmt.Sprintf("%d.%d", 1000+n, n)
			approval := k == 1 && i%3 == 0
			text := fmt.Sprintf("chaos %d", n)
			if approval {
				text += " approval"
			}
			env := slack.SendEvent(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: ts, Text: text}.Payload())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := slack.WaitAck(ctx, env)
			cancel()
			if err != nil {
				c.fatalf("message %d not acked: %v", n, err)
			}
			threads = append(threads, thread{n, ts})
		}
		// Kill somewhere in the turns: they take 0.2–1 s with this model.
		time.Sleep(time.Duration(rand.IntN(900)) * time.Millisecond)
		c.kill()
	}
	// A last run without a kill settles everything.
	c.start()
	deadline := time.Now().Add(60 * time.Second)
	for _, th := range threads {
		for !c.settled(th.ts) {
			if time.Now().After(deadline) {
				c.fatalf("thread %d (%s) never got an answer or an explanation: %q", th.n, th.ts, c.texts(th.ts))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.waitSettled()
	c.kill()

	var resumed, poisoned, maybe, effectsTwice, counted int
	for _, th := range threads {
		texts := c.texts(th.ts)
		done, poison, maybeAns := 0, 0, 0
		for _, s := range texts {
			switch {
			case strings.HasPrefix(s, fmt.Sprintf("done %d", th.n)):
				done++
			case s == inbox.MsgPoisoned:
				poison++
			case s == inbox.MsgMaybeAnswered:
				maybeAns++
			case s == inbox.MsgResumed:
				resumed++
			}
		}
		if done+poison+maybeAns != 1 {
			t.Errorf("thread %d: %d answers, %d poison lines, %d cut-off lines, want exactly one in all: %q", th.n, done, poison, maybeAns, texts)
		}
		switch k := c.userMessages(th.n); {
		case k > 1:
			t.Errorf("thread %d: the user's message is %d times in the conversation", th.n, k)
		case k == 1:
			counted++
		}
		poisoned += poison
		maybe += maybeAns
		if runs := c.effects(th.ts, th.n); runs > 1 {
			effectsTwice++
			if !c.toldInterrupted(th.n) {
				t.Errorf("thread %d: the side effect ran %d times and the model was never told of an interruption", th.n, runs)
			}
		}
	}
	if counted == 0 {
		t.Error("no conversation showed the user's message: the check above counts nothing")
	}
	// The inbox settled everything.
	for _, r := range c.inbox() {
		if !inboxSettled(r.State) {
			t.Errorf("inbox event %s left %s", r.EventID, r.State)
		}
		if r.State == "failed" && r.TraceID == "" {
			t.Errorf("failed event %s has no trace id", r.EventID)
		}
	}
	logs, _ := os.ReadFile(c.logs)
	readBack := strings.Count(string(logs), "the answer had landed before the stop")
	t.Logf("%d kills, %d messages in %v: %d resume lines, %d given up after two crashes, %d answers cut off mid-post read back from the thread, %d told as maybe answered, %d side effects repeated after the model was told",
		chaosIterations, len(threads), time.Since(started).Round(time.Millisecond), resumed, poisoned, readBack, maybe, effectsTwice)
}

// chaos runs the binary and plays the model.
type chaos struct {
	t     *testing.T
	bin   string
	home  string
	tmp   string // the runs' TMPDIR: a killed run leaves its commands' there
	slack *fake.Slack
	model *fake.Anthropic
	port  int
	logs  string
	runs  int

	cmd *exec.Cmd
}

func (c *chaos) fatalf(format string, args ...any) {
	c.t.Helper()
	logs, _ := os.ReadFile(c.logs)
	if len(logs) > 20000 {
		logs = logs[len(logs)-20000:]
	}
	c.t.Fatalf(format+"\nlast logs:\n%s", append(args, logs)...)
}

// start starts the binary and waits until it is healthy and connected.
func (c *chaos) start() {
	c.t.Helper()
	c.runs++
	logf, err := os.OpenFile(c.logs, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(logf, "--- run %d\n", c.runs)
	cmd := exec.Command(c.bin, "start")
	cmd.Env = []string{
		"HOME=" + c.home, "PATH=" + os.Getenv("PATH"),
		"CHAT_BOT_TOKEN=" + fake.DefaultBotToken, "CHAT_APP_TOKEN=" + fake.DefaultAppToken, "CHAT_API_URL=" + c.slack.URL(),
		"LLM_API_KEY=" + chaosKey, "LLM_BASE_URL=" + c.model.URL(), "AGENT_MODEL=claude-test",
		"AGENT_HOME=" + c.home, "AGENT_HEALTH_PORT=" + strconv.Itoa(c.port), "AGENT_DEFAULT_MODE=bypass",
		"AGENT_LOG_LEVEL=debug", "GORACE=atexit_sleep_ms=0", "TMPDIR=" + c.tmp,
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	logf.Close()
	c.cmd = cmd
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", c.port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if ctx.Err() != nil {
			c.fatalf("run %d not healthy", c.runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.slack.WaitConnections(ctx, c.runs); err != nil {
		c.fatalf("run %d not connected: %v", c.runs, err)
	}
}

// kill ends the binary with SIGKILL.
func (c *chaos) kill() {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
	c.cmd = nil
}

// waitSettled waits until the inbox has every event settled: each turn
// has ended, so nothing more reaches the model or the threads.
func (c *chaos) waitSettled() {
	c.t.Helper()
	settled := func() bool {
		for _, r := range c.inbox() {
			if !inboxSettled(r.State) {
				return false
			}
		}
		return true
	}
	if !fake.Eventually(60*time.Second, settled) {
		c.fatalf("the inbox did not settle: %+v", c.inbox())
	}
}

// inboxSettled reports whether an inbox event in state is done with.
func inboxSettled(state string) bool {
	return state == "answered" || state == "failed" || state == "dropped"
}

// inbox is the inbox as `agent inbox --json` prints it.
func (c *chaos) inbox() []inboxRecord {
	c.t.Helper()
	cmd := exec.Command(c.bin, "inbox", "--json")
	cmd.Env = []string{"HOME=" + c.home, "AGENT_HOME=" + c.home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("agent inbox: %v\n%s", err, out)
	}
	var records []inboxRecord
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var r inboxRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			c.t.Fatalf("agent inbox line %q: %v", line, err)
		}
		records = append(records, r)
	}
	return records
}

// texts are the texts posted in the DM thread at ts.
func (c *chaos) texts(ts string) []string {
	var out []string
	for _, p := range c.slack.Posts() {
		if p.Channel == "D0MGR" && p.ThreadTS == ts {
			out = append(out, p.Text)
		}
	}
	return out
}

// settled reports whether the thread got its answer or an explanation.
func (c *chaos) settled(ts string) bool {
	for _, s := range c.texts(ts) {
		if strings.HasPrefix(s, "done ") || s == inbox.MsgPoisoned || s == inbox.MsgMaybeAnswered {
			return true
		}
	}
	return false
}

// effects counts the side effect's runs for message n.
func (c *chaos) effects(ts string, n int) int {
	f, err := os.Open(filepath.Join(c.home, "workspaces", "D0MGR_"+ts, "effects.txt"))
	if err != nil {
		return 0
	}
	defer f.Close()
	runs := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sc.Text() == strconv.Itoa(n) {
			runs++
		}
	}
	return runs
}

// toldInterrupted reports whether a request about message n carried the
// runtime's note on an interrupted call.
func (c *chaos) toldInterrupted(n int) bool {
	for _, r := range c.model.Requests() {
		if chaosMessage(r) == n && strings.Contains(string(r.Body), "This call was interrupted") {
			return true
		}
	}
	return false
}

// userMessages counts the user's message in the last request about
// message n: a resumed turn must not store it again.
func (c *chaos) userMessages(n int) int {
	var last []byte
	for _, r := range c.model.Requests() {
		if chaosMessage(r) == n {
			last = r.Body
		}
	}
	return len(regexp.MustCompile(fmt.Sprintf(chaosEnvelope, strconv.Itoa(n))).FindAll(last, -1))
}

// chaosEnvelope matches the manager's "chaos <n>" message in its envelope
// as a request's JSON carries it (the encoder may escape < and >).
const chaosEnvelope = `role=\\"manager\\"(?:>|\\u003e)chaos (%s)( approval)?(?:<|\\u003c)/message`

var chaosRe = regexp.MustCompile(fmt.Sprintf(chaosEnvelope, `\d+`))

// chaosMessage is the n of the conversation's "chaos <n>" message.
func chaosMessage(r fake.AnthropicRequest) int {
	m := chaosRe.FindSubmatch(r.Body)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

var chaosMu sync.Mutex

// respond plays a careful model, slowly: for "chaos <n>" it appends n to
// effects.txt with Bash (or first asks for an approval), then replies
// "done <n>". Told that a call was interrupted, it checks the file
// instead of appending again.
func (c *chaos) respond(req fake.AnthropicRequest) fake.AnthropicResponse {
	time.Sleep(time.Duration(50+rand.IntN(200)) * time.Millisecond)
	chaosMu.Lock()
	defer chaosMu.Unlock()
	n := chaosMessage(req)
	approval := strings.Contains(string(req.Body), fmt.Sprintf("chaos %d approval", n))
	msgs := req.ParsedMessages()
	last := msgs[len(msgs)-1].Content
	b := last[len(last)-1]
	id := fmt.Sprintf("toolu_%d_%d", n, len(msgs))
	done := fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": fmt.Sprintf("done %d", n)})
	if b.Type != "tool_result" {
		if strings.Contains(b.Text, "[runtime]") { // the stop guard
			return done
		}
		if approval {
			return fake.ToolUse(id, "mcp__agent_chat__request_approval", map[string]string{"category": "deploy", "summary": fmt.Sprintf("deploy %d", n)})
		}
		return fake.ToolUse(id, "Bash", map[string]string{"command": fmt.Sprintf("echo %d >> effects.txt", n)})
	}
	use := toolUseOf(msgs, b.ToolUseID)
	switch {
	case strings.Contains(b.ResultText(), "interrupted"):
		return fake.ToolUse(id, "Bash", map[string]string{"command": fmt.Sprintf("grep -c '^%d$' effects.txt || true", n)})
	case use.Name == "mcp__agent_chat__reply":
		return fake.TextReply("")
	case use.Name == "mcp__agent_chat__request_approval":
		return fake.ToolUse(id, "Bash", map[string]string{"command": fmt.Sprintf("echo %d >> effects.txt", n)})
	default:
		return done
	}
}
