package slackio

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// A session is created by its first status, with its title cut to the
// platform's 200 characters and its initiator; later statuses move it.
func TestChatSessionStatus(t *testing.T) {
	chat, s := newTestChat(t)
	long := strings.Repeat("é", 250)
	for _, u := range []pipeline.SessionUpdate{
		{ChannelID: "C1", ThreadTS: "1.0", Status: pipeline.SessionProcessing, Title: long, Initiator: "U1"},
		{ChannelID: "C1", ThreadTS: "1.0", Status: pipeline.SessionSuspended},
		{ChannelID: "C1", ThreadTS: "1.0", Status: pipeline.SessionActive},
	} {
		if err := chat.SetSessionStatus(t.Context(), u); err != nil {
			t.Fatal(err)
		}
	}
	calls := s.SessionStatuses()
	if len(calls) != 3 || calls[0].Title != strings.Repeat("é", 200) || calls[0].Initiator != "U1" || calls[1].Title != "" {
		t.Fatalf("calls = %+v", calls)
	}
	got, ok := s.Session("C1", "1.0")
	if !ok || got.Status != "active" || got.Initiator != "U1" {
		t.Fatalf("session = %+v", got)
	}
}

// A platform that refuses the method is asked once per process: the
// refusal is remembered and every later call fails at once with
// ErrNoAgentSessions (the caller shows the status line instead). An error
// about one thread is not remembered.
func TestChatSessionStatusRefusalRemembered(t *testing.T) {
	for _, code := range []string{"unknown_method", "not_allowed_token_type"} {
		t.Run(code, func(t *testing.T) {
			chat, s := newTestChat(t)
			s.Fail("agents.sessions.setStatus", code)
			u := pipeline.SessionUpdate{ChannelID: "D1", ThreadTS: "1.0", Status: pipeline.SessionProcessing}
			for i := range 3 {
				if err := chat.SetSessionStatus(t.Context(), u); !errors.Is(err, pipeline.ErrNoAgentSessions) {
					t.Fatalf("call %d: err = %v, want ErrNoAgentSessions", i+1, err)
				}
			}
			if n := strings.Count(strings.Join(s.Calls(), " "), "agents.sessions.setStatus"); n != 1 {
				t.Fatalf("the platform was asked %d times, want once", n)
			}
		})
	}
	t.Run("a thread's error", func(t *testing.T) {
		chat, s := newTestChat(t)
		s.Fail("agents.sessions.setStatus", "channel_not_found")
		u := pipeline.SessionUpdate{ChannelID: "C9", ThreadTS: "1.0", Status: pipeline.SessionProcessing}
		if err := chat.SetSessionStatus(t.Context(), u); err == nil || errors.Is(err, pipeline.ErrNoAgentSessions) {
			t.Fatalf("err = %v, want the thread's error, not a refusal", err)
		}
		if err := chat.SetSessionStatus(t.Context(), u); err != nil {
			t.Fatalf("the next call: %v", err)
		}
	})
}

// The platform's warning (no agent_session_stopped subscription: the stop
// button does nothing) is logged once, not at every status.
func TestChatSessionStatusWarnsOnce(t *testing.T) {
	chat, s := newTestChat(t)
	var logs fake.LogBuffer
	chat.log = slog.New(slog.NewTextHandler(&logs, nil))
	s.Warnings = map[string]string{"agents.sessions.setStatus": "missing_agent_session_stopped_event_subscription"}
	for range 3 {
		if err := chat.SetSessionStatus(t.Context(), pipeline.SessionUpdate{ChannelID: "D1", ThreadTS: "1.0", Status: pipeline.SessionActive}); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "missing_agent_session_stopped_event_subscription"); n != 1 {
		t.Fatalf("warning logged %d times, want once:\n%s", n, logs.String())
	}
}

// Suggested prompts: each its own title and message, at most four, and no
// thread_ts (an agent app's call with one fails silently on the platform).
func TestChatSuggestPrompts(t *testing.T) {
	chat, s := newTestChat(t)
	if err := chat.SuggestPrompts(t.Context(), "D1", []string{"a", "b", "c", "d", "e"}); err != nil {
		t.Fatal(err)
	}
	got := s.Prompts()
	if len(got) != 1 || got[0].Channel != "D1" || got[0].ThreadTS != "" || len(got[0].Prompts) != 4 ||
		got[0].Prompts[3] != (fake.Prompt{Title: "d", Message: "d"}) {
		t.Fatalf("prompts = %+v", got)
	}
	s.Fail("assistant.threads.setSuggestedPrompts", "unknown_method")
	for range 2 {
		if err := chat.SuggestPrompts(t.Context(), "D1", []string{"a"}); err == nil {
			t.Fatal("a refused call succeeded")
		}
	}
	if n := strings.Count(strings.Join(s.Calls(), " "), "assistant.threads.setSuggestedPrompts"); n != 2 {
		t.Fatalf("the platform was asked %d times, want 2 (the refusal remembered)", n)
	}
}
