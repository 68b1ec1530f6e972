package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sim/runner"
	"github.com/persona-runtime/agent/pkg/persona"
)

// rolesSoul has approvers of narrow scopes beside one of anything: roles
// must mean what they say (issue 23, part 3).
const rolesSoul = gatekeeperSoul + `
## Approvers
- <@U0APP>: anything
- <@U0SKL>: skills
- <@U0MODE>: mode
`

// modeRefused is the pinned refusal of /mode (interfaces.md, "Doors").
const modeRefused = "only the manager or an approver with scope mode can change the mode"

// holdLongJobs makes the model answer every turn with "done: <words>"; a
// turn whose words contain "long job" is held at its first model call until
// the returned release is called. held is closed once such a call waits.
func (h *harness) holdLongJobs() (held <-chan struct{}, release func()) {
	gate, waiting := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var n atomic.Int64
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		if last[len(last)-1].Type == "tool_result" {
			return fake.TextReply("")
		}
		words := req.LastUserText()
		resp := fake.ToolUse("toolu_"+strconv.FormatInt(n.Add(1), 10), "mcp__agent_chat__reply", map[string]string{"text": "done: " + words})
		if strings.Contains(words, "long job") {
			resp.Gate = gate
			once.Do(func() { close(waiting) })
		}
		return resp
	}
	return waiting, func() { close(gate) }
}

// slash sends a slash command typed in channel.
func (h *harness) slash(user, channel, command, text string) {
	h.slack.Send(fake.EnvelopeSlashCommands, fake.SlashCommand{Command: command, Text: text, User: user, Channel: channel}.Payload(), 0)
}

// An approver for skills decides skills cards, not how every tool of a
// thread is gated: their /mode bypass is refused with the pinned text, typed
// in a thread and as the slash command; an approver of scope mode may.
func TestAbuseScopedApproverModeBypass(t *testing.T) {
	h := newHarness(t, rolesSoul)
	h.answerAll()
	h.start()

	h.send(fake.Message{User: "U0SKL", Channel: "C0TEAM", TS: "400.1", Text: "<@U0BOT> /mode bypass"})
	if p := h.expectNotice("C0TEAM", "400.1", modeRefused); p.Text != modeRefused {
		t.Errorf("refusal = %q, want %q", p.Text, modeRefused)
	}
	h.send(fake.Message{User: "U0SKL", Channel: "C0TEAM", TS: "400.2", ThreadTS: "400.1", Text: "/mode"})
	h.expectNotice("C0TEAM", "400.1", "This thread's permission mode is `ask`.\nusage: /mode ask|accept-edits|bypass|plan|dont-ask")

	h.slash("U0SKL", "C0TEAM", "/mode", "bypass")
	if p := h.expectNotice("C0TEAM", "", modeRefused); p.Text != modeRefused {
		t.Errorf("slash refusal = %q, want %q", p.Text, modeRefused)
	}
	h.slash("U0SKL", "C0TEAM", "/mode", "")
	h.expectNotice("C0TEAM", "", "This channel's permission mode is `ask`.")

	// The approver of scope mode may; what they set is what a thread gets.
	h.send(fake.Message{User: "U0MODE", Channel: "C0TEAM", TS: "401.1", Text: "<@U0BOT> /mode plan"})
	h.expectNotice("C0TEAM", "401.1", "`plan` (set by <@U0MODE>)")
	h.send(fake.Message{User: "U0MODE", Channel: "C0TEAM", TS: "401.2", ThreadTS: "401.1", Text: "/mode"})
	h.expectNotice("C0TEAM", "401.1", "This thread's permission mode is `plan`.")
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("commands reached the model %d times", n)
	}
}

// A member's slash /abort would stop every turn of the channel: refused,
// and the running turn goes on to answer.
func TestAbuseMemberSlashAbort(t *testing.T) {
	h := newHarness(t, rolesSoul)
	held, release := h.holdLongJobs()
	h.start()

	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "500.1", Text: "<@U0BOT> long job"})
	<-held
	h.slash("U0BOB", "C0TEAM", "/abort", "")
	h.expectNotice("C0TEAM", "", "unauthorized: only the manager, the backup manager or an approver can stop every turn in this channel")
	h.slash("U0ALICE", "C0TEAM", "/abort", "") // the slash form is channel-wide: even the starter's is refused
	h.waitLog(`"msg":"command refused","command":"/abort","user_id":"U0ALICE"`)
	release()
	h.expectReply("C0TEAM", "500.1", "long job")
	if got := h.metric(`agent_turns_total{outcome="aborted"}`); got != 0 {
		t.Fatalf("turns aborted = %v, want 0", got)
	}
}

