package tools

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/persona-runtime/agent/internal/fake"
)

// TestMountMCPKeepsItsConnections: calls of turns running together to one
// server over HTTP reuse the connections of the calls before them (with
// net/http's two kept per host, every round opened the ones past two again:
// the test server speaks HTTP/1.1, as a server inside a cluster may), and
// the mount's CloseIdleConnections and Close let them go.
func TestMountMCPKeepsItsConnections(t *testing.T) {
	srv := newMCPTestServer(false)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(time.Millisecond) // the calls of a round overlap
		}
		h.ServeHTTP(w, r)
	}))
	conns := fake.CountConns(ts)
	ts.Start()
	t.Cleanup(ts.Close)
	path := writeMCPJSON(t, map[string]any{"web": map[string]any{"type": "http", "url": "${SRV}/mcp"}})
	m := mcpMount(t, path, mcpMapEnv(map[string]string{"SRV": ts.URL}), MCPOptions{})
	var echo Tool
	for _, tool := range m.Tools() {
		if tool.Name == "mcp__web__echo" {
			echo = tool
		}
	}
	if echo.Call == nil {
		t.Fatalf("no echo tool in %v", mcpToolNames(m))
	}
	mounted := conns.Opened()

	const calls, rounds = 6, 10
	fake.InRounds(t, rounds, calls, func(int) error {
		res, err := echo.Call(t.Context(), json.RawMessage(`{"text":"hi"}`))
		if err == nil && (res.IsError || res.Text != "hi") {
			err = fmt.Errorf("echo = %+v", res)
		}
		return err
	})
	// At most calls are open at once; a call may start just before
	// another's connection is back in the pool, hence the room.
	if n := conns.Opened() - mounted; n > 2*calls {
		t.Errorf("%d rounds of %d calls at once opened %d connections, want at most %d", rounds, calls, n, 2*calls)
	}

	// What is idle goes; a stream the server holds open (its GET, if any)
	// is in use, not idle.
	m.CloseIdleConnections()
	if !fake.Eventually(5*time.Second, func() bool { return conns.Closed() >= conns.Opened()-1 }) {
		t.Errorf("after CloseIdleConnections the server saw %d of %d connections closed", conns.Closed(), conns.Opened())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !fake.Eventually(5*time.Second, func() bool { return conns.Closed() == conns.Opened() }) {
		t.Errorf("after Close the server saw %d of %d connections closed", conns.Closed(), conns.Opened())
	}
}
