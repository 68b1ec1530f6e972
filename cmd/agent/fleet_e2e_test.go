package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/inbox"
)

const fleetKey = "sk-ant-api03-fleet-key-0000000000"

// Fleet test sizes: 50 threads of 4 messages.
const (
	fleetThreads   = 50
	fleetMessages  = 4
	fleetApprovals = 5 // the first message of the first threads asks for a card
)

// Two replicas of one persona, the real binary twice, on one Postgres,
// against the fakes (the platform spreading envelopes over both sockets):
// 200 events over 50 threads. Clicks on approval cards land on the replica
// that is not waiting for them; one replica is restarted gracefully
// (SIGTERM: it finishes its turns and exits 0), the other is killed
// (SIGKILL) while turns run. Every event is answered once (or, cut off
// mid-post, explained), in order within its thread; nothing is doubled;
// every inbox record ends settled.
func TestReplicasExactlyOnce(t *testing.T) {
	f := newFleet(t, fleetThreads, false)
	slack, model := f.slack, f.model
	slack.Spread = true
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		if strings.Contains(string(req.Body), "hang 60 0") {
			// A turn that runs until it is stopped.
			r := fake.TextReply("")
			r.Gate = hold
			return r
		}
		return fleetRespond(req)
	}

	a := f.start("a")
	b := f.start("b")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go f.clickCards(ctx)

	root := func(th int) string { return fmt.Sprintf("%d.000100", 1700000000+th) }
	send := func(k int) {
		for th := range fleetThreads {
			text := fmt.Sprintf("m %d %d", th, k)
			if k == 0 && th < fleetApprovals {
				text = fmt.Sprintf("ask %d %d", th, k)
			}
			m := fake.Message{EventID: fmt.Sprintf("EvF%dT%d", k, th), User: "U0MGR", Channel: "D0MGR",
				TS: fmt.Sprintf("%d.%06d", 1700000000+th, 100+k), Text: text}
			if k > 0 {
				m.ThreadTS = root(th)
			}
			slack.SendEvent(m.Payload())
		}
		// Durable before the next batch: every event of this one is in the
		// inbox (the platform retries what a killed replica never acked).
		f.waitRecorded(ctx, k)
	}

	send(0)
	// The cards are clicked on the replica not waiting for them.
	f.waitApproved(ctx, root)
	// /abort typed where the turn does not run stops it where it does.
	slack.SendOn(a.conn, fake.EnvelopeEventsAPI, fake.Message{EventID: "EvHang", User: "U0MGR", Channel: "D0MGR",
		TS: root(60), Text: "hang 60 0"}.Payload(), 0)
	if !fake.Until(ctx, func() bool { return strings.Contains(f.requestsText(), "hang 60 0") }) {
		t.Fatal("the turn to stop never reached the model")
	}
	slack.SendOn(b.conn, fake.EnvelopeEventsAPI, fake.Message{EventID: "EvAbort", User: "U0MGR", Channel: "D0MGR",
		TS: fmt.Sprintf("%d.%06d", 1700000060, 101), ThreadTS: root(60), Text: "/abort"}.Payload(), 0)
	if _, err := slack.WaitForPost(ctx, func(p fake.Post) bool {
		return p.ThreadTS == root(60) && strings.HasPrefix(p.Text, "aborted: I stopped")
	}); err != nil {
		t.Fatalf("/abort at the other replica not answered: %v", err)
	}
	if !fake.Until(ctx, func() bool { return f.logged(a, "stopped a turn at another replica's /abort") }) {
		t.Fatalf("the turn at a was not stopped:\n%s", f.tail(a))
	}
	send(1)
	// A rolling restart: a stops taking events, finishes its turns, exits 0;
	// its successor joins.
	if code := f.terminate(a); code != 0 {
		t.Errorf("replica a exited %d on SIGTERM, want 0", code)
	}
	a2 := f.start("a2")
	send(2)
	// b dies with turns in flight.
	time.Sleep(150 * time.Millisecond)
	f.kill(b)
	send(3)

	f.waitSettled(ctx)
	f.checkAnswers(root)
	f.checkInbox(ctx)
	f.checkClicks()
	if !f.logged(a2, "took over the events of a replica that stopped") {
		t.Errorf("a2 never took over b's events; its log:\n%s", f.tail(a2))
	}
	f.terminate(a2)

	// What happened, for the record: who ended up owning the events, and
	// how many a replica took over from the one killed.
	owners := map[string]int{}
	rows, err := f.db.Query("SELECT owner, count(*) FROM inbox GROUP BY owner")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		var n int
		_ = rows.Scan(&o, &n)
		owners[o] = n
	}
	resumed := 0
	for _, p := range slack.Posts() {
		if p.Text == inbox.MsgResumed {
			resumed++
		}
	}
	t.Logf("200 events over 50 threads on 3 replicas (a, b, a2): inbox owners %v; %d resume lines; %d clicks on the other replica",
		owners, resumed, len(f.clicks))
	for _, owned := range owners {
		if owned == fleetThreads*fleetMessages {
			t.Errorf("one replica owns every event: the platform's spreading was not exercised")
		}
	}
}

