package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

const benchKey = "sk-ant-api03-bench-key-00000000000000"

const benchSoul = `# Persona

## Identity
- Name: Benchbot
- Role: release manager
- Voice: short and plain

## Reporting
- Manager: U0MGR

## Mandate
- Owns the release calendar.
`

// instant answers at once: the reply tool with "ack <text>", then the end
// of the turn once the tool's result is back.
func instant(r fake.AnthropicRequest) fake.AnthropicResponse {
	msgs := r.ParsedMessages()
	if n := len(msgs); n > 0 {
		for _, c := range msgs[n-1].Content {
			if c.Type == "tool_result" {
				return fake.TextReply("")
			}
		}
	}
	if len(r.ToolNames()) == 0 { // the minimal bot: no tools, text
		return fake.TextReply("ack " + r.LastUserText())
	}
	return fake.ToolUse("t1", "mcp__agent_chat__reply", map[string]string{"text": "ack " + spoken(r.LastUserText())})
}

// envelopeRe finds the words of the person's message in its envelope.
var envelopeRe = regexp.MustCompile(`(?s)<message from="[^"]*" role="[^"]*">(.*)</message>`)

// spoken is the person's words of text (the runtime's user message),
// without the envelope that says who spoke.
func spoken(text string) string {
	if m := envelopeRe.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return text
}

// service is one `agent start` against fresh fakes.
type service struct {
	slack   *fake.Slack
	model   *httptest.Server
	cmd     *exec.Cmd
	port    int
	started time.Time
	ready   time.Duration // start to socket connected and /readyz 200
	logs    string
	home    string

	firstCall atomic.Pointer[[]byte] // the body of a turn's first model call
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startService(bin, dir string) (*service, error) {
	home, err := os.MkdirTemp(dir, "home-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, "SOUL.md"), []byte(benchSoul), 0o600); err != nil {
		return nil, err
	}
	return startServiceIn(bin, home)
}

// startServiceIn starts the service on home, a home made by startService
// (a first start: its migrations run) or one a service started on before
// (a restart).
func startServiceIn(bin, home string) (*service, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &service{slack: &fake.Slack{}, port: port, home: home}
	s.slack.URL()
	s.model = httptest.NewServer(&fake.Anthropic{Respond: func(r fake.AnthropicRequest) fake.AnthropicResponse {
		if len(r.ToolNames()) > 0 && s.firstCall.Load() == nil {
			body := r.Body
			s.firstCall.Store(&body)
		}
		return instant(r)
	}, Key: benchKey})
	s.cmd = exec.Command(bin, "start")
	s.cmd.Env = []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"CHAT_BOT_TOKEN=" + fake.DefaultBotToken, "CHAT_APP_TOKEN=" + fake.DefaultAppToken, "CHAT_API_URL=" + s.slack.URL(),
		"LLM_API_KEY=" + benchKey, "LLM_BASE_URL=" + s.model.URL, "AGENT_MODEL=claude-test",
		"AGENT_HOME=" + home, "AGENT_HEALTH_PORT=" + strconv.Itoa(port), "AGENT_DEFAULT_MODE=bypass",
		"AGENT_LOG_LEVEL=warn", "AGENT_MAX_TURNS=1000",
	}
	if cpuProfile != "" {
		s.cmd.Env = append(s.cmd.Env, "AGENT_PPROF=1")
	}
	logs, err := os.Create(filepath.Join(home, "agent.log"))
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	s.logs = logs.Name()
	s.cmd.Stdout, s.cmd.Stderr = logs, logs
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s.started = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	err = waitFor(ctx, func() bool {
		resp, err := http.Get(readyz)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if err == nil {
		err = s.slack.WaitConnections(ctx, 1)
	}
	s.ready = time.Since(s.started)
	if err != nil {
		s.stop()
		b, _ := os.ReadFile(logs.Name())
		return nil, fmt.Errorf("agent start not ready: %v\n%s", err, b)
	}
	return s, nil
}

func (s *service) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.slack.Close()
	s.model.Close()
}

// failed adds what the service posted and logged to err.
func (s *service) failed(err error) error {
	var posts []string
	for _, p := range s.slack.Posts() {
		posts = append(posts, p.Text)
	}
	logs, _ := os.ReadFile(s.logs)
	return fmt.Errorf("%w\nposts: %q\nlog:\n%s", err, posts, logs)
}

func (s *service) metrics() string { return fmt.Sprintf("http://127.0.0.1:%d/metrics", s.port) }

// counters are the service's turn counters, read between turns.
type counters struct{ turns, turnSum, modelSum float64 }

// read scrapes the counters once.
func (s *service) read() (counters, error) {
	v, err := metrics(s.metrics(), "agent_turns_total", "agent_turn_duration_seconds_sum", "agent_model_request_duration_seconds_sum")
	if err != nil {
		return counters{}, err
	}
	return counters{turns: v[0], turnSum: v[1], modelSum: v[2]}, nil
}

// turn sends message n as a new DM thread and waits for its reply and the
// end of its turn. It returns the event-to-reply time and the turn's own
// time (turn duration minus model time, from the service's metrics:
// before, the counters as the last turn left them). The service is not
// scraped while a turn runs — a scrape costs it more than a turn does —
// but once the reply's feedback buttons are added, the last thing a turn
// does.
func (s *service) turn(n int, before counters) (reply, own time.Duration, after counters, err error) {
	text := fmt.Sprintf("bench %d", n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent := time.Now()
	s.slack.SendEvent(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: fmt.Sprintf("%d.%06d", 3000+n, n), Text: text}.Payload())
	post, err := s.slack.WaitForPost(ctx, func(p fake.Post) bool {
		return strings.HasPrefix(p.Text, "ack ") && strings.HasSuffix(p.Text, " "+text)
	})
	if err != nil {
		return 0, 0, after, s.failed(err)
	}
	reply = post.At.Sub(sent)
	if _, err := s.slack.WaitForUpdate(ctx, func(p fake.Post) bool { return p.TS == post.TS }); err != nil {
		return 0, 0, after, s.failed(fmt.Errorf("turn %d: no feedback buttons: %w", n, err))
	}
	for wait := time.Millisecond; ; wait *= 2 {
		if after, err = s.read(); err != nil {
			return 0, 0, after, err
		}
		if after.turns > before.turns {
			break
		}
		select {
		case <-ctx.Done():
			return 0, 0, after, fmt.Errorf("turn %d did not end: %w", n, ctx.Err())
		case <-time.After(wait):
		}
	}
	own = time.Duration(((after.turnSum - before.turnSum) - (after.modelSum - before.modelSum)) * float64(time.Second))
	return reply, own, after, nil
}

// profile writes a CPU profile of the service, taken over the next d, to
// path; the channel says how that went.
func (s *service) profile(path string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", s.port, int(d.Seconds()))
		resp, err := http.Get(url)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("cpu profile: %s", resp.Status)
			return
		}
		f, err := os.Create(path)
		if err == nil {
			_, err = io.Copy(f, resp.Body)
			err = errors.Join(err, f.Close())
		}
		done <- err
	}()
	return done
}

