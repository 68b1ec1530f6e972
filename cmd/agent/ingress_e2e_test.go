package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// newIngressHarness is a harness whose service takes events over HTTP:
// CHAT_SIGNING_SECRET set, CHAT_APP_TOKEN unset.
func newIngressHarness(t *testing.T, soul string) (*harness, fake.EventsHTTP) {
	h := newHarness(t, soul)
	delete(h.env, "CHAT_APP_TOKEN")
	h.env["CHAT_SIGNING_SECRET"] = fake.DefaultSigningSecret
	// The ingress shares the health port, so the metrics are served
	// apart (by default on 9090, which tests cannot count on).
	h.metricsPort = freePort(t)
	h.env["AGENT_METRICS_PORT"] = strconv.Itoa(h.metricsPort)
	return h, fake.EventsHTTP{Base: h.url("")}
}

func status(t *testing.T, resp *http.Response, err error) (int, string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The Events API over HTTP through the real service: the platform's URL
// check is answered; an event is acknowledged before its turn even reaches
// the model (the answer never waits on the turn, so the platform's 3 s hold
// whatever the model takes) and then answered in its thread; a retry of it
// is dropped as a redelivery; a forged request is refused with 401 and a log
// line and never reaches the model; slash commands arrive as forms.
func TestHTTPIngressEndToEnd(t *testing.T) {
	h, platform := newIngressHarness(t, testSoul)
	h.start()
	ctx := h.ctx()
	if strings.Contains(h.logs.String(), "socket mode started") {
		t.Fatal("socket mode started in HTTP ingress mode")
	}

	resp, err := platform.Event(ctx, json.RawMessage(`{"token":"x","challenge":"c-123","type":"url_verification"}`), 0)
	if code, body := status(t, resp, err); code != 200 || !strings.Contains(body, `"challenge":"c-123"`) {
		t.Fatalf("url_verification: %d %s", code, body)
	}

	// The model holds its answer until the HTTP exchange is over.
	hold := make(chan struct{})
	first := replyWith("Hello over HTTP")
	first[0].Gate = hold
	h.model.Enqueue(first...)
	msg := fake.Message{EventID: "Ev0HTTPE2E", User: "U0ALICE", Channel: "D0DM", TS: "1700000000.000100", Text: "hi over http"}
	resp, err = platform.Event(ctx, msg.Payload(), 0)
	if code, _ := status(t, resp, err); code != 200 {
		t.Fatalf("event: %d", code)
	}
	if err := h.model.WaitRequests(ctx, 1); err != nil {
		t.Fatalf("the turn did not start: %v\nlogs:\n%s", err, h.logs)
	}
	if n := len(h.slack.Posts()); n != 0 {
		t.Fatalf("%d posts before the model answered", n)
	}
	close(hold)
	if p := h.expectNotice("D0DM", "1700000000.000100", "Hello over HTTP"); p.Text != "Hello over HTTP" {
		t.Fatalf("reply %+v", p)
	}

	// The platform retries (it did not see our 200 in time, say): the same
	// event id is a redelivery and never reaches the model again.
	resp, err = platform.Event(ctx, msg.Payload(), 1)
	if code, _ := status(t, resp, err); code != 200 {
		t.Fatalf("retry: %d", code)
	}
	h.waitLog(`"reason":"duplicate"`)

	// Forged: refused before anything is handled.
	forger := fake.EventsHTTP{Base: platform.Base, Secret: "guessed"}
	resp, err = forger.Event(ctx, fake.Message{User: "U0MGR", Channel: "D0MGR", Text: "forged"}.Payload(), 0)
	if code, _ := status(t, resp, err); code != http.StatusUnauthorized {
		t.Fatalf("forged: %d, want 401", code)
	}
	h.waitLog("http ingress: request refused")

	// A slash command, as the platform's form.
	resp, err = platform.Command(ctx, fake.SlashCommand{Command: "/help", User: "U0MGR", Channel: "D0MGR"}.Payload(), 0)
	if code, body := status(t, resp, err); code != 200 || body != "" {
		t.Fatalf("command: %d %q", code, body)
	}
	h.expectNotice("D0MGR", "", "/mode")

	if n := len(h.model.Requests()); n != 2 {
		t.Fatalf("model requests = %d, want 2 (one turn: the reply, then the end)", n)
	}
	for _, p := range h.slack.Posts() {
		if strings.Contains(p.Text, "forged") {
			t.Fatalf("a forged event was answered: %+v", p)
		}
	}
	if got := len(h.slack.Posts()); got != 2 {
		t.Fatalf("posts = %d, want 2 (the reply and the help): %+v", got, h.slack.Posts())
	}
}

// A card's click over HTTP (the interactivity form) releases the turn that
// waits for it; an unsigned click is refused and changes nothing.
func TestHTTPIngressApprovalClick(t *testing.T) {
	h, platform := newIngressHarness(t, rulesSoul)
	h.scriptApproval("deploy", "deploy prod")
	h.start()
	ctx := h.ctx()

	// In the team's channel, where the approver can click the card (no
	// one but its owner sees a DM).
	resp, err := platform.Event(ctx, fake.Message{User: "U0MGR", Channel: "C0TEAM", TS: "100.1", Text: "<@U0BOT> ship it"}.Payload(), 0)
	if code, _ := status(t, resp, err); code != 200 {
		t.Fatalf("event: %d", code)
	}
	card, err := h.slack.WaitForPost(ctx, func(p fake.Post) bool { return len(p.Blocks) > 0 && p.ThreadTS == "100.1" })
	if err != nil {
		t.Fatalf("no card: %v\nlogs:\n%s", err, h.logs)
	}
	click := fake.BlockActions{User: "U0APP", Channel: card.Channel, MessageTS: card.TS, ThreadTS: card.ThreadTS,
		ActionID: "approve", Value: cardButtons(t, card)["approve"]}.Payload()

	forged := fake.EventsHTTP{Base: platform.Base, Secret: "guessed"}
	resp, err = forged.Interactive(ctx, click, 0)
	if code, _ := status(t, resp, err); code != http.StatusUnauthorized {
		t.Fatalf("unsigned click: %d, want 401", code)
	}
	resp, err = platform.Interactive(ctx, click, 0)
	if code, body := status(t, resp, err); code != 200 || body != "" {
		t.Fatalf("click: %d %q", code, body)
	}
	h.expectReply("C0TEAM", "100.1", "approved by <@U0APP>")
}