// Two replicas behind a load balancer, the HTTP ingress instead of sockets:
// each request lands on either; the platform's retry of an event lands on
// the other one, which drops it; every message is answered once, in order
// within its thread.
func TestReplicasHTTPIngress(t *testing.T) {
	f := newFleet(t, 10, true)
	f.model.Respond = fleetRespond
	replicas := []*replica{f.start("a"), f.start("b")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := func(th int) string { return fmt.Sprintf("%d.000100", 1700000000+th) }
	post := func(r *replica, payload []byte, retry int) {
		platform := fake.EventsHTTP{Base: fmt.Sprintf("http://127.0.0.1:%d", r.port)}
		resp, err := platform.Event(ctx, payload, retry)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("replica %s answered %d", r.name, resp.StatusCode)
		}
	}
	for k := range fleetMessages {
		for th := range f.threads {
			m := fake.Message{EventID: fmt.Sprintf("EvF%dT%d", k, th), User: "U0MGR", Channel: "D0MGR",
				TS: fmt.Sprintf("%d.%06d", 1700000000+th, 100+k), Text: fmt.Sprintf("m %d %d", th, k)}
			if k > 0 {
				m.ThreadTS = root(th)
			}
			payload := m.Payload()
			r := replicas[(th+k)%2]
			post(r, payload, 0)
			if k == 1 {
				// The platform did not see the answer in time: its retry
				// goes through the load balancer to the other replica.
				post(replicas[(th+k+1)%2], payload, 1)
			}
		}
		f.waitRecorded(ctx, k)
	}
	f.waitSettled(ctx)
	f.checkAnswers(root)
	f.checkInbox(ctx)
	duplicates := 0
	for _, r := range replicas {
		b, _ := os.ReadFile(r.log)
		duplicates += strings.Count(string(b), `"reason":"duplicate"`)
	}
	if duplicates < f.threads {
		t.Errorf("%d retries dropped as duplicates, want %d", duplicates, f.threads)
	}
	for _, r := range replicas {
		if code := f.terminate(r); code != 0 {
			t.Errorf("replica %s exited %d on SIGTERM", r.name, code)
		}
	}
}

