package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPAuth gives the tokens of the servers each person signs in to
// ("auth": "oauth"); internal/connect implements it.
type MCPAuth interface {
	// Token returns user's access token for server, renewed first when
	// it has expired or is the one the server just refused (stale).
	// refusal, when set, is the tool result the model gets instead (the
	// person has not connected): the server is then not called.
	Token(ctx context.Context, user, server, stale string) (token, refusal string, err error)
	// Users are the people connected to server.
	Users(ctx context.Context, server string) ([]string, error)
}

// mcpMaxListers is how many people's tokens the mount tries to list an
// "auth": "oauth" server's tools with at start.
const mcpMaxListers = 3

// mcpPerson is an "auth": "oauth" server: one session per person, each
// opened and used with that person's token only, never another's.
type mcpPerson struct {
	srv  MCPServer
	auth MCPAuth
	o    MCPOptions
	log  *slog.Logger

	mu       sync.Mutex
	opening  sync.Mutex
	sessions map[string]*mcpSession
	known    map[string]bool // the tool names listed so far
	closed   bool
}

// list lists the server's tools as user; the tools not listed before are
// returned.
func (p *mcpPerson) list(ctx context.Context, user string) ([]Tool, error) {
	s, listed, err := p.open(ctx, user, true)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Tool
	for _, t := range listed {
		tool, err := s.tool(t)
		if err != nil {
			p.log.WarnContext(ctx, "tool server tool skipped", "server", p.srv.Name, "tool", t.Name, "error", err.Error())
			continue
		}
		if p.known[tool.Name] {
			continue
		}
		p.known[tool.Name] = true
		out = append(out, p.personal(tool, t.Name))
	}
	return out, nil
}

// personal makes a listed tool act as the turn's sender.
func (p *mcpPerson) personal(t Tool, remote string) Tool {
	t.Call = func(ctx context.Context, input json.RawMessage) (Result, error) {
		user := ""
		if turn, ok := TurnFromContext(ctx); ok && turn.Event != nil {
			user = turn.Event.UserID
		}
		_, refusal, err := p.auth.Token(ctx, user, p.srv.Name, "")
		switch {
		case err != nil:
			return Errorf("tool server %q: %s", p.srv.Name, err.Error()), nil
		case refusal != "":
			return Errorf("%s", refusal), nil
		}
		s, _, err := p.open(ctx, user, false)
		if err != nil {
			return Errorf("tool server %q: %s", p.srv.Name, s.scrubLine(err.Error())), nil
		}
		res := s.call(ctx, remote, input)
		if res.IsError {
			if s.died.Load() || s.closing.Load() {
				p.drop(user, s) // the next call opens a new session
			}
			// A renewal refused on the way forgot the connection: say
			// so rather than the transport's error.
			if _, refusal, err := p.auth.Token(ctx, user, p.srv.Name, ""); err == nil && refusal != "" {
				p.drop(user, s)
				return Errorf("%s", refusal), nil
			}
		}
		return res, nil
	}
	return t
}

// open returns user's session, opening it (listing the tools when list is
// set, or when it is new).
func (p *mcpPerson) open(ctx context.Context, user string, list bool) (*mcpSession, []*mcp.Tool, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return &mcpSession{srv: p.srv}, nil, errors.New("closed")
	}
	s, ok := p.sessions[user]
	p.mu.Unlock()
	if ok && !list && !s.died.Load() && !s.closing.Load() {
		return s, nil, nil
	}
	// One opening at a time: two turns of one person starting together
	// share the session the first opens, rather than one closing the
	// other's.
	p.opening.Lock()
	defer p.opening.Unlock()
	p.mu.Lock()
	s, ok = p.sessions[user]
	p.mu.Unlock()
	if ok && !list && !s.died.Load() && !s.closing.Load() {
		return s, nil, nil
	}
	s = &mcpSession{srv: p.srv, log: p.log, user: user, auth: p.auth}
	// The connection lives past ctx (a turn's): it ends at Close, or when
	// the server goes.
	listed, err := s.connect(context.WithoutCancel(ctx), p.o)
	if err != nil {
		return s, nil, err
	}
	go s.watch()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = s.close()
		return s, nil, errors.New("closed")
	}
	if old, ok := p.sessions[user]; ok && old != s {
		go old.close()
	}
	p.sessions[user] = s
	return s, listed, nil
}

