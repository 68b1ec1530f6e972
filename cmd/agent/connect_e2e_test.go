package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// connectKey is a test AGENT_SECRET_KEY (32 bytes, base64).
const connectKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// connectHarness is `agent start` with a tool server each person signs in
// to ("auth": "oauth"), its authorization server, and a model that calls
// the server's whoami on each person's message and says what it answered.
type connectHarness struct {
	*harness
	as    *fake.OAuth
	tools *fake.ToolServer
}

func newConnectHarness(t *testing.T) *connectHarness {
	t.Helper()
	h := &connectHarness{harness: newHarness(t, gatekeeperSoul), as: fake.NewOAuth(t)}
	h.tools = fake.NewToolServer(t, h.as)
	mcpJSON := fmt.Sprintf(`{"mcpServers": {"tracker": {"url": %q, "auth": "oauth"}}}`, h.tools.URL)
	if err := os.WriteFile(filepath.Join(h.home, "mcp.json"), []byte(mcpJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	h.env["AGENT_SECRET_KEY"] = connectKey
	h.env["AGENT_PUBLIC_URL"] = fmt.Sprintf("http://127.0.0.1:%d", h.port)
	h.env["AGENT_AUTO_ALLOW_TOOLS"] = "mcp__tracker__whoami"
	var n atomic.Int64
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		id := fmt.Sprintf("toolu_%d", n.Add(1))
		msgs := req.ParsedMessages()
		if res, isErr, ok := lastResult(req); ok {
			prev := msgs[len(msgs)-2].Content
			if prev[len(prev)-1].Name != "mcp__tracker__whoami" {
				return fake.TextReply("")
			}
			if isErr {
				res = "ERROR " + res
			}
			return fake.ToolUse(id, "mcp__agent_chat__reply", map[string]string{"text": res})
		}
		return fake.ToolUse(id, "mcp__tracker__whoami", map[string]any{})
	}
	return h
}

// signIn is /connect typed by user in channel (a slash command) and the
// sign-in in their browser, signed in at the authorization server as
// account; it returns the browser's last page and the links it went
// through (the sign-in link and the callback).
func (h *connectHarness) signIn(user, channel, account string) (page string, link, callback string) {
	h.t.Helper()
	link = h.connectLink(user, channel)
	page, callback, _ = h.browse(account, link)
	return page, link, callback
}

var linkRE = regexp.MustCompile(`sign in to tracker: (\S+)`)

// connectLink runs /connect tracker and returns the link shown to user only.
func (h *connectHarness) connectLink(user, channel string) string {
	h.t.Helper()
	before := len(h.slack.Ephemerals())
	h.slash(user, channel, "/connect", "tracker")
	p, err := h.slack.WaitForEphemeral(h.ctx(), func(p fake.Post) bool {
		return p.User == user && strings.Contains(p.Text, "sign in to tracker: ")
	})
	if err != nil || len(h.slack.Ephemerals()) <= before {
		h.t.Fatalf("no sign-in link for %s: %v\nposts %+v\nlogs:\n%s", user, err, h.slack.Posts(), h.logs)
	}
	m := linkRE.FindStringSubmatch(p.Text)
	if m == nil {
		h.t.Fatalf("no link in %q", p.Text)
	}
	for _, q := range h.slack.Posts() {
		if strings.Contains(q.Text, m[1]) {
			h.t.Fatalf("the sign-in link was posted where others see it: %+v", q)
		}
	}
	return m[1]
}

// browse opens u in a browser signed in at the authorization server as
// account ("" for nobody), following redirects; it returns the last page,
// its address and its status.
func (h *connectHarness) browse(account, u string) (page, last string, status int) {
	h.t.Helper()
	jar, _ := cookiejar.New(nil)
	if account != "" {
		as, _ := url.Parse(h.as.URL)
		jar.SetCookies(as, []*http.Cookie{{Name: fake.LoginCookie, Value: account}})
	}
	resp, err := (&http.Client{Jar: jar}).Get(u)
	if err != nil {
		h.t.Fatalf("browse %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.Request.URL.String(), resp.StatusCode
}

// ask posts text from user in channel (a thread's root when thread is "")
// and returns the bot's answer in the thread.
func (h *connectHarness) ask(user, channel, root, ts, text, want string) fake.Post {
	h.t.Helper()
	m := fake.Message{User: user, Channel: channel, TS: ts, Text: text}
	if root != ts {
		m.ThreadTS = root
	} else {
		m.Text = "<@" + fake.DefaultBotUserID + "> " + text
	}
	before := map[string]bool{}
	for _, p := range h.slack.Posts() {
		before[p.TS] = true
	}
	h.send(m)
	p, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool {
		return !before[p.TS] && p.Channel == channel && p.ThreadTS == root && strings.Contains(p.Text, want)
	})
	if err != nil {
		h.t.Fatalf("no %q in %s/%s: %v\nposts: %+v\ntool calls %+v\nlogs:\n%s", want, channel, root, err, h.slack.Posts(), h.tools.Calls(), h.logs)
	}
	return p
}

// The whole sign-in, through the real service: /connect shows a link to
// its owner only; the browser goes through discovery (the server's 401,
// its metadata, the authorization server's), dynamic client registration
// and PKCE; the thread is told whom the person is connected as. Then two
// people in one thread each act as themselves, a third who has not
// connected gets the pinned answer and the server is not called, a
// replayed link changes nothing, a token the server refuses is renewed, a
// refused renewal forgets the token and tells its owner, and no token is
// in the database's files or the logs.
func TestConnectEachPersonActsAsThemselves(t *testing.T) {
	h := newConnectHarness(t)
	h.start()
	h.waitLog("tool server waits for a first sign-in")

	page, link, callback := h.signIn("U0ALICE", "C0TEAM", "alice-gh")
	if !strings.Contains(page, "connected to tracker as alice-gh") {
		t.Fatalf("alice's page: %s\nlogs:\n%s", page, h.logs)
	}
	h.expectNotice("C0TEAM", "", "connected to tracker as alice-gh")
	if h.as.Count("register") != 1 || h.as.Count("code") != 1 {
		t.Fatalf("registrations %d, exchanges %d", h.as.Count("register"), h.as.Count("code"))
	}

	// The link and the callback are single-use: replayed, nothing changes.
	for _, u := range []string{link, callback} {
		page, _, status := h.browse("mallory-gh", u)
		if status != http.StatusBadRequest || !strings.Contains(page, "already used") {
			t.Fatalf("replayed %s: %d %s", u, status, page)
		}
	}
	if h.as.Count("code") != 1 {
		t.Fatalf("a replay exchanged a code: %d", h.as.Count("code"))
	}

	if page, _, _ := h.signIn("U0BOB", "C0TEAM", "bob-gh"); !strings.Contains(page, "as bob-gh") {
		t.Fatalf("bob's page: %s", page)
	}

	// One thread, three people: each turn acts as its sender.
	h.ask("U0ALICE", "C0TEAM", "500.1", "500.1", "who am I on the tracker?", "acting as alice-gh")
	h.ask("U0BOB", "C0TEAM", "500.1", "500.2", "and me?", "acting as bob-gh")
	h.ask("U0CAROL", "C0TEAM", "500.1", "500.3", "and me?",
		"ERROR not connected to tracker: ask <@U0CAROL> to run /connect tracker")
	calls := h.tools.Calls()
	if len(calls) != 2 || calls[0].Account != "alice-gh" || calls[1].Account != "bob-gh" {
		t.Fatalf("tool server calls = %+v, want alice's then bob's, none for carol", calls)
	}

	// A token the server refuses (expired early) is renewed once and the
	// call goes through.
	h.as.Expire()
	h.ask("U0ALICE", "C0TEAM", "500.1", "500.4", "again?", "acting as alice-gh")
	if h.as.Count("refresh") != 1 {
		t.Fatalf("refreshes = %d, want 1\nlogs:\n%s", h.as.Count("refresh"), h.logs)
	}

	// A refused renewal forgets the token and tells its owner, once.
	h.as.RefuseRefresh = true
	h.as.Expire()
	h.ask("U0BOB", "C0TEAM", "500.1", "500.5", "still me?", "ERROR not connected to tracker: ask <@U0BOB> to run /connect tracker")
	if _, err := h.slack.WaitForEphemeral(h.ctx(), func(p fake.Post) bool {
		return p.User == "U0BOB" && strings.Contains(p.Text, "tracker refused to renew your sign-in")
	}); err != nil {
		t.Fatalf("bob not told: %v\nephemerals %+v", err, h.slack.Ephemerals())
	}
	h.ask("U0BOB", "C0TEAM", "500.1", "500.6", "and now?", "ERROR not connected to tracker: ask <@U0BOB> to run /connect tracker")
	told := 0
	for _, p := range h.slack.Ephemerals() {
		if strings.Contains(p.Text, "refused to renew") {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("bob told %d times", told)
	}

	// /connections and /disconnect, for the asker only.
	h.slash("U0ALICE", "C0TEAM", "/connections", "")
	if _, err := h.slack.WaitForEphemeral(h.ctx(), func(p fake.Post) bool {
		return p.User == "U0ALICE" && strings.Contains(p.Text, "tracker as alice-gh")
	}); err != nil {
		t.Fatalf("/connections: %v", err)
	}
	// The Home tab shows a person their own connections, with the button
	// that disconnects, and nobody else's.
	if v := string(h.openHome("U0ALICE").Blocks); !strings.Contains(v, "tracker as alice-gh") || !strings.Contains(v, `"action_id":"home_disconnect"`) {
		t.Fatalf("alice's Home has no connection: %s", v)
	}
	if v := string(h.openHome("U0CAROL").Blocks); strings.Contains(v, "alice-gh") || strings.Contains(v, "home_disconnect") {
		t.Fatalf("carol's Home shows another's connection: %s", v)
	}
	out, _, code := h.runCLI("connections", "--json")
	var listed map[string]string
	if code != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &listed) != nil || listed["user"] != "U0ALICE" ||
		strings.Contains(out, "at-") || strings.Contains(out, "rt-") {
		t.Fatalf("agent connections --json (exit %d): %s", code, out)
	}

	h.slash("U0ALICE", "C0TEAM", "/disconnect", "tracker")
	if _, err := h.slack.WaitForEphemeral(h.ctx(), func(p fake.Post) bool {
		return p.User == "U0ALICE" && p.Text == "disconnected from tracker"
	}); err != nil {
		t.Fatalf("/disconnect: %v", err)
	}
	if len(h.as.Revoked()) == 0 {
		t.Fatal("disconnect revoked nothing at the authorization server")
	}
	h.ask("U0ALICE", "C0TEAM", "500.1", "500.7", "me?", "ERROR not connected to tracker: ask <@U0ALICE> to run /connect tracker")

	// No token anywhere it must not be: the database's files, the logs,
	// the model's requests, the chat.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	issued := h.as.Issued()
	if len(issued) < 4 {
		t.Fatalf("issued %d tokens", len(issued))
	}
	var seen []string
	_ = filepath.Walk(h.home, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, tok := range issued {
			if strings.Contains(string(b), tok) {
				seen = append(seen, path)
			}
		}
		return nil
	})
	logs := h.logs.String()
	var reqs strings.Builder
	for _, r := range h.model.Requests() {
		reqs.Write(r.Messages)
		reqs.WriteString(r.SystemText())
	}
	for _, tok := range issued {
		if strings.Contains(logs, tok) {
			seen = append(seen, "logs")
		}
		if strings.Contains(reqs.String(), tok) {
			seen = append(seen, "model requests")
		}
		for _, p := range append(h.slack.Posts(), h.slack.Ephemerals()...) {
			if strings.Contains(p.Text, tok) {
				seen = append(seen, "chat")
			}
		}
	}
	if len(seen) > 0 {
		t.Fatalf("tokens found in %v", seen)
	}
}

// A service with an "auth": "oauth" server and no AGENT_SECRET_KEY does
// not start, with the pinned line; a key that is not 32 bytes is one line
// naming the variable.
func TestConnectRefusesToStartWithoutKey(t *testing.T) {
	h := newConnectHarness(t)
	delete(h.env, "AGENT_SECRET_KEY")
	err := h.refusedStart()
	if err == nil || err.Error() != `AGENT_SECRET_KEY is required for tool servers with "auth": "oauth"` {
		t.Fatalf("start without the key: %v", err)
	}
	h.env["AGENT_SECRET_KEY"] = "c2hvcnQ="
	if err := h.refusedStart(); err == nil || !strings.HasPrefix(err.Error(), "AGENT_SECRET_KEY must be 32 bytes") {
		t.Fatalf("start with a short key: %v", err)
	}
}

// bobAndManagerSignedIn is a service at which bob and the manager signed
// in to the tracker (as bob-gh and mgr-gh), stopped.
func bobAndManagerSignedIn(t *testing.T) *connectHarness {
	t.Helper()
	h := newConnectHarness(t)
	h.start()
	h.signIn("U0BOB", "C0TEAM", "bob-gh")
	h.signIn("U0MGR", "C0TEAM", "mgr-gh")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	return h
}

// A scheduled run acts with its creator's account, never another
// connected person's; after a restart the server's tools are listed with
// a stored connection, and the tokens open with the same key.
func TestConnectScheduledRunUsesItsCreatorsAccount(t *testing.T) {
	h := bobAndManagerSignedIn(t)
	h.addDueSchedule("U0MGR", "C0TEAM", "700.1", schedule.TargetThread, "who runs this?")
	h.start()
	h.waitReply("C0TEAM", "700.1", "acting as mgr-gh")
	calls := h.tools.Calls()
	if len(calls) != 1 || calls[0].Account != "mgr-gh" {
		t.Fatalf("calls = %+v, want one as the schedule's creator", calls)
	}
}

// A start with another key than the one the tokens were sealed with is
// one clear line, not a crash, and nothing is changed.
func TestConnectWrongKeyIsOneLine(t *testing.T) {
	h := newConnectHarness(t)
	h.start()
	h.signIn("U0BOB", "C0TEAM", "bob-gh")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.env["AGENT_SECRET_KEY"] = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="
	err := h.refusedStart()
	if err == nil || err.Error() != "AGENT_SECRET_KEY does not open the stored connections: it is not the key they were sealed with" {
		t.Fatalf("start with another key: %v", err)
	}
}

// The approval card of a tool that acts with a person's own account says
// whose; approved, the call acts as that person.
func TestConnectCardNamesWhoseAccountActs(t *testing.T) {
	h := newConnectHarness(t)
	inner := h.model.Respond
	var n atomic.Int64
	h.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		if _, _, ok := lastResult(req); !ok && strings.Contains(req.LastUserText(), "file an issue") {
			return fake.ToolUse(fmt.Sprintf("toolu_c%d", n.Add(1)), "mcp__tracker__create_issue", map[string]string{"title": "flaky build"})
		}
		if res, isErr, ok := lastResult(req); ok && !isErr && strings.Contains(res, "created by") {
			return fake.ToolUse(fmt.Sprintf("toolu_c%d", n.Add(1)), "mcp__agent_chat__reply", map[string]string{"text": res})
		}
		return inner(req)
	}
	h.start()
	h.signIn("U0ALICE", "C0TEAM", "alice-gh")
	h.send(fake.Message{User: "U0ALICE", Channel: "C0TEAM", TS: "800.1", Text: "<@U0BOT> file an issue please"})
	card, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return len(p.Blocks) > 0 })
	if err != nil {
		t.Fatalf("no card: %v\nlogs:\n%s", err, h.logs)
	}
	// The person is a mention, as the pinned sentence writes it.
	if !strings.Contains(string(card.Blocks), `This acts with \u003c@U0ALICE\u003e's own tracker account.`) {
		t.Fatalf("card does not name whose account acts: %s", card.Blocks)
	}
	h.click("U0MGR", card, "approve")
	h.waitReply("C0TEAM", "800.1", `issue "flaky build" created by alice-gh`)
	// Resolved, the card still names her.
	done, err := h.slack.WaitForUpdate(h.ctx(), func(p fake.Post) bool { return p.TS == card.TS && strings.Contains(string(p.Blocks), "approved by") })
	if err != nil {
		t.Fatalf("card not resolved: %v", err)
	}
	if !strings.Contains(string(done.Blocks), `This acts with \u003c@U0ALICE\u003e's own tracker account.`) {
		t.Fatalf("resolved card lost whose account acted: %s", done.Blocks)
	}
	// The audit record keeps it too.
	out, _, code := h.runCLI("audit", "--json")
	var record map[string]any // one approval, one line
	if code != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &record) != nil ||
		record["acts_as"] != "tracker" || record["requested_by"] != "U0ALICE" {
		t.Fatalf("agent audit --json (exit %d): %s", code, out)
	}
	if out, _, code := h.runCLI("audit"); code != 0 || !strings.Contains(out, "This acts with <@U0ALICE>'s own tracker account.") {
		t.Fatalf("agent audit (exit %d): %s", code, out)
	}
}

