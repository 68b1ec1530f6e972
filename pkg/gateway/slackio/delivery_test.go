package slackio

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// failures collects what OnDeliveryFailure reports.
type failures struct {
	mu   sync.Mutex
	list []DeliveryFailure
}

func (f *failures) add(d DeliveryFailure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, d)
}

func (f *failures) codes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, d := range f.list {
		out = append(out, d.Method+":"+d.Error)
	}
	return out
}

func TestDeliveryRetriesWhatMayPass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults []string
		posts  int // how many times the text is on the platform after Post
	}{
		{"server unavailable", []string{"service_unavailable", "service_unavailable"}, 1},
		{"5xx before posting", []string{"http:503"}, 1},
		{"hang-up before posting", []string{"hangup"}, 1},
		{"5xx after posting is not posted twice", []string{"http:500:landed"}, 1},
		{"internal_error", []string{"internal_error"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chat, s := newTestChat(t)
			chat.backoff = time.Millisecond
			f := &failures{}
			chat.OnDeliveryFailure(f.add)
			s.Fail("chat.postMessage", tc.faults...)
			ts, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C1", ThreadTS: "1.0", Text: "the answer", For: "Ev1"})
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			n := 0
			for _, p := range s.Posts() {
				if p.Text == "the answer" {
					n++
				}
			}
			if n != tc.posts {
				t.Errorf("posted %d times, want %d", n, tc.posts)
			}
			if tc.faults[0] != "http:500:landed" && ts == "" {
				t.Error("no ts for a post that landed on retry")
			}
			if got := f.codes(); len(got) != 0 {
				t.Errorf("failures reported for a delivered post: %v", got)
			}
		})
	}
}

func TestDeliveryFailuresAreFinalTypedAndReported(t *testing.T) {
	for _, tc := range []struct {
		faults []string
		code   string
		calls  int // chat.postMessage calls made
	}{
		{[]string{"not_in_channel"}, "not_in_channel", 1},
		{[]string{"is_archived"}, "is_archived", 1},
		{[]string{"msg_too_long"}, "msg_too_long", 1},
		{[]string{"http:429", "http:429", "http:429", "http:429"}, "rate_limited", 4},
		{[]string{"http:502", "http:502", "http:502", "http:502"}, "http_502", 4},
		{[]string{"hangup", "hangup", "hangup", "hangup"}, "network", 4},
	} {
		t.Run(tc.code, func(t *testing.T) {
			if tc.code == "rate_limited" && testing.Short() {
				t.Skip("waits out three 1 s Retry-After")
			}
			chat, s := newTestChat(t)
			chat.backoff = time.Millisecond
			f := &failures{}
			chat.OnDeliveryFailure(f.add)
			s.Fail("chat.postMessage", tc.faults...)
			_, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C1", ThreadTS: "1.0", Text: "hi", For: "Ev1"})
			var ue *UndeliveredError
			if !errors.As(err, &ue) || ue.Code != tc.code {
				t.Fatalf("err = %v, want an UndeliveredError %s", err, tc.code)
			}
			if !strings.HasPrefix(err.Error(), "chat.postMessage: ") {
				t.Errorf("error %q does not name the method", err)
			}
			if got := f.codes(); !slices.Equal(got, []string{"chat.postMessage:" + tc.code}) {
				t.Errorf("reported %v", got)
			}
			if n := strings.Count(strings.Join(s.Calls(), ","), "chat.postMessage"); n != tc.calls {
				t.Errorf("%d chat.postMessage calls, want %d", n, tc.calls)
			}
			if len(s.Posts()) != 0 {
				t.Errorf("posted: %v", s.Posts())
			}
		})
	}
}

func TestDeliveryUpdateRetriesAndReports(t *testing.T) {
	chat, s := newTestChat(t)
	chat.backoff = time.Millisecond
	f := &failures{}
	chat.OnDeliveryFailure(f.add)
	ts, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C1", ThreadTS: "1.0", Text: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Fail("chat.update", "http:500:landed")
	if err := chat.Update(t.Context(), ts, pipeline.Message{ChannelID: "C1", Text: "v2"}); err != nil {
		t.Fatalf("an idempotent edit is retried: %v", err)
	}
	s.Fail("chat.update", "cant_update_message")
	err = chat.Update(t.Context(), ts, pipeline.Message{ChannelID: "C1", Text: "v3"})
	var ue *UndeliveredError
	if !errors.As(err, &ue) || ue.Code != "cant_update_message" {
		t.Fatalf("err = %v", err)
	}
	if got := f.codes(); !slices.Equal(got, []string{"chat.update:cant_update_message"}) {
		t.Errorf("reported %v", got)
	}
}

func TestDeliveredReadsTheAnswerBackFromTheThread(t *testing.T) {
	chat, _ := newTestChat(t)
	ctx := t.Context()
	if _, err := chat.Post(ctx, pipeline.Message{ChannelID: "D1", ThreadTS: "5.0", Text: "answer", For: "Ev5"}); err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Post(ctx, pipeline.Message{ChannelID: "D1", ThreadTS: "5.0", Text: "a card without an event"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		channel, thread, event string
		want                   bool
	}{
		{"D1", "5.0", "Ev5", true},
		{"D1", "5.0", "Ev6", false},
		{"D1", "6.0", "Ev5", false},
		{"D2", "5.0", "Ev5", false},
	} {
		got, err := chat.Delivered(ctx, tc.channel, tc.thread, tc.event)
		if err != nil || got != tc.want {
			t.Errorf("Delivered(%s, %s, %s) = %v, %v; want %v", tc.channel, tc.thread, tc.event, got, err, tc.want)
		}
	}
}