// newFleet prepares replicas of the real binary on a database of the
// test's own, against the fakes (threads of fleetMessages messages; http:
// events over the HTTP ingress). It skips without a Postgres.
func newFleet(t *testing.T, threads int, overHTTP bool) *fleet {
	base := os.Getenv("AGENT_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("needs AGENT_TEST_POSTGRES_URL: .ci/run starts a PostgreSQL for it")
	}
	if testing.Short() {
		t.Skip("builds the binary and runs two of it")
	}
	dbURL := freshDatabase(t, base)
	bin := filepath.Join(t.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	slack, model := fake.NewSlack(t), fake.NewAnthropic(t)
	slack.T, model.T = nil, nil // a killed process leaves half-done requests behind
	model.Key = fleetKey
	f := &fleet{t: t, bin: bin, dbURL: dbURL, slack: slack, model: model, db: openPG(t, dbURL), logDir: t.TempDir(),
		threads: threads, http: overHTTP}
	t.Cleanup(f.killAll)
	return f
}

// fleet runs the replicas and checks what they did.
type fleet struct {
	t      *testing.T
	bin    string
	dbURL  string
	slack  *fake.Slack
	model  *fake.Anthropic
	db     *sql.DB
	logDir string

	threads int      // threads of fleetMessages messages each
	http    bool     // events over HTTP (CHAT_SIGNING_SECRET) instead of sockets
	env     []string // more of each replica's environment

	mu       sync.Mutex
	replicas []*replica
	conns    int             // sockets opened so far
	clicked  map[string]bool // card ts → clicked
	clicks   []fleetClick
}

type replica struct {
	name string
	port int
	cmd  *exec.Cmd
	conn int // the fake's socket number
	log  string
	done chan struct{}
	code int
}

type fleetClick struct {
	thread        string
	waiter, other string // replica names
}

// start runs a replica and waits until it is healthy and its socket open.
func (f *fleet) start(name string) *replica {
	f.t.Helper()
	home := filepath.Join(f.logDir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "SOUL.md"), []byte(rulesSoul), 0o600); err != nil {
		f.t.Fatal(err)
	}
	port := freePort(f.t)
	r := &replica{name: name, port: port, log: filepath.Join(f.logDir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(r.log)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(f.bin, "start")
	cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"CHAT_BOT_TOKEN=" + fake.DefaultBotToken, "CHAT_APP_TOKEN=" + fake.DefaultAppToken, "CHAT_API_URL=" + f.slack.URL(),
		"LLM_API_KEY=" + fleetKey, "LLM_BASE_URL=" + f.model.URL(), "AGENT_MODEL=claude-test",
		"AGENT_HOME=" + home, "AGENT_DB_URL=" + f.dbURL, "AGENT_HEALTH_PORT=" + strconv.Itoa(port),
		"AGENT_LOG_LEVEL=debug", "AGENT_SANDBOX=off", "GORACE=atexit_sleep_ms=0",
	}
	cmd.Env = append(cmd.Env, f.env...)
	if f.http {
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "CHAT_APP_TOKEN=") })
		// The ingress shares the health port: the metrics go to a port
		// of each replica's own (their default, 9090, is one for all).
		cmd.Env = append(cmd.Env, "CHAT_SIGNING_SECRET="+fake.DefaultSigningSecret, "AGENT_METRICS_PORT="+strconv.Itoa(freePort(f.t)))
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	logf.Close()
	r.cmd = cmd
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		}
		close(r.done)
	}()
	f.mu.Lock()
	f.replicas = append(f.replicas, r)
	if !f.http {
		f.conns++
		r.conn = f.conns
	}
	f.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && f.slack.Connections() >= r.conn && (!f.http || f.logged(r, "http ingress started")) {
				break
			}
		}
		select {
		case <-r.done:
			f.t.Fatalf("replica %s exited early (%d):\n%s", name, r.code, f.tail(r))
		default:
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("replica %s not up:\n%s", name, f.tail(r))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its socket is ready before the next replica's opens.
	for !f.http && f.slack.OpenSockets() < f.live() {
		if time.Now().After(deadline) {
			f.t.Fatalf("replica %s: socket not ready", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
}

// live counts the replicas running.
func (f *fleet) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.replicas {
		select {
		case <-r.done:
		default:
			n++
		}
	}
	return n
}

// terminate sends SIGTERM and returns the exit code.
func (f *fleet) terminate(r *replica) int {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		f.t.Fatalf("replica %s did not stop on SIGTERM:\n%s", r.name, f.tail(r))
	}
	return r.code
}

func (f *fleet) kill(r *replica) {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

func (f *fleet) killAll() {
	for _, r := range f.replicas {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Signal(syscall.SIGKILL)
			<-r.done
		}
	}
}

// tail is the end of a replica's log.
func (f *fleet) tail(r *replica) string {
	b, _ := os.ReadFile(r.log)
	if len(b) > 15000 {
		b = b[len(b)-15000:]
	}
	return string(b)
}

func (f *fleet) logged(r *replica, text string) bool {
	b, _ := os.ReadFile(r.log)
	return strings.Contains(string(b), text)
}

// byPid finds the replica of a pid.
func (f *fleet) byPid(pid int) *replica {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.replicas {
		if r.cmd.Process.Pid == pid {
			return r
		}
	}
	return nil
}

// clickCards approves each card as it appears, on a replica other than the
// one whose turn waits for it (the owner of the thread's inbox record).
func (f *fleet) clickCards(ctx context.Context) {
	for ctx.Err() == nil {
		for _, p := range f.slack.Posts() {
			if len(p.Blocks) == 0 || !strings.Contains(string(p.Blocks), `"approve"`) {
				continue
			}
			f.mu.Lock()
			done := f.clicked[p.TS]
			f.mu.Unlock()
			if done {
				continue
			}
			var owner string
			err := f.db.QueryRowContext(ctx, `SELECT owner FROM inbox WHERE channel_id = $1 AND thread_ts = $2
				AND state IN ('running', 'answering') ORDER BY received_at DESC LIMIT 1`, p.Channel, p.ThreadTS).Scan(&owner)
			if err != nil {
				continue // not running yet, or already over
			}
			parts := strings.Split(owner, "-")
			pid, _ := strconv.Atoi(parts[len(parts)-2])
			waiter := f.byPid(pid)
			var other *replica
			f.mu.Lock()
			for _, r := range f.replicas {
				select {
				case <-r.done:
					continue
				default:
				}
				if r != waiter {
					other = r
				}
			}
			if other == nil || waiter == nil {
				f.mu.Unlock()
				continue
			}
			if f.clicked == nil {
				f.clicked = map[string]bool{}
			}
			f.clicked[p.TS] = true
			f.clicks = append(f.clicks, fleetClick{thread: p.ThreadTS, waiter: waiter.name, other: other.name})
			f.mu.Unlock()
			buttons := cardButtons(f.t, p)
			// The backup manager: the cards are in the manager's DM,
			// where no approver could click.
			f.slack.SendOn(other.conn, fake.EnvelopeInteractive, fake.BlockActions{User: "U0BACKUP", Channel: p.Channel,
				MessageTS: p.TS, ThreadTS: p.ThreadTS, ActionID: "approve", Value: buttons["approve"]}.Payload(), 0)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// requestsText is every model request's body, joined.
func (f *fleet) requestsText() string {
	var b strings.Builder
	for _, r := range f.model.Requests() {
		b.Write(r.Body)
	}
	return b.String()
}

// waitApproved waits until the turns that asked for a card answered.
func (f *fleet) waitApproved(ctx context.Context, root func(int) string) {
	f.t.Helper()
	for th := range fleetApprovals {
		_, err := f.slack.WaitForPost(ctx, func(p fake.Post) bool {
			return p.ThreadTS == root(th) && strings.HasPrefix(p.Text, fmt.Sprintf("done %d 0", th))
		})
		if err != nil {
			var logs strings.Builder
			for _, r := range f.replicas {
				fmt.Fprintf(&logs, "--- %s\n%s\n", r.name, f.tail(r))
			}
			f.t.Fatalf("thread %d: the approval turn never answered: %v\n%s", th, err, logs.String())
		}
	}
}

// waitRecorded waits until the inbox holds every event of batch k.
func (f *fleet) waitRecorded(ctx context.Context, k int) {
	f.t.Helper()
	for {
		var n int
		if err := f.db.QueryRowContext(ctx, "SELECT count(*) FROM inbox WHERE event_id LIKE $1", fmt.Sprintf("EvF%dT%%", k)).Scan(&n); err != nil {
			f.t.Fatal(err)
		}
		if n == f.threads {
			return
		}
		select {
		case <-ctx.Done():
			f.t.Fatalf("batch %d: %d of %d events recorded", k, n, f.threads)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var doneRe = regexp.MustCompile(`^done (\d+) (\d+)`)

// waitSettled waits until every thread has an answer or explanation for
// each of its messages.
func (f *fleet) waitSettled(ctx context.Context) {
	f.t.Helper()
	for {
		answered := map[string]int{}
		for _, p := range f.slack.Posts() {
			if doneRe.MatchString(p.Text) || p.Text == inbox.MsgMaybeAnswered || p.Text == inbox.MsgPoisoned {
				answered[p.ThreadTS]++
			}
		}
		settled := 0
		for _, n := range answered {
			if n >= fleetMessages {
				settled++
			}
		}
		if settled == f.threads {
			return
		}
		select {
		case <-ctx.Done():
			var logs strings.Builder
			for _, r := range f.replicas {
				fmt.Fprintf(&logs, "--- %s\n%s\n", r.name, f.tail(r))
			}
			f.t.Fatalf("%d of %d threads settled\n%s", settled, f.threads, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkAnswers: per thread, each message answered once at most, the
// answers in the order of the messages, and every message answered or
// explained.
func (f *fleet) checkAnswers(root func(int) string) {
	f.t.Helper()
	posts := f.slack.Posts()
	for th := range f.threads {
		seen := map[int]int{}
		last, explained := -1, 0
		for _, p := range posts {
			if p.ThreadTS != root(th) {
				continue
			}
			if p.Text == inbox.MsgMaybeAnswered || p.Text == inbox.MsgPoisoned {
				explained++
				continue
			}
			m := doneRe.FindStringSubmatch(p.Text)
			if m == nil {
				continue
			}
			k, _ := strconv.Atoi(m[2])
			if m[1] != strconv.Itoa(th) {
				f.t.Errorf("thread %d got the answer of thread %s: %q", th, m[1], p.Text)
			}
			seen[k]++
			if k < last {
				f.t.Errorf("thread %d: the answer to message %d came after the answer to %d", th, k, last)
			}
			last = max(last, k)
		}
		for k := range fleetMessages {
			if seen[k] > 1 {
				f.t.Errorf("thread %d: message %d answered %d times", th, k, seen[k])
			}
		}
		if len(seen)+explained != fleetMessages {
			f.t.Errorf("thread %d: %d messages answered and %d explained, want %d in all", th, len(seen), explained, fleetMessages)
			for _, p := range posts {
				if p.ThreadTS == root(th) {
					f.t.Logf("  %s %s %q", p.Method, p.TS, p.Text)
				}
			}
		}
	}
}

// checkInbox: every record settled. An answer is seen on the platform a
// moment before its record says so (the state is written after the post),
// so it waits a while for the records to catch up before it complains.
func (f *fleet) checkInbox(ctx context.Context) {
	f.t.Helper()
	f.waitInboxSettled(ctx)
	var n int
	if err := f.db.QueryRow("SELECT count(*) FROM inbox WHERE event_id LIKE 'EvF%'").Scan(&n); err != nil || n != f.threads*fleetMessages {
		f.t.Errorf("inbox holds %d of the %d events (%v)", n, f.threads*fleetMessages, err)
	}
}

// waitInboxSettled waits up to 10 s for every inbox record to reach a
// final state, then reports each one that has not.
func (f *fleet) waitInboxSettled(ctx context.Context) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var left []string
	fake.Until(ctx, func() bool { left = f.unsettled(); return len(left) == 0 })
	for _, l := range left {
		f.t.Errorf("inbox event %s", l)
	}
}

// unsettled lists the inbox records not yet in a final state, as "id left
// state".
func (f *fleet) unsettled() []string {
	f.t.Helper()
	rows, err := f.db.Query("SELECT event_id, state FROM inbox WHERE state NOT IN ('answered', 'failed', 'dropped')")
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var left []string
	for rows.Next() {
		var id, state string
		_ = rows.Scan(&id, &state)
		left = append(left, id+" left "+state)
	}
	return left
}

// checkClicks: every card was clicked on the replica not waiting for it,
// and the turn that waited said it was approved.
func (f *fleet) checkClicks() {
	f.t.Helper()
	f.mu.Lock()
	clicks := append([]fleetClick(nil), f.clicks...)
	f.mu.Unlock()
	if len(clicks) < fleetApprovals {
		f.t.Errorf("%d cards clicked, want %d", len(clicks), fleetApprovals)
	}
	for _, c := range clicks {
		if c.waiter == c.other {
			f.t.Errorf("thread %s: clicked on the waiting replica", c.thread)
		}
		approved := false
		for _, p := range f.slack.Posts() {
			if p.ThreadTS == c.thread && doneRe.MatchString(p.Text) && strings.Contains(p.Text, "approved by <@U0BACKUP>") {
				approved = true
			}
		}
		if !approved {
			f.t.Errorf("thread %s: the click on replica %s (the turn waited on %s) did not release it", c.thread, c.other, c.waiter)
		}
	}
}

// fleetMsgRe finds the manager's messages in a request's body (JSON, with
// < and > escaped): in the "<@U> (manager): words" form or in the
// envelope's (role="manager">words, pipeline.Envelope).
var fleetMsgRe = regexp.MustCompile(`(?:\(manager\): |role=\\"manager\\"(?:>|\\u003e))(m|ask) (\d+) (\d+)`)

// fleetRespond plays the model, a little slowly: "m t k" is answered
// "done t k"; "ask t k" asks for an approval first and answers with its
// outcome.
func fleetRespond(req fake.AnthropicRequest) fake.AnthropicResponse {
	time.Sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond)
	all := fleetMsgRe.FindAllStringSubmatch(string(req.Body), -1)
	if len(all) == 0 {
		return fake.TextReply("")
	}
	cur := all[len(all)-1]
	th, k := cur[2], cur[3]
	msgs := req.ParsedMessages()
	last := msgs[len(msgs)-1].Content
	b := last[len(last)-1]
	id := fmt.Sprintf("toolu_%s_%s_%d", th, k, len(msgs))
	done := func(extra string) fake.AnthropicResponse {
		return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": strings.TrimSpace("done " + th + " " + k + " " + extra)})
	}
	if b.Type != "tool_result" {
		if cur[1] == "ask" && !strings.Contains(b.Text, "[runtime]") {
			return fake.ToolUse(id, "mcp__agent_chat__request_approval", map[string]string{"category": "deploy", "summary": "deploy " + th})
		}
		return done("")
	}
	use := toolUseOf(msgs, b.ToolUseID)
	switch {
	case use.Name == "mcp__agent_chat__request_approval":
		return done(b.ResultText())
	case strings.Contains(b.ResultText(), "interrupted"):
		return done("")
	}
	return fake.TextReply("")
}

// toolUseOf finds the tool call a result answers.
func toolUseOf(msgs []fake.AnthropicMessage, id string) fake.AnthropicContent {
	var use fake.AnthropicContent
	for _, m := range msgs {
		for _, blk := range m.Content {
			if blk.Type == "tool_use" && blk.ID == id {
				use = blk
			}
		}
	}
	return use
}

// freshDatabase creates a database of the test's own on the server of
// base and drops it afterwards.
func freshDatabase(t *testing.T, base string) string {
	t.Helper()
	admin := openPG(t, base)
	name := fmt.Sprintf("fleet_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE " + name + " WITH (FORCE)"); err != nil {
			t.Errorf("drop database: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func openPG(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	t.Cleanup(func() { db.Close() })
	return db
}
