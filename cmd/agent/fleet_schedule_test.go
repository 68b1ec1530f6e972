package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
)

// fleetSchedules is how many due times the two replicas share.
const fleetSchedules = 50

// Two replicas of one persona, the real binary twice, on one Postgres:
// 50 one-off schedules fall due within a few seconds of each other, and
// each is run exactly once — one reply per schedule, one inbox record
// under its fixed id, 50 runs counted across both replicas — whichever
// replica's timer fires first.
func TestReplicasScheduleExactlyOnce(t *testing.T) {
	f := newFleet(t, 0, false)
	var prompt = regexp.MustCompile(`role="scheduled">(run \d+)</message>`)
	f.model.Respond = func(req fake.AnthropicRequest) fake.AnthropicResponse {
		msgs := req.ParsedMessages()
		last := msgs[len(msgs)-1].Content
		if b := last[len(last)-1]; b.Type == "tool_result" {
			return fake.TextReply("") // replied: the turn ends
		}
		var m []string
		for _, b := range last {
			if m = prompt.FindStringSubmatch(b.Text); m != nil {
				break
			}
		}
		if m == nil {
			return fake.TextReply("")
		}
		return fake.ToolUse("toolu_"+strings.ReplaceAll(m[1], " ", "_"), "mcp__agent_chat__reply",
			map[string]string{"text": "did " + m[1]})
	}

	// The schedules are written before either replica starts: each
	// finds them at its first look, and neither is told of them later.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, f.dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range fleetSchedules {
		sc, err := schedule.New(schedule.Request{Creator: "U0MGR", Channel: "D0MGR",
			ThreadTS: fmt.Sprintf("%d.000100", 1700000000+i), When: fmt.Sprintf("in %dms", 6000+40*i),
			Prompt: fmt.Sprintf("run %d", i)}, time.UTC, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateSchedule(ctx, sc, fleetSchedules); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	a := f.start("a")
	b := f.start("b")
	fake.Until(ctx, func() bool {
		n := 0
		for _, p := range f.slack.Posts() {
			if strings.HasPrefix(p.Text, "did run ") {
				n++
			}
		}
		return n >= fleetSchedules
	})
	// Every reply once, in its own thread.
	seen := map[string]int{}
	for _, p := range f.slack.Posts() {
		if strings.HasPrefix(p.Text, "did run ") {
			seen[p.Text]++
			var i int
			fmt.Sscanf(p.Text, "did run %d", &i)
			if want := fmt.Sprintf("%d.000100", 1700000000+i); p.ThreadTS != want {
				t.Errorf("%q posted in thread %s, want %s", p.Text, p.ThreadTS, want)
			}
		}
	}
	for i := range fleetSchedules {
		if n := seen[fmt.Sprintf("did run %d", i)]; n != 1 {
			t.Errorf("run %d answered %d times", i, n)
		}
	}
	f.checkScheduleInbox(ctx)
	ran := 0.0
	for _, r := range []*replica{a, b} {
		n := f.metric(r, `agent_schedule_runs_total{outcome="ran"}`)
		t.Logf("replica %s ran %.0f", r.name, n)
		ran += n
	}
	if ran != fleetSchedules {
		t.Errorf("the replicas counted %.0f runs, want %d", ran, fleetSchedules)
	}
	for _, r := range []*replica{a, b} {
		if code := f.terminate(r); code != 0 {
			t.Errorf("replica %s exited %d on SIGTERM", r.name, code)
		}
	}
}

// checkScheduleInbox: one settled inbox record per due time, under the
// run's fixed id.
func (f *fleet) checkScheduleInbox(ctx context.Context) {
	f.t.Helper()
	f.waitInboxSettled(ctx)
	var n, answered int
	if err := f.db.QueryRow("SELECT count(*), count(*) FILTER (WHERE state = 'answered') FROM inbox WHERE event_id LIKE 'sched:%'").
		Scan(&n, &answered); err != nil {
		f.t.Fatal(err)
	}
	if n != fleetSchedules || answered != fleetSchedules {
		f.t.Errorf("inbox holds %d runs, %d answered; want %d of each", n, answered, fleetSchedules)
	}
}

// metric reads one series of r's /metrics ("name{labels}"); 0 when absent.
func (f *fleet) metric(r *replica, series string) float64 {
	f.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", r.port))
	if err != nil {
		f.t.Fatalf("replica %s metrics: %v", r.name, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				f.t.Fatalf("metric %s: %v", series, err)
			}
			return n
		}
	}
	return 0
}