// Typed in a thread, /abort stops the running turn only for the person who
// started it (or a manager, an approver): a member's /abort in another
// person's thread, in any spelling, is refused and the turn goes on; the
// starter's own stops it.
func TestAbuseMemberAbortInAnothersThread(t *testing.T) {
	h := newHarness(t, rolesSoul)
	held, release := h.holdLongJobs()
	defer release()
	h.start()

	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "600.1", Text: "<@U0BOT> long job"})
	<-held
	refused := "unauthorized: only the person who started this turn"
	for i, text := range []string{"/abort", "/ABORT", "<@U0BOT> /abort now"} {
		ts := "600." + strconv.Itoa(i+2)
		h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: ts, ThreadTS: "600.1", ParentUserID: "U0ALICE", Text: text})
		h.expectNotice("C0TEAM", "600.1", refused)
		h.waitLog(`"msg":"command refused","command":"/abort","user_id":"U0BOB"`)
	}
	if got := h.metric(`agent_turns_total{outcome="aborted"}`); got != 0 {
		t.Fatalf("a member's /abort stopped another's turn: aborted = %v", got)
	}
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "600.9", ThreadTS: "600.1", ParentUserID: "U0ALICE", Text: "/abort"})
	h.expectNotice("C0TEAM", "600.1", "aborted: I stopped the running turn")
	h.waitMetric(`agent_turns_total{outcome="aborted"}`, 1)
	for _, p := range h.slack.Posts() {
		if strings.HasPrefix(p.Text, "done:") {
			t.Fatalf("the stopped turn answered: %q", p.Text)
		}
	}
}

// A member's slash /1on1 would lock the whole channel to them: refused, and
// the channel stays open. Typed in a thread, /1on1 locks it for the person
// who started it, and no one else.
func TestAbuseMemberOneOnOne(t *testing.T) {
	h := newHarness(t, rolesSoul)
	h.answerAll()
	h.start()

	h.slash("U0BOB", "C0TEAM", "/1on1", "")
	h.expectNotice("C0TEAM", "", "unauthorized: only the manager, the backup manager or an approver can lock the whole channel")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "700.1", Text: "<@U0BOT> still open?"})
	h.expectReply("C0TEAM", "700.1", "still open?")

	// Bob's /1on1 in Alice's thread: refused.
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "700.2", ThreadTS: "700.1", ParentUserID: "U0ALICE", Text: "/1on1"})
	h.expectNotice("C0TEAM", "700.1", "unauthorized: only the person who started this thread")
	// Alice's, the root's author: accepted, and Bob is locked out.
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "700.3", ThreadTS: "700.1", ParentUserID: "U0ALICE", Text: "/1on1"})
	h.expectNotice("C0TEAM", "700.1", "1on1 mode: this thread is now between <@U0ALICE> and the manager")
	h.send(fake.Message{User: "U0BOB", Channel: "C0TEAM", TS: "700.4", ThreadTS: "700.1", ParentUserID: "U0ALICE", Text: "me too"})
	h.waitMetric(drops("one_on_one"), 1)
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "700.5", ThreadTS: "700.1", ParentUserID: "U0ALICE", Text: "/1on1 off"})
	h.expectNotice("C0TEAM", "700.1", "1on1 mode released")
}

// openSoul has neither channel list: anyone in the workspace can DM it.
var openSoul = strings.Replace(rolesSoul, "## Trusted channels\n- <#C0TEAM|team>\n", "", 1)