// hostPersonas is how many idle personas share the host for the PSS figure.
const hostPersonas = 10

// hostPSS starts hostPersonas-1 more idle personas beside s and returns
// each one's proportional set size after 2 s (bytes, in the type median
// takes); the others are stopped before it returns.
func hostPSS(s *service, bin, dir string) ([]time.Duration, error) {
	host := []*service{s}
	defer func() {
		for _, o := range host[1:] {
			o.stop()
		}
	}()
	for range hostPersonas - 1 {
		o, err := startService(bin, dir)
		if err != nil {
			return nil, err
		}
		host = append(host, o)
	}
	time.Sleep(2 * time.Second)
	var psses []time.Duration
	for _, o := range host {
		pss, err := smapsRollup(o.cmd.Process.Pid, "Pss")
		if err != nil {
			return nil, err
		}
		psses = append(psses, time.Duration(pss))
	}
	return psses, nil
}

func measureService(bin, dir string, runs, events, sessions int) (_ []row, err error) {
	// A first start on a fresh home (its migrations run), then restarts
	// on that home, as a persona starts again after a deploy.
	var readies, restarts []time.Duration
	for range runs {
		s, err := startService(bin, dir)
		if err != nil {
			return nil, err
		}
		readies = append(readies, s.ready)
		s.stop()
		again, err := startServiceIn(bin, s.home)
		if err != nil {
			return nil, err
		}
		restarts = append(restarts, again.ready)
		again.stop()
	}
	s, err := startService(bin, dir)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	time.Sleep(2 * time.Second)
	idle, err := vmRSS(s.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	// The part of it that is the process's own: the rest are the binary's
	// pages, in the page cache once for every persona on the host.
	anon, err := procStatus(s.cmd.Process.Pid, "RssAnon")
	if err != nil {
		return nil, err
	}
	// What a persona costs a host that runs several: each process's
	// proportional share (PSS) of the memory it maps, the binary's pages
	// divided among the personas that map them.
	psses, err := hostPSS(s, bin, dir)
	if err != nil {
		return nil, err
	}

	// Live sessions: a burst of new threads, all answered, after a first
	// burst of warmUpSessions that faults in what every turn runs (the
	// code pages of the engine, the client and the store's writes, the
	// connections' caches): those are the persona's, once, not each
	// session's.
	if err := s.burst(20000, warmUpSessions); err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	before, err := vmRSS(s.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	liveBefore, _ := metric(s.metrics(), "agent_sessions_live")
	if err := s.burst(10000, sessions); err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	after, err := vmRSS(s.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	live, _ := metric(s.metrics(), "agent_sessions_live")
	added := max(live-liveBefore, 1)

	// Warm up, then one event at a time, each followed by one of the
	// minimal bot's (started once the service's first model call, which it
	// copies, is known).
	c, err := s.read()
	if err != nil {
		return nil, err
	}
	for i := range 20 {
		if _, _, c, err = s.turn(i, c); err != nil {
			return nil, err
		}
	}
	call := s.firstCall.Load()
	if call == nil {
		return nil, errors.New("no model call recorded")
	}
	bot, err := newMinimalBot(dir, *call)
	if err != nil {
		return nil, fmt.Errorf("minimal bot: %w", err)
	}
	defer bot.stop()
	for i := range 20 {
		if _, err := bot.one(i); err != nil {
			return nil, fmt.Errorf("minimal bot: %w", err)
		}
	}
	// Each event is sent after a short pause, so that what the other's
	// last event left running (a turn's tail, its writes) is over.
	const settle = 5 * time.Millisecond
	var replies, owns, base []time.Duration
	if cpuProfile != "" {
		profiled := s.profile(cpuProfile, 5*time.Second)
		defer func() { err = errors.Join(err, <-profiled) }()
	}
	for i := range events {
		time.Sleep(settle)
		var r, o time.Duration
		if r, o, c, err = s.turn(100+i, c); err != nil {
			return nil, err
		}
		replies = append(replies, r)
		owns = append(owns, o)
		time.Sleep(settle)
		b, err := bot.one(100 + i)
		if err != nil {
			return nil, fmt.Errorf("minimal bot: %w", err)
		}
		base = append(base, b)
	}
	p50 := percentile(replies, 50)
	return []row{
		{"`agent start` to ready (socket connected, `/readyz` 200), fakes, a fresh home (its migrations run)", "≤ 50 ms", ms(median(readies))},
		{"… the same home started again (a restart: nothing to migrate)", "—", ms(median(restarts))},
		{"Idle `agent start`: RSS 2 s after ready", "—", mib(idle)},
		{"… of which its own memory (RssAnon; the rest is the binary's pages, shared through the page cache)", "< 5.5 MiB", mib(anon)},
		{fmt.Sprintf("Idle `agent start`, %d personas on one host: PSS of each (their shared pages divided among them)", hostPersonas), "< 8 MiB", mib(int64(median(psses)))},
		{fmt.Sprintf("RSS per live session (%.0f new sessions, after %d to warm up)", added, warmUpSessions), "≤ 64 KiB", fmt.Sprintf("%.0f KiB", float64(after-before)/added/1024)},
		{"Event to reply, instant model: p50 / p99", fmt.Sprintf("p50 ≤ 2× the minimal bot (%s)", ms(2*percentile(base, 50))),
			fmt.Sprintf("%s / %s", ms(p50), ms(percentile(replies, 99)))},
		{"Minimal bot (ack, the same model call, post), same fakes, its events sent between the service's: p50 / p99", "—",
			fmt.Sprintf("%s / %s", ms(percentile(base, 50)), ms(percentile(base, 99)))},
		{"The runtime's own time per turn (turn minus model time, from its metrics): p50 / p99", "p50 ≤ 1 ms",
			fmt.Sprintf("%s / %s", ms(percentile(owns, 50)), ms(percentile(owns, 99)))},
	}, nil
}

// warmUpSessions is how many threads the service answers before the
// per-session memory is measured.
const warmUpSessions = 20

// burst opens n new threads at once, numbered from first, and waits until
// every one is answered.
func (s *service) burst(first, n int) error {
	for i := range n {
		k := first + i
		s.slack.SendEvent(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: fmt.Sprintf("%d.%06d", 3000+k, k), Text: fmt.Sprintf("bench %d", k)}.Payload())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var answered atomic.Int64
	err := waitFor(ctx, func() bool {
		c := 0
		for _, p := range s.slack.Posts() {
			// "ack " and the words as the model read them, "bench <k>" last.
			_, num, ok := strings.Cut(p.Text, "bench ")
			k, err := strconv.Atoi(num)
			if strings.HasPrefix(p.Text, "ack ") && ok && err == nil && k >= first && k < first+n {
				c++
			}
		}
		answered.Store(int64(c))
		return c >= n
	})
	if err != nil {
		return fmt.Errorf("%d of %d session threads answered: %w", answered.Load(), n, err)
	}
	return nil
}
