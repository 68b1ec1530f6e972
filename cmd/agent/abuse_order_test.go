package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// Burst sizes: threads of 32 messages, each thread's messages delivered
// alternately to the two replicas 1 ms apart (as the platform replays a
// backlog on reconnection), one thread after another.
const (
	burstThreads  = 6
	burstMessages = 32
	burstGap      = time.Millisecond
	// burstSkew is how long after a later message its swapped earlier
	// one comes: a few ms, more than it takes a replica to record and
	// start a message, well within burstSettle.
	burstSkew = 5 * time.Millisecond
	// burstSettle is the replicas' AGENT_ORDER_SETTLE: the bound holds
	// while the older message is recorded within it, which a test run on
	// a loaded 2-core CI host (two replicas, Postgres, the fakes and other
	// packages' tests) needs room for; the default is 100 ms.
	burstSettle = "300ms"
)

// burstOrder is the order in which thread th's messages are delivered: the
// order of their ts in even threads; in odd ones each pair swapped (1, 0,
// 3, 2, …), the later message delivered burstSkew before the earlier one,
// which goes to the other replica.
func burstOrder(th int) []int {
	order := make([]int, burstMessages)
	for k := range order {
		order[k] = k
		if th%2 == 1 {
			order[k] = k ^ 1
		}
	}
	return order
}

// Two replicas get a thread's messages a few milliseconds apart,
// alternately, some in the order of their ts and some not: each message is
// answered once, in the order of the messages' ts, and the model sees every
// earlier message of the thread in the history of each later one, even
// when the later one was delivered, and recorded, first.
func TestAbuseBurstOrderAcrossReplicas(t *testing.T) {
	f := newFleet(t, burstThreads, false)
	f.model.Respond = fleetRespond
	f.env = append(f.env, "AGENT_ORDER_SETTLE="+burstSettle)
	replicas := []*replica{f.start("a"), f.start("b")}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	root := func(th int) string { return fmt.Sprintf("%d.000100", 1700000000+th) }
	for th := range burstThreads {
		for _, k := range burstOrder(th) {
			m := fake.Message{EventID: fmt.Sprintf("EvB%dT%d", k, th), User: "U0MGR", Channel: "D0MGR",
				TS: fmt.Sprintf("%d.%06d", 1700000000+th, 100+k), Text: fmt.Sprintf("m %d %d", th, k)}
			if k > 0 {
				m.ThreadTS = root(th)
			}
			f.slack.SendOn(replicas[k%2].conn, fake.EnvelopeEventsAPI, m.Payload(), 0)
			if th%2 == 1 && k%2 == 1 {
				time.Sleep(burstSkew)
			} else {
				time.Sleep(burstGap)
			}
		}
	}

	// Every message answered.
	answers := func() map[int][]int {
		out := map[int][]int{}
		for _, p := range f.slack.Posts() {
			if m := doneRe.FindStringSubmatch(p.Text); m != nil {
				th, _ := strconv.Atoi(m[1])
				k, _ := strconv.Atoi(m[2])
				out[th] = append(out[th], k)
			}
		}
		return out
	}
	for {
		n := 0
		for _, ks := range answers() {
			n += len(ks)
		}
		if n >= burstThreads*burstMessages {
			break
		}
		select {
		case <-ctx.Done():
			var logs strings.Builder
			for _, r := range replicas {
				fmt.Fprintf(&logs, "--- %s\n%s\n", r.name, f.tail(r))
			}
			t.Fatalf("%d of %d messages answered\n%s", n, burstThreads*burstMessages, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}

	// In order: each thread's answers follow its messages' ts, and each
	// message's first model request holds every earlier message of the
	// thread.
	late, missing := 0, 0
	for th, ks := range answers() {
		high := -1
		for _, k := range ks {
			if k < high {
				late++
				t.Errorf("thread %d: message %d answered after message %d (answers in the order %v)", th, k, high, ks)
			}
			high = max(high, k)
		}
	}
	seen := map[string]bool{} // "th k": the messages whose history was checked
	for _, req := range f.model.Requests() {
		all := fleetMsgRe.FindAllStringSubmatch(string(req.Body), -1)
		if len(all) == 0 {
			continue
		}
		th, cur := all[len(all)-1][2], all[len(all)-1][3]
		if seen[th+" "+cur] {
			continue
		}
		seen[th+" "+cur] = true
		k, _ := strconv.Atoi(cur)
		had := map[int]bool{}
		for _, m := range all[:len(all)-1] {
			n, _ := strconv.Atoi(m[3])
			had[n] = true
		}
		for earlier := range k {
			if !had[earlier] {
				missing++
				t.Errorf("thread %s: message %d ran without message %d in its history", th, k, earlier)
				break
			}
		}
	}
	t.Logf("%d threads of %d messages over 2 replicas: %d answers after a later message's, %d messages run without an earlier one in their history",
		burstThreads, burstMessages, late, missing)

	// Every inbox record settles (a record trails its answer a moment).
	left := f.unsettled()
	for len(left) > 0 && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		left = f.unsettled()
	}
	for _, l := range left {
		t.Errorf("inbox event %s", l)
	}
	for _, r := range replicas {
		if code := f.terminate(r); code != 0 {
			t.Errorf("replica %s exited %d on SIGTERM", r.name, code)
		}
	}
}
