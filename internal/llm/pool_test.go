package llm_test

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/llm"
)

// TestDefaultClientKeepsItsConnections: model calls of turns running
// together reuse the connections of the calls before them. With
// net/http's two idle connections per host, every round opened the ones
// past two again (the fake speaks HTTP/1.1, as a gateway at LLM_BASE_URL
// may: a TLS handshake each over https).
func TestDefaultClientKeepsItsConnections(t *testing.T) {
	srv := httptest.NewUnstartedServer(&fake.Anthropic{T: t})
	conns := fake.CountConns(srv)
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL, APIKey: testKey}, slog.New(slog.DiscardHandler), noop.NewTracerProvider().Tracer(""), nil)
	if err != nil {
		t.Fatal(err)
	}
	const turns, rounds = 6, 10
	fake.InRounds(t, rounds, turns, func(int) error {
		_, err := c.Send(t.Context(), userParams("hello"))
		return err
	})
	// At most turns are open at once; a call may start just before
	// another's connection is back in the pool, hence the room.
	if n := conns.Opened(); n > 2*turns {
		t.Errorf("%d rounds of %d calls at once opened %d connections, want at most %d", rounds, turns, n, 2*turns)
	}
}
