package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sandbox"
)

// The abuse suite, the network: under the default AGENT_SANDBOX_NET
// (allowlist), nothing a command runs reaches a host that "## Network" or
// a card did not allow, through the real service and sandbox, as root
// and as an unprivileged user (as root, the second case runs this test
// binary again as nobody).
func TestAbuseNetwork(t *testing.T) {
	t.Run("as the tests' user", func(t *testing.T) {
		if os.Getenv(abuseAsEnv) != "" {
			t.Skip("the re-executed binary runs the unprivileged case only")
		}
		networkScenario(t)
	})
	t.Run("as an unprivileged user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			networkScenario(t)
			return
		}
		if sandbox.LandlockABI() == 0 {
			t.Skip("the kernel has no Landlock: the abuse suite needs it (AGENT_SANDBOX=required)")
		}
		bin := fake.CopyTestBinary(t, "agent.test")
		child := exec.Command(bin, "-test.run=^TestAbuseNetwork$/^as_an_unprivileged_user$", "-test.count=1", "-test.v")
		child.Dir = filepath.Dir(bin)
		child.Env = []string{abuseAsEnv + "=1", "PATH=" + os.Getenv("PATH"), "TMPDIR=/tmp", "GORACE=atexit_sleep_ms=0"}
		child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := child.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestAbuseNetwork/as_an_unprivileged_user")) {
			t.Fatalf("as nobody: %v\n%s", err, out)
		}
	})
}

// netWorld is what the network scenario reaches for: a web server on the
// host's loopback (the operator maps allowed.test and asked.test to it;
// it serves a git repository over HTTP too), and a UDP listener. hits
// counts the requests the web server got.
type netWorld struct {
	web    *http.Server
	port   int
	udp    net.PacketConn
	hits   atomic.Int64
	dgrams chan string
}

func newNetWorld(t *testing.T) *netWorld {
	t.Helper()
	w := &netWorld{dgrams: make(chan string, 8)}
	// A bare repository, served by git's dumb HTTP protocol.
	repo := filepath.Join(t.TempDir(), "repo.git")
	work := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "the sources"},
		{"clone", "-q", "--bare", work, repo},
		{"-C", repo, "update-server-info"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/repo.git/", http.StripPrefix("/repo.git/", http.FileServer(http.Dir(repo))))
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, "hello from %s", r.Host)
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.port = ln.Addr().(*net.TCPAddr).Port
	w.web = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.hits.Add(1)
		mux.ServeHTTP(rw, r)
	})}
	go func() { _ = w.web.Serve(ln) }()
	t.Cleanup(func() { w.web.Close() })
	if w.udp, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.udp.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := w.udp.ReadFrom(buf)
			if err != nil {
				return
			}
			w.dgrams <- string(buf[:n])
		}
	}()
	return w
}

// netSoul lists allowed.test on the web server's port and localhost,
// which the operator did not map; U0NET may approve network cards. The
// team's channel runs in accept-edits (no card: a refusal), C0ASK in
// ask (the default).
func netSoul(port int) string {
	return gatekeeperSoul + fmt.Sprintf(`
## Allowed channels
- <#C0ASK>

## Channel <#C0TEAM|team>
- Mode: accept-edits

## Approvers
- <@U0NET>: network

## Network
- allowed.test:%[1]d
- localhost:%[1]d
`, port)
}

// scriptCommands makes the model run, for a message holding "cmd:<name>",
// the Bash command of that name, and reply "RESULT <its output>".
func (h *harness) scriptCommands(commands map[string]string) {
	var mu sync.Mutex
	n := 0
	key := regexp.MustCompile(`cmd:([a-z0-9-]+)`)
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		mu.Lock()
		defer mu.Unlock()
		n++
		if res, isErr, ok := lastResult(req); ok {
			msgs := req.ParsedMessages()
			prev := msgs[len(msgs)-2].Content
			if prev[len(prev)-1].Name != "Bash" {
				return fake.TextReply("")
			}
			return say(fmt.Sprintf("toolu_r%d", n))("RESULT "+res, isErr)
		}
		m := key.FindStringSubmatch(req.LastUserText())
		if m == nil {
			return fake.TextReply("no command")
		}
		return fake.ToolUse(fmt.Sprintf("toolu_b%d", n), "Bash", map[string]any{"command": commands[m[1]]})
	}
}