// drop forgets user's session s.
func (p *mcpPerson) drop(user string, s *mcpSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[user] == s {
		delete(p.sessions, user)
	}
}

// close ends every person's session.
func (p *mcpPerson) close() error {
	p.mu.Lock()
	p.closed = true
	ss := p.sessions
	p.sessions = nil
	p.mu.Unlock()
	var errs []error
	for _, s := range ss {
		if err := s.close(); err != nil && !s.died.Load() {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Discover lists the tools of the "auth": "oauth" server with user's
// token (after their sign-in) and returns those not known yet, for the
// registry: a server nobody had connected to at start has its tools once
// someone does.
func (m *MCPMount) Discover(ctx context.Context, server, user string) ([]Tool, error) {
	if m == nil {
		return nil, nil
	}
	p, ok := m.people[server]
	if !ok {
		return nil, nil
	}
	tools, err := p.list(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("list tools of %q: %s", server, p.srv.scrub(err.Error()))
	}
	return tools, nil
}

// mountPerson lists an "auth": "oauth" server's tools with the token of
// someone connected (a few are tried); with nobody, it has none until a
// first sign-in (Discover).
func mountPerson(ctx context.Context, srv MCPServer, o MCPOptions, log *slog.Logger) (*mcpPerson, []Tool) {
	p := &mcpPerson{srv: srv, auth: o.Auth, o: o, log: log, sessions: map[string]*mcpSession{}, known: map[string]bool{}}
	if o.Auth == nil {
		log.WarnContext(ctx, "tool server skipped", "server", srv.Name, "error", "per-person sign-in is not configured")
		return p, nil
	}
	users, err := o.Auth.Users(ctx, srv.Name)
	if err != nil {
		log.WarnContext(ctx, "tool server: connected people", "server", srv.Name, "error", err.Error())
	}
	for i, u := range users {
		if i == mcpMaxListers {
			break
		}
		tools, err := p.list(ctx, u)
		if err == nil {
			log.InfoContext(ctx, "tool server mounted", "server", srv.Name, "type", srv.Type, "tools", len(tools), "auth", MCPAuthOAuth)
			return p, tools
		}
		log.WarnContext(ctx, "tool server: listing as a connected person failed", "server", srv.Name, "error", p.srv.scrub(err.Error()))
	}
	log.InfoContext(ctx, "tool server waits for a first sign-in (/connect) to list its tools", "server", srv.Name)
	return p, nil
}

// bearerTransport adds the person's token to the requests for the
// server's own host (never elsewhere, a redirect included), and on a 401
// renews it once and sends the request again.
type bearerTransport struct {
	base         http.RoundTripper
	host         string
	user, server string
	auth         MCPAuth
}

// RoundTrip implements http.RoundTripper.
func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != t.host {
		return t.base.RoundTrip(req)
	}
	tok, refusal, err := t.auth.Token(req.Context(), t.user, t.server, "")
	if err != nil {
		return nil, err
	}
	if refusal != "" {
		return nil, errors.New(refusal)
	}
	resp, err := t.base.RoundTrip(withBearer(req, tok))
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	fresh, refusal, err := t.auth.Token(req.Context(), t.user, t.server, tok)
	if err != nil || refusal != "" || fresh == tok {
		return resp, nil
	}
	resp.Body.Close()
	again := withBearer(req, fresh)
	if req.GetBody != nil {
		if again.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(again)
}

func withBearer(req *http.Request, tok string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// personClient is the HTTP client of user's session with an "auth":
// "oauth" server.
func (s *mcpSession) personClient(u *url.URL, base http.RoundTripper) *http.Client {
	return &http.Client{Transport: &bearerTransport{base: base, host: u.Host, user: s.user, server: s.srv.Name, auth: s.auth}}
}