// With both channel lists empty the DMs are open to the whole workspace:
// validate-soul, doctor and the start log say so in those words.
func TestAbuseOpenDMsSaidOutLoud(t *testing.T) {
	if strings.Contains(openSoul, "channels") {
		t.Fatal("openSoul has a channel list")
	}
	h := newHarness(t, openSoul)
	h.answerAll()
	soul := filepath.Join(h.home, "SOUL.md")

	out, errs, code := runCLI(t, map[string]string{"HOME": h.home}, "validate-soul", "--soul", soul)
	if code != 0 {
		t.Fatalf("validate-soul exit %d: %s", code, errs)
	}
	if want := "warning: " + soul + ": " + persona.OpenDMs + "\n"; !strings.Contains(errs, want) {
		t.Errorf("validate-soul warnings:\n%s\nwant the line %q", errs, want)
	}
	if want := "direct messages: anyone in the workspace"; !strings.Contains(out, want) {
		t.Errorf("validate-soul summary lacks %q:\n%s", want, out)
	}

	out, errs, code = runCLI(t, h.env, "doctor")
	if code != 0 {
		t.Fatalf("doctor exit %d (an open door it says, but does not fail):\n%s%s", code, out, errs)
	}
	if want := "WARN  SOUL.md: " + persona.OpenDMs + "\n"; !strings.Contains(out, want) {
		t.Errorf("doctor:\n%s\nwant the line %q", out, want)
	}

	h.start()
	h.waitLog(persona.OpenDMs)
	// It is what it says: a member's DM is answered.
	h.send(fake.Message{User: "U0ALICE", Channel: "D0ALICE", TS: "800.1", Text: "hello"})
	h.expectReply("D0ALICE", "800.1", "hello")
}

// The same service with a channel list says nothing of the kind.
func TestAbuseClosedDMsSayNothing(t *testing.T) {
	h := newHarness(t, rolesSoul)
	out, _, code := runCLI(t, h.env, "doctor")
	if code != 0 || strings.Contains(out, "anyone in the workspace") {
		t.Fatalf("doctor exit %d:\n%s", code, out)
	}
}

// refusedStart runs `agent start` and returns its error; a service that
// starts instead (its /healthz answers) is stopped and fails the test.
func (h *harness) refusedStart() error {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	c := &cli{getenv: h.getenv, args: []string{"start"}, streams: streams{stdin: strings.NewReader(""), stdout: io.Discard, stderr: h.logs},
		serviceDeps: h.deps, landlock: h.landlock}
	go func() { done <- c.run(ctx) }()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
			h.t.Fatalf("start neither refused nor started; logs:\n%s", h.logs)
		case <-time.After(20 * time.Millisecond):
			if resp, err := http.Get(h.url("/healthz")); err == nil {
				resp.Body.Close()
				cancel()
				<-done
				h.t.Fatalf("the service started; logs:\n%s", h.logs)
			}
		}
	}
}

// noLandlock is the Landlock probe of a kernel without Landlock.
func noLandlock() int { return 0 }

// bypass with no kernel sandbox (AGENT_SANDBOX=auto on a kernel without
// Landlock) refuses to start, whichever way the configuration asks for it,
// with one line; AGENT_SANDBOX=off, said on purpose, starts.
func TestAbuseBypassWithoutLandlockRefused(t *testing.T) {
	const why = "bypass needs the kernel sandbox and this kernel has no Landlock (AGENT_SANDBOX=auto): " +
		"set AGENT_SANDBOX=off to run bypass unconfined on purpose, or choose another mode"
	for _, tc := range []struct {
		name   string
		soul   string
		mode   string // AGENT_DEFAULT_MODE
		source string // what the line names
	}{
		{"default mode", rolesSoul, "bypass", "AGENT_DEFAULT_MODE=bypass"},
		{"channel override", rolesSoul + "\n## Channel <#C0TEAM|team>\n- Mode: bypass\n", "ask", "SOUL.md ## Channel <#C0TEAM|team> (- Mode: bypass)"},
		{"channel without a list", rolesSoul + "\n## Channel <#C0OPS>\n- Mode: bypass\n", "ask", "SOUL.md ## Channel <#C0OPS> (- Mode: bypass)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.soul)
			h.landlock = noLandlock
			h.env["AGENT_DEFAULT_MODE"] = tc.mode
			err := h.refusedStart()
			line := tc.source + ": " + why
			if err == nil || err.Error() != line {
				t.Fatalf("start = %v\nwant the error %q", err, line)
			}
			if h.slack.Connections() != 0 {
				t.Fatal("the refused service connected to the platform")
			}
			out, _, code := h.runCLI("doctor")
			if code == 0 || !strings.Contains(out, "FAIL  "+line+"\n") {
				t.Errorf("doctor exit %d:\n%s\nwant the line FAIL  %s", code, out, line)
			}

			h.env["AGENT_SANDBOX"] = "off"
			h.start()
			h.waitLog("sandbox: off (AGENT_SANDBOX=off)")
		})
	}
}