func networkScenario(t *testing.T) {
	if sandbox.LandlockABI() == 0 {
		t.Skip("the kernel has no Landlock: the abuse suite needs it (AGENT_SANDBOX=required)")
	}
	for _, tool := range []string{"curl", "git", "getent"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	w := newNetWorld(t)
	h := newHarness(t, netSoul(w.port))
	h.env["AGENT_SANDBOX"] = "required"
	h.env["AGENT_AUTO_ALLOW_TOOLS"] = "Bash" // ask mode: only the network asks
	h.env["AGENT_EGRESS_HOSTS"] = "allowed.test=127.0.0.1, asked.test=127.0.0.1"
	h.env["PATH"] = os.Getenv("PATH")
	p := w.port
	h.scriptCommands(map[string]string{
		"direct":   fmt.Sprintf(`curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:%d/ 2>&1; bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo connected' 2>&1; echo end`, p, p),
		"unlisted": `curl -sS --max-time 20 http://unlisted.test/ 2>&1; echo; curl -sS --max-time 20 https://unlisted.test/ 2>&1; echo end`,
		"listed":   fmt.Sprintf(`curl -sS --max-time 20 http://allowed.test:%d/ 2>&1; echo end`, p),
		"clone":    fmt.Sprintf(`git clone -q http://allowed.test:%d/repo.git src 2>&1 && git -C src log --format=%%s 2>&1; echo end`, p),
		"dns-udp":  fmt.Sprintf(`getent hosts example.com || echo no-dns; echo leak > /dev/udp/127.0.0.1/%d; echo end`, w.udp.LocalAddr().(*net.UDPAddr).Port),
		"loopname": fmt.Sprintf(`curl -sS --max-time 20 http://localhost:%d/ 2>&1; echo end`, p),
		"unset":    fmt.Sprintf(`unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy; curl -sS --max-time 5 http://allowed.test:%d/ 2>&1; curl -sS --max-time 5 http://127.0.0.1:%d/ 2>&1; echo end`, p, p),
		"asked":    fmt.Sprintf(`curl -sS --max-time 60 http://asked.test:%d/ 2>&1; echo end`, p),
		"again":    fmt.Sprintf(`echo again; curl -sS --max-time 60 http://asked.test:%d/ 2>&1; echo end`, p),
	})
	// A stdio tool server's outbound calls, made as it starts (it then
	// exits: the runtime logs it and goes on without it).
	server := fmt.Sprintf(`curl -sS --max-time 20 http://unlisted.test/ 2>&1; echo; curl -sS --max-time 20 http://allowed.test:%[1]d/ 2>&1; echo; `+
		`curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:%[1]d/ 2>&1; echo done`, p)
	conf := fmt.Sprintf(`{"mcpServers": {"fetcher": {"command": "/bin/sh", "args": ["-c", %q]}}}`, "{ "+server+`; } > "$HOME/out"`)
	if err := os.WriteFile(filepath.Join(h.home, "mcp.json"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.waitLog("net allowlist")
	serverOut := filepath.Join(h.home, "tool-servers", "fetcher", "out")
	var out []byte
	if !fake.Eventually(20*time.Second, func() bool {
		out, _ = os.ReadFile(serverOut)
		return bytes.Contains(out, []byte("done"))
	}) {
		t.Fatalf("the tool server did not finish: %q\nlogs:\n%s", out, h.logs)
	}
	if s := string(out); !strings.Contains(s, "allowlist: unlisted.test") || !strings.Contains(s, fmt.Sprintf("hello from allowed.test:%d", p)) ||
		strings.Count(s, "hello from") != 1 {
		t.Errorf("the tool server's calls: %q", s)
	}

	run := func(thread, name string) string {
		t.Helper()
		h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: thread, Text: "<@U0BOT> cmd:" + name})
		return h.expectReply("C0TEAM", thread, "RESULT ").Text
	}
	hitsBefore := w.hits.Load()
	refused := func() float64 { return h.metric(`agent_egress_requests_total{outcome="refused"}`) }

	// A direct connection to a server listening on the host's loopback.
	if got := run("600.1", "direct"); strings.Contains(got, "hello from") || strings.Contains(got, "connected") {
		t.Errorf("direct connection reached the host: %q", got)
	}
	// An unlisted host through the proxy: the pinned 403, over HTTP and
	// HTTPS (CONNECT), counted and logged with its thread.
	if got := run("600.2", "unlisted"); strings.Count(got, "blocked by the persona&#39;s network allowlist: unlisted.test")+
		strings.Count(got, "blocked by the persona's network allowlist: unlisted.test") < 1 || !strings.Contains(got, "403") && !strings.Contains(got, "blocked") {
		t.Errorf("unlisted host: %q", got)
	}
	if !fake.Eventually(5*time.Second, func() bool { return refusalLogged(h.logs.String(), "unlisted.test", "600.2") }) {
		t.Errorf("no refusal line with the host and the thread:\n%s", h.logs)
	}
	// A DNS query and a UDP datagram.
	if got := run("600.3", "dns-udp"); !strings.Contains(got, "no-dns") {
		t.Errorf("dns answered: %q", got)
	}
	select {
	case d := <-w.dgrams:
		t.Errorf("a datagram reached the host: %q", d)
	case <-time.After(100 * time.Millisecond):
	}
	// A listed name that resolves to loopback without the operator's map.
	if got := run("600.4", "loopname"); !strings.Contains(got, "allowlist: localhost") || strings.Contains(got, "hello from") {
		t.Errorf("localhost through the proxy: %q", got)
	}
	// The proxy variables unset: no way out at all.
	if got := run("600.5", "unset"); strings.Contains(got, "hello from") {
		t.Errorf("without the proxy variables: %q", got)
	}
	if n := w.hits.Load(); n != hitsBefore {
		t.Fatalf("the web server got %d requests from refused commands", n-hitsBefore)
	}
	if r := refused(); r < 3 {
		t.Errorf("refused requests counted %v, want at least 3", r)
	}
	// Honest work: a listed host by curl and by git clone over HTTP.
	if got := run("600.6", "listed"); !strings.Contains(got, fmt.Sprintf("hello from allowed.test:%d", p)) {
		t.Errorf("listed host: %q", got)
	}
	if got := run("600.7", "clone"); !strings.Contains(got, "the sources") {
		t.Errorf("git clone of a listed host: %q", got)
	}
	if a := h.metric(`agent_egress_requests_total{outcome="allowed"}`); a < 2 {
		t.Errorf("allowed requests counted %v", a)
	}
	t.Logf("before the cards: refused %v, allowed %v", refused(), h.metric(`agent_egress_requests_total{outcome="allowed"}`))

	// Ask mode: an unlisted host holds the connection while a card asks;
	// approved, the thread keeps it (across a restart), another thread
	// does not.
	asked := fmt.Sprintf("asked.test:%d", p)
	askRun := func(thread string) {
		h.send(fake.Message{User: "U0ALICE", Channel: "C0ASK", TS: thread, Text: "<@U0BOT> cmd:asked"})
	}
	card := func(thread string) fake.Post {
		t.Helper()
		c, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
			return p.ThreadTS == thread && strings.Contains(string(p.Blocks)+p.Text, "Allow "+asked+" for this thread?")
		})
		if err != nil {
			t.Fatalf("no network card in %s: %v\nposts %+v", thread, err, h.slack.Posts())
		}
		return c
	}
	askRun("601.1")
	h.click("U0NET", card("601.1"), "approve")
	if got := h.expectReply("C0ASK", "601.1", "RESULT ").Text; !strings.Contains(got, "hello from "+asked) {
		t.Errorf("approved host: %q", got)
	}
	cards := func() int {
		n := 0
		for _, p := range h.slack.Posts() {
			if strings.Contains(string(p.Blocks)+p.Text, "for this thread?") {
				n++
			}
		}
		return n
	}
	before := cards()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.send(fake.Message{User: "U0ALICE", Channel: "C0ASK", TS: "601.3", ThreadTS: "601.1", Text: "<@U0BOT> cmd:again"})
	if _, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return p.ThreadTS == "601.1" && strings.Contains(p.Text, "RESULT again") && strings.Contains(p.Text, "hello from "+asked)
	}); err != nil {
		t.Fatalf("the approved host, again after a restart: %v\nlogs %s", err, h.logs)
	}
	if n := cards(); n != before {
		t.Errorf("the approved host asked again: %d cards, want %d", n, before)
	}
	askRun("601.2")
	h.click("U0NET", card("601.2"), "deny")
	if got := h.expectReply("C0ASK", "601.2", "RESULT ").Text; strings.Contains(got, "hello from") || !strings.Contains(got, "allowlist: "+asked) {
		t.Errorf("denied in another thread: %q", got)
	}
	t.Logf("after the restart: refused %v, allowed %v", refused(), h.metric(`agent_egress_requests_total{outcome="allowed"}`))
}

// refusalLogged reports whether logs hold a refusal line naming host and
// the thread of ts.
func refusalLogged(logs, host, ts string) bool {
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "egress refused") && strings.Contains(line, host) && strings.Contains(line, ts) {
			return true
		}
	}
	return false
}
