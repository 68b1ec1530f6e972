package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// BenchmarkEventToReply is one DM in a new thread, an instant model, the
// reply in the thread: the service's whole path in process, for profiles
// (-cpuprofile, -memprofile). The bench tool measures the same against the
// built binary.
func BenchmarkEventToReply(b *testing.B) {
	h := newHarness(b, testSoul)
	h.env["AGENT_LOG_LEVEL"] = "warn"
	h.env["OTEL_TRACES_EXPORTER"] = os.Getenv("BENCH_TRACE")
	h.model.Respond = func(r fake.AnthropicRequest) fake.AnthropicResponse {
		if _, _, ok := lastResult(r); ok {
			return fake.TextReply("")
		}
		return fake.ToolUse("t1", "mcp__agent_chat__reply", map[string]string{"text": "ack " + heard(r)})
	}
	h.start()
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		text := fmt.Sprintf("bench %d", i)
		sent := time.Now()
		h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: fmt.Sprintf("%d.%06d", 4000+i, i), Text: text})
		p, err := h.slack.WaitForPost(h.ctx(), func(p fake.Post) bool { return strings.HasSuffix(p.Text, " "+text) })
		if err != nil {
			b.Fatal(err)
		}
		total += p.At.Sub(sent)
		if err := h.model.WaitRequests(h.ctx(), 2*(i+1)); err != nil { // the turn's last call
			b.Fatal(err)
		}
	}
	if os.Getenv("BENCH_TRACE") != "" {
		fmt.Fprintln(os.Stderr, h.logs.String())
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-to-reply")
}