// A turn a crash cut off is resumed at the next start with its sender's
// account: bob's message, left running in the inbox, acts as bob (never
// as the manager, also connected); carol's, who never connected, gets
// the pinned answer and the server is not called for her.
func TestConnectResumedTurnUsesItsSendersAccount(t *testing.T) {
	h := bobAndManagerSignedIn(t)
	st, err := store.Open(t.Context(), filepath.Join(h.home, "db.sqlite"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cutOff := func(id, user, ts string) {
		t.Helper()
		ev := pipeline.Event{ID: id, Kind: pipeline.KindMessage, Type: "app_mention", ChannelID: "C0TEAM",
			ChannelType: pipeline.ChannelPublic, UserID: user, TS: ts,
			Text: "<@" + fake.DefaultBotUserID + "> who am I on the tracker?", Received: time.Now()}
		data, _ := json.Marshal(&ev)
		if _, err := st.InboxReceive(t.Context(), store.InboxEntry{EventID: id, Kind: "message", ChannelID: "C0TEAM",
			ThreadTS: ts, UserID: user, MsgKey: "C0TEAM:" + ts, Event: data}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.InboxStart(t.Context(), id, "trace-"+id); err != nil {
			t.Fatal(err)
		}
	}
	cutOff("EvBob", "U0BOB", "900.1")
	cutOff("EvCarol", "U0CAROL", "901.1")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.waitReply("C0TEAM", "900.1", "acting as bob-gh")
	h.waitReply("C0TEAM", "901.1", "ERROR not connected to tracker: ask <@U0CAROL> to run /connect tracker")
	calls := h.tools.Calls()
	if len(calls) != 1 || calls[0].Account != "bob-gh" {
		t.Fatalf("tool server calls = %+v, want one, as bob", calls)
	}
}
