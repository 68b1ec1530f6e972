// Package toolserver is the simulator's tool server with per-person
// sign-in ("auth": "oauth" in mcp.json): the tool-server protocol over
// streamable HTTP on a loopback listener, demanding on every request a
// bearer token it issued to one account. Its tools answer canned texts
// naming the account whose token called them, so that a scenario's
// transcript shows whose account acted; the sign-in itself stays out of
// the simulator (the runner stores each connected person's token as a
// sign-in would).
package toolserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Account is what a tool's answer replaces with the account acting.
const Account = "{account}"

// Tool is one tool of the server and its canned answer.
type Tool struct {
	Name   string
	Answer string
}

// Server is one running tool server.
type Server struct {
	// URL is its address (mcp.json's "url").
	URL string

	hs *httptest.Server
	// onCall sees each tool call the server runs, and onRefused each
	// request it refuses (no token, or one it did not issue).
	onCall    func(tool, account string)
	onRefused func()

	mu       sync.Mutex
	accounts map[string]string // token → account
}

// Start serves tools on a loopback listener until Close. onCall and
// onRefused may be nil.
func Start(name string, tools []Tool, onCall func(tool, account string), onRefused func()) *Server {
	s := &Server{accounts: map[string]string{}, onCall: onCall, onRefused: onRefused}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sim-" + name, Version: "1"}, nil)
	type noInput struct{}
	for _, t := range tools {
		mcp.AddTool(srv, &mcp.Tool{Name: t.Name, Description: "The simulator's " + name + " tool " + t.Name + "."},
			func(ctx context.Context, req *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
				account := ""
				if info := req.Extra.TokenInfo; info != nil {
					account = info.UserID
				}
				if s.onCall != nil {
					s.onCall(t.Name, account)
				}
				text := strings.ReplaceAll(t.Answer, Account, account)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
			})
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		s.mu.Lock()
		account, ok := s.accounts[token]
		s.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: account}, nil
	}
	// The tokens it issues do not expire: the simulator renews none.
	guarded := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(handler)
	s.hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			http.NotFound(w, r)
			return
		}
		if !s.knows(r) && s.onRefused != nil {
			s.onRefused()
		}
		guarded.ServeHTTP(w, r)
	}))
	s.URL = s.hs.URL + "/mcp"
	return s
}

// knows reports whether r carries a token the server issued.
func (s *Server) knows(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok = s.accounts[token]
	return ok
}

// Issue returns a new token for account: random, known only to the
// server and to whoever stores it.
func (s *Server) Issue(account string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand's contract)
	token := hex.EncodeToString(b)
	s.mu.Lock()
	s.accounts[token] = account
	s.mu.Unlock()
	return token
}

// Close stops the server, cutting the connections still open (a session's
// stream).
func (s *Server) Close() {
	s.hs.CloseClientConnections()
	s.hs.Close()
}
