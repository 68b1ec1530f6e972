package slackio

import (
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// TestChatKeepsItsConnections: calls in flight together — a turn's status
// line (the JSON call), its post and its edit, two turns at once — reuse
// the connections of the calls before them. With net/http's two idle
// connections per host, every round opened the ones past two again (the
// fake speaks HTTP/1.1, as a proxy or gateway may: a TLS handshake each
// over https).
func TestChatKeepsItsConnections(t *testing.T) {
	s := fake.NewSlack(t)
	// As agent start builds it: a client with a timeout and no transport.
	client := NewClient(fake.DefaultBotToken, fake.DefaultAppToken, s.URL(), &http.Client{Timeout: time.Minute})
	chat := NewChat(client, fake.DefaultBotToken, s.URL(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	chat.SetLoadingMessages([]string{"Reading the thread"})
	ts, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C1", ThreadTS: "1.0", Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	const inFlight, rounds = 6, 10
	before := s.HTTPConnections()
	fake.InRounds(t, rounds, inFlight, func(i int) error {
		m := pipeline.Message{ChannelID: "C1", ThreadTS: "1.0", Text: "an answer"}
		switch i % 3 {
		case 0:
			return chat.SetStatus(t.Context(), "C1", "1.0", "is thinking…")
		case 1:
			_, err := chat.Post(t.Context(), m)
			return err
		default:
			return chat.Update(t.Context(), ts, m)
		}
	})
	// At most inFlight are open at once; a call may start just before
	// another's connection is back in the pool, hence the room.
	if opened := s.HTTPConnections() - before; opened > 2*inFlight {
		t.Errorf("%d rounds of %d calls at once opened %d connections, want at most %d", rounds, inFlight, opened, 2*inFlight)
	}
	if got := len(s.Statuses()); got != rounds*2 {
		t.Errorf("status calls = %d, want %d", got, rounds*2)
	}
}