// Without the kernel sandbox, bypass reached at run time is closed too: an
// override capped at ask (an allowed channel) starts, /mode bypass is
// refused, and a bypass stored by /mode in an earlier run works as ask.
func TestAbuseBypassWithoutLandlockAtRunTime(t *testing.T) {
	h := newHarness(t, rolesSoul+"\n## Allowed channels\n- <#C0PUB>\n\n## Channel <#C0PUB>\n- Mode: bypass\n")
	h.answerAll()
	// An earlier run, with the sandbox off on purpose, put a thread in
	// bypass.
	h.env["AGENT_SANDBOX"] = "off"
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "900.1", Text: "<@U0BOT> /mode bypass"})
	h.expectNotice("C0TEAM", "900.1", "`bypass` (set by <@U0MGR>)")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	h.landlock = noLandlock
	delete(h.env, "AGENT_SANDBOX")
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "900.2", ThreadTS: "900.1", Text: "/mode"})
	h.expectNotice("C0TEAM", "900.1", "This thread's permission mode is `ask`.")
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "901.1", Text: "<@U0BOT> /mode bypass"})
	h.expectNotice("C0TEAM", "901.1", "bypass is refused here: bypass needs the kernel sandbox and this kernel has no Landlock")
	h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "901.2", ThreadTS: "901.1", Text: "/mode"})
	h.expectNotice("C0TEAM", "901.1", "This thread's permission mode is `ask`.")
}

// The simulator's stub world runs in bypass: without Landlock it still
// starts, its scripted command unconfined on purpose (AGENT_SANDBOX=off);
// a live model's shared configuration in bypass is refused like a start.
func TestAbuseBypassWithoutLandlockSim(t *testing.T) {
	w, err := startSim(t.Context(), runner.Options{Soul: []byte(testSoul), Behaviour: "events", LandlockABI: noLandlock})
	if err != nil {
		t.Fatalf("the stub world did not start without Landlock: %v", err)
	}
	if got := w.svc.Config().Sandbox; got != "off" {
		t.Errorf("the stub world's AGENT_SANDBOX = %q, want off", got)
	}
	w.Close()

	cfg := &config.Config{DefaultMode: "bypass", AutoAllowTools: config.DefaultAutoAllowTools, IdleMinutes: config.DefaultIdleMinutes,
		MaxTurns: config.DefaultMaxTurns, PackageRunner: config.DefaultPackageRunner, LogLevel: "warn", Sandbox: "auto"}
	if w, err := startSim(t.Context(), runner.Options{Soul: []byte(testSoul), Behaviour: "reply", Config: cfg, LandlockABI: noLandlock}); err == nil {
		w.Close()
		t.Fatal("a live model's bypass started without Landlock")
	} else if !strings.Contains(err.Error(), "AGENT_DEFAULT_MODE=bypass: bypass needs the kernel sandbox") {
		t.Fatalf("startSim = %v", err)
	}
}

