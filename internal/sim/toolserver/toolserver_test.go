package toolserver

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// A call with an issued token runs as its account; a request without one
// is refused (401) and seen as refused, and runs nothing.
func TestServerActsAsTheTokensAccount(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	refused := 0
	s := Start("tracker", []Tool{{Name: "whoami", Answer: "acting as {account}"}},
		func(tool, account string) { mu.Lock(); calls = append(calls, tool+" "+account); mu.Unlock() },
		func() { mu.Lock(); refused++; mu.Unlock() })
	defer s.Close()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL,
		HTTPClient: &http.Client{Transport: bearer{s.Issue("ana@tracker")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; txt != "acting as ana@tracker" {
		t.Fatalf("answer = %q", txt)
	}
	sess.Close()
	resp, err := http.Post(s.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a token: %s", resp.Status)
	}
	if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL,
		HTTPClient: &http.Client{Transport: bearer{"not-issued"}}}, nil); err == nil {
		t.Fatal("a token it did not issue connected")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 || calls[0] != "whoami ana@tracker" {
		t.Fatalf("calls = %q", calls)
	}
	if refused < 2 {
		t.Fatalf("refused = %d, want the request without a token and the one with a token not issued", refused)
	}
}
