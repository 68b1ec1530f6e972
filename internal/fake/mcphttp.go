package fake

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ToolCall is one call a [ToolServer] answered: as whom, with which token.
type ToolCall struct {
	Account string
	Token   string
	Tool    string
	Args    map[string]any
}

// ToolServer is an HTTP tool server (streamable HTTP) that demands a
// bearer token from its [OAuth] server on every request: without one it
// answers 401 with WWW-Authenticate naming its protected-resource
// metadata. Its tools: whoami (says the account acting) and create_issue
// (title; says who created it). URL is the server's address (/mcp).
type ToolServer struct {
	*httptest.Server
	URL string

	mu    sync.Mutex
	calls []ToolCall
	seen  []string // every bearer token of every request, in order
}

// NewToolServer starts the server for as; it stops with the test.
func NewToolServer(t testing.TB, as *OAuth) *ToolServer {
	ts := &ToolServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-tracker", Version: "1"}, nil)
	type noInput struct{}
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says whose account acts."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
			acc := ts.record(req, "whoami", nil)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "acting as " + acc}}}, nil, nil
		})
	type issueInput struct {
		Title string `json:"title"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "create_issue", Description: "Creates an issue."},
		func(ctx context.Context, req *mcp.CallToolRequest, in issueInput) (*mcp.CallToolResult, any, error) {
			acc := ts.record(req, "create_issue", map[string]any{"title": in.Title})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("issue %q created by %s", in.Title, acc)}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	ts.Server = httptest.NewUnstartedServer(mux)
	ts.Start()
	ts.URL = ts.Server.URL + "/mcp"
	verify := func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		acc, exp, ok := as.Verify(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: acc, Expiration: exp, Extra: map[string]any{"token": token}}, nil
	}
	metaURL := ts.Server.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(
		&oauthex.ProtectedResourceMetadata{Resource: ts.URL, AuthorizationServers: []string{as.URL}}))
	mux.Handle("/mcp", ts.see(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metaURL})(handler)))
	t.Cleanup(ts.Close)
	return ts
}

// see records the bearer token of each request.
func (ts *ToolServer) see(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			ts.mu.Lock()
			ts.seen = append(ts.seen, tok)
			ts.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (ts *ToolServer) record(req *mcp.CallToolRequest, tool string, args map[string]any) string {
	info := req.Extra.TokenInfo
	c := ToolCall{Tool: tool, Args: args}
	if info != nil {
		c.Account = info.UserID
		c.Token, _ = info.Extra["token"].(string)
	}
	ts.mu.Lock()
	ts.calls = append(ts.calls, c)
	ts.mu.Unlock()
	return c.Account
}

// Calls are the tool calls answered, in order.
func (ts *ToolServer) Calls() []ToolCall {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]ToolCall(nil), ts.calls...)
}

// Tokens are the bearer tokens of every request, in order.
func (ts *ToolServer) Tokens() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.seen...)
}