// Across replicas: a member's /abort typed at one replica stops a turn
// running at another only when that member started it.
func TestAbuseReplicasOwnAbort(t *testing.T) {
	f := newFleet(t, 1, false)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	f.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		if strings.Contains(string(req.Body), "long job") {
			r := fake.TextReply("")
			r.Gate = hold // runs until it is stopped
			return r
		}
		return fleetRespond(req)
	}
	a, b := f.start("a"), f.start("b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const root = "1700000100.000100"
	f.slack.SendOn(a.conn, fake.EnvelopeEventsAPI, fake.Message{EventID: "EvLong", User: "U0ALICE", Channel: "C0TEAM",
		TS: root, Text: "<@U0BOT> long job"}.Payload(), 0)
	if !fake.Until(ctx, func() bool { return strings.Contains(f.requestsText(), "long job") }) {
		t.Fatal("the turn to stop never reached the model")
	}
	abort := func(id, user string) {
		f.slack.SendOn(b.conn, fake.EnvelopeEventsAPI, fake.Message{EventID: id, User: user, Channel: "C0TEAM",
			TS: "1700000100.0002" + id[len(id)-2:], ThreadTS: root, ParentUserID: "U0ALICE", Text: "/abort"}.Payload(), 0)
	}
	abort("EvAbort01", "U0BOB")
	if _, err := f.slack.WaitForPost(ctx, func(p fake.Post) bool {
		return p.ThreadTS == root && strings.HasPrefix(p.Text, "unauthorized: only the person who started this turn")
	}); err != nil {
		t.Fatalf("a member's /abort of another's turn at the other replica not refused: %v\n%s", err, f.tail(b))
	}
	abort("EvAbort02", "U0ALICE")
	if _, err := f.slack.WaitForPost(ctx, func(p fake.Post) bool {
		return p.ThreadTS == root && strings.HasPrefix(p.Text, "aborted: I stopped")
	}); err != nil {
		t.Fatalf("the starter's /abort at the other replica not answered: %v\n%s", err, f.tail(b))
	}
	if !fake.Until(ctx, func() bool { return f.logged(a, "stopped a turn at another replica's /abort") }) {
		t.Fatalf("the turn at a was not stopped:\n%s", f.tail(a))
	}
	if n := strings.Count(fake.ReadFile(t, a.log), "stopped a turn at another replica's /abort"); n != 1 {
		t.Errorf("a stopped %d turns at b's /abort, want 1 (the starter's)", n)
	}
	for _, r := range []*replica{a, b} {
		if code := f.terminate(r); code != 0 {
			t.Errorf("replica %s exited %d on SIGTERM", r.name, code)
		}
	}
}

// The platform shows the stop button to whoever sees the thread: a
// member's click on another person's running turn is refused like their
// /abort there, and the turn goes on to answer.
func TestAbuseMemberStopButtonInAnothersThread(t *testing.T) {
	h := newHarness(t, rolesSoul)
	held, release := h.holdLongJobs()
	h.start()

	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "700.1", Text: "<@U0BOT> long job"})
	<-held
	env, _ := h.slack.ClickStop("U0BOB", "C0TEAM", "700.1")
	if err := h.slack.WaitAck(h.ctx(), env); err != nil {
		t.Fatal(err)
	}
	h.expectNotice("C0TEAM", "700.1", "unauthorized: only the person who started this turn")
	h.waitLog(`"msg":"command refused","command":"stop","user_id":"U0BOB"`)
	release()
	h.expectReply("C0TEAM", "700.1", "long job")
	if got := h.metric(`agent_turns_total{outcome="aborted"}`); got != 0 {
		t.Fatalf("a member's stop click stopped another's turn: aborted = %v", got)
	}
}

// modelRefused is /model's refusal, said as /mode's is.
const modelRefused = "only the manager or an approver with scope model can change the model"

// A model sets what every later turn of a thread or channel costs: an
// approver for skills (or mode) cannot choose one, typed in a thread or as
// the slash command; an approver of scope model, and the backup, may.
func TestAbuseModelNeedsScope(t *testing.T) {
	h := newHarness(t, strings.Replace(rolesSoul, "- <@U0MODE>: mode\n", "- <@U0MODE>: mode\n- <@U0MDL>: model\n", 1))
	h.answerAll()
	h.start()

	for i, user := range []string{"U0SKL", "U0MODE"} {
		ts := "410." + strconv.Itoa(i+1)
		h.send(fake.Message{User: user, Channel: "C0TEAM", TS: ts, Text: "<@U0BOT> /model claude-test"})
		if p := h.expectNotice("C0TEAM", ts, "can change the model"); p.Text != modelRefused {
			t.Errorf("%s: refusal = %q, want %q", user, p.Text, modelRefused)
		}
	}
	h.slash("U0SKL", "C0TEAM", "/model", "claude-test")
	if p := h.expectNotice("C0TEAM", "", "can change the model"); p.Text != modelRefused {
		t.Errorf("slash refusal = %q, want %q", p.Text, modelRefused)
	}
	// Anyone may still ask which model a thread uses.
	h.send(fake.Message{User: "U0SKL", Channel: "C0TEAM", TS: "410.3", ThreadTS: "410.1", Text: "/model"})
	h.expectNotice("C0TEAM", "410.1", "This thread's model is `claude-test`.")

	h.send(fake.Message{User: "U0MDL", Channel: "C0TEAM", TS: "411.1", Text: "<@U0BOT> /model claude-test"})
	h.expectNotice("C0TEAM", "411.1", "Model of this thread: `claude-test` (set by <@U0MDL>).")
	h.send(fake.Message{User: "U0BACKUP", Channel: "C0TEAM", TS: "412.1", Text: "<@U0BOT> /model claude-test"})
	h.expectNotice("C0TEAM", "412.1", "Model of this thread: `claude-test` (set by <@U0BACKUP>).")
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("commands reached the model %d times", n)
	}
}

