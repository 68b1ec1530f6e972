package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// scaleThreads is how many threads the scale test opens at once.
const scaleThreads = 1000

// A thousand threads at once with a 200 ms model: every one is answered,
// no more turns run at once than AGENT_MAX_TURNS, and once the sessions
// have gone idle the goroutines and file descriptors are back near where
// they were.
func TestScaleThousandThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("a thousand turns")
	}
	h := newHarness(t, testSoul)
	h.env["AGENT_MAX_TURNS"] = "100"
	h.env["AGENT_IDLE_MINUTES"] = "0.02" // 1.2 s
	h.env["AGENT_LOG_LEVEL"] = "warn"
	var running, peak atomic.Int64
	h.model.Respond = func(r fake.AnthropicRequest) fake.AnthropicResponse {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
		if _, _, ok := lastResult(r); ok {
			return fake.TextReply("")
		}
		return fake.ToolUse("t1", "mcp__agent_chat__reply", map[string]string{"text": "ack " + r.LastUserText()})
	}
	h.start()
	time.Sleep(200 * time.Millisecond)
	baseG, baseFD := runtime.NumGoroutine(), openFDs()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	started := time.Now()
	for i := range scaleThreads {
		h.send(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: fmt.Sprintf("%d.%06d", 2000+i, i), Text: fmt.Sprintf("scale %d", i)})
	}
	deadline := time.Now().Add(90 * time.Second)
	var during runtime.MemStats
	measured := false
	for {
		answered := 0
		for _, p := range h.slack.Posts() {
			if strings.HasPrefix(p.Text, "ack ") {
				answered++
			}
		}
		if !measured && h.metric("agent_sessions_live") >= scaleThreads {
			runtime.GC()
			runtime.ReadMemStats(&during)
			measured = true
		}
		if answered == scaleThreads {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d threads answered", answered, scaleThreads)
		}
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(started)
	if p := peak.Load(); p > 2*100 { // a turn holds a slot through its model calls; two calls of a turn never overlap
		t.Errorf("%d model calls at once with AGENT_MAX_TURNS=100", p)
	}
	if measured {
		perSession := (int64(during.HeapInuse) - int64(before.HeapInuse)) / scaleThreads
		t.Logf("heap per live session: %d KiB (%d live)", perSession/1024, scaleThreads)
		if perSession > 64<<10 {
			t.Errorf("heap per live session %d KiB, want at most 64 KiB", perSession/1024)
		}
	}
	// Idle: the sessions close; what the burst started is gone.
	h.waitMetricBelow("agent_sessions_live", 1, 20*time.Second)
	var g, fds int
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		g, fds = runtime.NumGoroutine(), openFDs()
		if g <= baseG+20 && fds <= baseFD+20 {
			break
		}
	}
	t.Logf("%d threads answered in %v (peak %d model calls at once); goroutines %d → %d, fds %d → %d",
		scaleThreads, elapsed.Round(time.Millisecond), peak.Load(), baseG, g, baseFD, fds)
	if g > baseG+20 || fds > baseFD+20 {
		t.Errorf("after idle: goroutines %d (baseline %d), fds %d (baseline %d)", g, baseG, fds, baseFD)
	}
}

func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(entries)
}

// waitMetricBelow waits until series is below limit.
func (h *harness) waitMetricBelow(series string, limit float64, within time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for h.metric(series) >= limit {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s = %v, want below %v", series, h.metric(series), limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
