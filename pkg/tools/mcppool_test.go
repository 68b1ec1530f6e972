package tools

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMountMCPKeepsItsConnections: calls of turns running together to one
// server over HTTP reuse the connections of the calls before them (with
// net/http's two kept per host, every round opened the ones past two again:
// the test server speaks HTTP/1.1, as a server inside a cluster may), and
// the mount's CloseIdleConnections and Close let them go.
func TestMountMCPKeepsItsConnections(t *testing.T) {
	var opened, closed atomic.Int64
	srv := newMCPTestServer(false)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(time.Millisecond) // the calls of a round overlap
		}
		h.ServeHTTP(w, r)
	}))
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
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
	mounted := opened.Load()

	const calls, rounds = 6, 10
	for range rounds {
		var wg sync.WaitGroup
		errs := make([]error, calls)
		for i := range calls {
			wg.Go(func() {
				res, err := echo.Call(t.Context(), json.RawMessage(`{"text":"hi"}`))
				if err == nil && (res.IsError || res.Text != "hi") {
					t.Errorf("echo = %+v", res)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// At most calls are open at once; a call may start just before
	// another's connection is back in the pool, hence the room.
	if n := opened.Load() - mounted; n > 2*calls {
		t.Errorf("%d rounds of %d calls at once opened %d connections, want at most %d", rounds, calls, n, 2*calls)
	}

	// What is idle goes; a stream the server holds open (its GET, if any)
	// is in use, not idle.
	waitFor := func(want int64) int64 {
		deadline := time.Now().Add(5 * time.Second)
		for closed.Load() < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		return closed.Load()
	}
	m.CloseIdleConnections()
	if c, n := waitFor(opened.Load()-1), opened.Load(); c < n-1 {
		t.Errorf("after CloseIdleConnections the server saw %d of %d connections closed", c, n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if c, n := waitFor(opened.Load()), opened.Load(); c != n {
		t.Errorf("after Close the server saw %d of %d connections closed", c, n)
	}
}
