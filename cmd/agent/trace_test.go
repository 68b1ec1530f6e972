package main

import (
	"context"
	"os"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/runner"
)

// spanTree indexes recorded spans by id.
type spanTree struct {
	spans []sdktrace.ReadOnlySpan
}

// parent of s among the recorded spans, or nil.
func (t spanTree) parent(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	for _, p := range t.spans {
		if p.SpanContext().SpanID() == s.Parent().SpanID() && p.SpanContext().TraceID() == s.SpanContext().TraceID() {
			return p
		}
	}
	return nil
}

// chain finds a span named names[len-1] whose ancestors include the
// others, in order (each a descendant of the one before), and returns it.
func (t spanTree) chain(names ...string) sdktrace.ReadOnlySpan {
	last := names[len(names)-1]
	for _, s := range t.spans {
		if s.Name() != last {
			continue
		}
		want := len(names) - 2
		for p := t.parent(s); p != nil && want >= 0; p = t.parent(p) {
			if p.Name() == names[want] {
				want--
			}
		}
		if want < 0 {
			return s
		}
	}
	return nil
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// recordScenario runs a shipped scenario on the real wiring with a span
// recorder and returns its spans.
func recordScenario(t *testing.T, name string) spanTree {
	t.Helper()
	file := "../../sim/scenarios/" + name + ".yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.ParseScenario(file, data)
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	if _, err := runner.Scenario(context.Background(), sc, runner.Config{Spans: []sdktrace.SpanProcessor{rec}}); err != nil {
		t.Fatal(err)
	}
	return spanTree{spans: rec.Ended()}
}

// The span tree of a DM answered, of a dropped event and of an approved
// tool call explains each from the trace alone.
func TestTraceTrees(t *testing.T) {
	t.Run("dm answered", func(t *testing.T) {
		tr := recordScenario(t, "dm-manager-reply")
		root := tr.chain("chat.event")
		if root == nil || attr(root, "messaging.system") != "slack" || attr(root, "messaging.operation.type") != "process" {
			t.Fatalf("no chat.event root with messaging attributes")
		}
		for _, chain := range [][]string{
			{"chat.event", "pipeline.drop", "pipeline.auth", "pipeline.agent", "agent.turn", "llm.request"},
			{"chat.event", "pipeline.agent", "tool.mcp__agent_chat__reply", "pipeline.markup", "chat.post"},
			{"chat.event", "pipeline.agent", "store.append_messages"},
		} {
			if tr.chain(chain...) == nil {
				t.Errorf("no span chain %v", chain)
			}
		}
		// The event's start and its answered state go with its writes
		// (the user's message, the reply's tool result), which say so.
		for _, want := range []string{"inbox.start", "inbox.finish inbox.state=answered"} {
			found := false
			for _, s := range tr.spans {
				for _, e := range s.Events() {
					got := e.Name
					for _, kv := range e.Attributes {
						got += " " + string(kv.Key) + "=" + kv.Value.Emit()
					}
					if got != want || s.Name() != "store.append_messages" {
						continue
					}
					for p := tr.parent(s); p != nil; p = tr.parent(p) {
						found = found || p.Name() == "agent.turn"
					}
				}
			}
			if !found {
				t.Errorf("no store.append_messages of the turn with the event %q", want)
			}
		}
		if s := tr.chain("llm.request"); s == nil || attr(s, "gen_ai.operation.name") != "chat" {
			t.Errorf("llm.request without gen_ai attributes")
		}
	})
	t.Run("scheduled run", func(t *testing.T) {
		tr := recordScenario(t, "schedule-thread-run")
		var run sdktrace.ReadOnlySpan
		for _, s := range tr.spans {
			if s.Name() == "chat.event" && attr(s, "messaging.operation.type") == "schedule" {
				run = s
			}
		}
		if run == nil {
			t.Fatal("no chat.event span with messaging.operation.type=schedule")
		}
		for _, s := range tr.spans {
			if s.Name() == "llm.request" && s.SpanContext().TraceID() == run.SpanContext().TraceID() {
				return // the run went down the chain to the model, in its own trace
			}
		}
		t.Error("the scheduled run's trace has no llm.request")
	})
	t.Run("dropped", func(t *testing.T) {
		tr := recordScenario(t, "restricted-member-dropped")
		s := tr.chain("chat.event", "pipeline.drop")
		if s == nil || attr(s, "outcome") != "drop" || attr(s, "reason") != "whitelist" {
			t.Fatalf("the drop stage's span does not say why: %v", s)
		}
		if len(s.Events()) == 0 || s.Events()[0].Name != "dropped" {
			t.Errorf("no dropped event on the drop span")
		}
		if tr.chain("pipeline.engage") != nil || tr.chain("llm.request") != nil {
			t.Error("a dropped event went past the drop stage")
		}
	})
	t.Run("approved tool call", func(t *testing.T) {
		tr := recordScenario(t, "approval-approved")
		s := tr.chain("chat.event", "pipeline.agent", "agent.turn", "tool.mcp__agent_chat__request_approval", "approval.wait")
		if s == nil || attr(s, "approval.outcome") != "approved" || attr(s, "approval.decided_by") != "U0APP" {
			t.Fatalf("no approval.wait with its outcome: %v", s)
		}
	})
}

// `agent sim run --trace FILE` prints a span tree per event after the
// scenario's line; `agent start` with OTEL_TRACES_EXPORTER=console prints
// the real model call's span with its usage.
func TestTracePrinted(t *testing.T) {
	out, _, code := runCLI(t, nil, "sim", "run", "--trace", "../../sim/scenarios/dm-manager-reply.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"\n    chat.event ", "\n      pipeline.drop ", "pipeline.agent ", " llm.request ", " chat.post "} {
		if !strings.Contains(out, want) {
			t.Errorf("--trace output lacks %q:\n%s", want, out)
		}
	}

	h := newHarness(t, testSoul)
	h.env["OTEL_TRACES_EXPORTER"] = "console"
	h.model.Enqueue(replyWith("traced")...)
	h.start()
	h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: "100.1", Text: "trace me"})
	h.expectReply("D0MGR", "100.1", "traced")
	h.waitLog("gen_ai.usage.input_tokens=")
	for _, want := range []string{"chat.event ", "llm.request ", "gen_ai.request.model=claude-test", "chat.post "} {
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("console traces lack %q", want)
		}
	}
}