// expectSelfApprovalRefused clicks approve on card as user, who asked it:
// only they are told why, and the card stays pending.
func (h *harness) expectSelfApprovalRefused(user string, card fake.Post, action string) {
	h.t.Helper()
	updates := len(h.slack.Updates())
	h.click(user, card, action)
	eph, err := h.slack.WaitForEphemeral(h.ctx(), func(p fake.Post) bool {
		return p.User == user && strings.Contains(p.Text, "can't approve it yourself")
	})
	if err != nil {
		h.t.Fatalf("%s's %s of their own card not refused: %v\nephemerals: %+v", user, action, err, h.slack.Ephemerals())
	}
	if !strings.Contains(eph.Text, "Ask <@U0MGR> or another approver") {
		h.t.Errorf("refusal = %q", eph.Text)
	}
	if got := h.slack.Updates()[updates:]; len(got) != 0 {
		h.t.Fatalf("a refused self-approval changed the card: %+v", got)
	}
}

// The person whose turn asked a card cannot approve it (pinned): not an
// approver of anything their own tool call, not the backup, and not a
// budget raise of their own thread; another approver or the manager
// then may, and the manager may approve their own.
func TestAbuseNoSelfApproval(t *testing.T) {
	t.Run("tool card", func(t *testing.T) {
		h := newHarness(t, rolesSoul) // AGENT_DEFAULT_MODE is ask
		h.script(use("t1", "Bash", map[string]string{"command": "true"}), sayText("r1", "ran"))
		h.start()
		h.send(fake.Message{User: "U0APP", Channel: "C0TEAM", TS: "420.1", Text: "<@U0BOT> run it"})
		card, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return len(p.Blocks) > 0 })
		if err != nil {
			t.Fatalf("no card: %v\nlogs:\n%s", err, h.logs)
		}
		h.expectSelfApprovalRefused("U0APP", card, "approve")
		h.expectSelfApprovalRefused("U0APP", card, "always")
		h.click("U0MGR", card, "approve")
		h.expectReply("C0TEAM", "420.1", "ran")
	})
	t.Run("request_approval card of the backup, and the manager's own", func(t *testing.T) {
		h := newHarness(t, rolesSoul)
		h.scriptApproval("deploy", "deploy prod")
		h.start()
		h.send(fake.Message{User: "U0BACKUP", Channel: "C0TEAM", TS: "430.1", Text: "<@U0BOT> ship it"})
		card, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return len(p.Blocks) > 0 && p.ThreadTS == "430.1" })
		if err != nil {
			t.Fatal(err)
		}
		h.expectSelfApprovalRefused("U0BACKUP", card, "approve")
		h.click("U0APP", card, "approve")
		h.expectReply("C0TEAM", "430.1", "approved by <@U0APP>")

		h.send(fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "431.1", Text: "<@U0BOT> ship it"})
		card, err = h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return len(p.Blocks) > 0 && p.ThreadTS == "431.1" })
		if err != nil {
			t.Fatal(err)
		}
		h.click("U0MGR", card, "approve")
		h.expectReply("C0TEAM", "431.1", "approved by <@U0MGR>")
	})
	t.Run("budget raise card", func(t *testing.T) {
		h := newHarness(t, rolesSoul+"\n## Budgets\n- Thread: 1k tokens\n")
		h.start()
		const root = "440.1"
		// The first call crosses the thread's budget: the turn stops
		// before its next one, with the card that raises it.
		h.model.Enqueue(used(sayTool("b1", "one"), 1100, 0, 0, 0))
		h.send(fake.Message{User: "U0APP", Channel: "C0TEAM", TS: root, Text: "<@U0BOT> first"})
		card := h.budgetCard("C0TEAM", root, 1)
		h.expectSelfApprovalRefused("U0APP", card, "approve")
		h.model.Enqueue(sayTool("b2", "two"), fake.TextReply(""))
		h.click("U0MGR", card, "approve")
		h.expectNotice("C0TEAM", root, "two")
	})
}
