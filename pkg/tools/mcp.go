package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/persona-runtime/agent/pkg/httppool"
)

// DefaultMCPConnectTimeout bounds starting, initialising and listing one
// tool server when MCPOptions.ConnectTimeout is zero. It is generous because
// a package runner's first start of a server downloads the package.
const DefaultMCPConnectTimeout = 30 * time.Second

// mcpClientInfo is how the runtime introduces itself to tool servers.
var mcpClientInfo = &mcp.Implementation{Name: "persona-agent", Version: "1"}

// MCPOptions configures MountMCP.
type MCPOptions struct {
	// Runner replaces the command npx of stdio servers
	// (AGENT_PACKAGE_RUNNER); it may carry leading arguments ("pnpm dlx").
	// "" or "npx" leaves npx alone.
	Runner string
	// BaseEnv is the environment of every stdio server before its entry's
	// env: a minimal set such as PATH, HOME, LANG. Nothing else is inherited;
	// CHAT_* and LLM_* variables are dropped from it even if present.
	BaseEnv []string
	// Log receives one warning per server that could not be mounted or
	// exited, and one info line per mounted server; nil discards.
	Log *slog.Logger
	// ConnectTimeout bounds the mounting of one server; zero means
	// DefaultMCPConnectTimeout.
	ConnectTimeout time.Duration
	// Sandbox, when set, confines every stdio server; each gets
	// StateDir/<name> as its writable HOME.
	Sandbox  Confiner
	StateDir string
	// Auth gives each person's token for the "auth": "oauth" servers.
	Auth MCPAuth
	// Deny are the runtime's files no server may read (.env, mcp.json,
	// the database): a folder that holds one is never granted to a
	// confined server, only the files it names there (serverReadable).
	Deny []string

	// pool carries the requests of the servers over HTTP: the mount's
	// own (pkg/httppool), made by MountMCP; nil is http.DefaultTransport.
	pool http.RoundTripper
}

// MCPMount is the set of external tool servers mounted from an MCPConfig.
type MCPMount struct {
	tools    []Tool
	sessions []*mcpSession
	// people are the "auth": "oauth" servers, by name.
	people map[string]*mcpPerson
	// pool carries the requests of the servers over HTTP
	// (MCPOptions.pool): turns calling one server at once reuse each
	// other's connections.
	pool http.RoundTripper

	closeOnce sync.Once
	closeMu   sync.Mutex
	closeErr  error
}

// mcpSession is one connected tool server.
type mcpSession struct {
	srv MCPServer
	log *slog.Logger
	cs  *mcp.ClientSession
	// stop ends the connection's context (an SSE stream lives on it).
	stop context.CancelFunc
	// proc is the stdio server's process, for the process-group sweep.
	proc   processHandle
	stderr *tailBuffer
	// unconfine removes the sandbox's private folders once the server is
	// gone; nil when unconfined.
	unconfine func()

	// user and auth are set on a person's session with an "auth": "oauth"
	// server: every request carries that person's token.
	user string
	auth MCPAuth

	closing atomic.Bool // Close has begun: an exit is expected
	died    atomic.Bool // the server went away on its own (already logged)
}

// MountMCP connects to every server of cfg in parallel, lists its tools and
// returns them named mcp__<server>__<tool>. A server that fails to start,
// initialise or list within the timeout is logged as a warning and skipped;
// the only error is ctx ending, after which nothing stays mounted. The
// caller must Close the mount.
func MountMCP(ctx context.Context, cfg *MCPConfig, o MCPOptions) (*MCPMount, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultMCPConnectTimeout
	}
	o.pool = httppool.New()
	m := &MCPMount{people: map[string]*mcpPerson{}, pool: o.pool}
	if cfg == nil || len(cfg.Servers) == 0 {
		return m, nil
	}
	var shared []MCPServer
	for _, srv := range cfg.Servers {
		if srv.Auth != MCPAuthOAuth {
			shared = append(shared, srv)
			continue
		}
		p, tools := mountPerson(ctx, srv, o, log)
		m.people[srv.Name] = p
		m.tools = append(m.tools, tools...)
	}
	cfg = &MCPConfig{Servers: shared}
	type mounted struct {
		s     *mcpSession
		tools []*mcp.Tool
		err   error
	}
	results := make([]mounted, len(cfg.Servers))
	var wg sync.WaitGroup
	for i, srv := range cfg.Servers {
		wg.Go(func() {
			s := &mcpSession{srv: srv.withRunner(o.Runner), log: log}
			results[i].s = s
			results[i].tools, results[i].err = s.connect(ctx, o)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil { // shutting down: not a server's fault
		for _, r := range results {
			if r.err == nil {
				_ = r.s.close()
			}
		}
		return nil, fmt.Errorf("mount tool servers: %w", err)
	}

	seen := map[string]bool{}
	for _, r := range results {
		s := r.s
		if r.err != nil {
			attrs := []any{"server", s.srv.Name, "type", s.srv.Type, "error", s.scrubLine(r.err.Error())}
			if s.stderr != nil && s.stderr.String() != "" {
				attrs = append(attrs, "stderr", s.srv.scrub(s.stderr.String()))
			}
			log.WarnContext(ctx, "tool server skipped", attrs...)
			continue
		}
		m.sessions = append(m.sessions, s)
		n := 0
		for _, t := range r.tools {
			tool, err := s.tool(t)
			if err == nil && seen[tool.Name] {
				err = fmt.Errorf("duplicate tool name %s", tool.Name)
			}
			if err != nil {
				log.WarnContext(ctx, "tool server tool skipped", "server", s.srv.Name, "tool", t.Name, "error", err.Error())
				continue
			}
			seen[tool.Name] = true
			m.tools = append(m.tools, tool)
			n++
		}
		log.InfoContext(ctx, "tool server mounted", "server", s.srv.Name, "type", s.srv.Type, "tools", n)
		go s.watch()
	}
	return m, nil
}

// connect starts (for stdio) and initialises the server and lists its
// tools. On failure it leaves nothing running.
func (s *mcpSession) connect(ctx context.Context, o MCPOptions) ([]*mcp.Tool, error) {
	if len(s.srv.Missing) > 0 {
		s.log.WarnContext(ctx, "tool server config references unset variables",
			"server", s.srv.Name, "variables", strings.Join(s.srv.Missing, ","))
	}
	transport, err := s.transport(o)
	if err != nil {
		return nil, err
	}
	// The connection outlives ctx and the timeout (the SSE transport ties
	// its stream to the context it connects with), so it gets its own
	// context, cancelled only by the timeout while connecting, or by Close.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	unhook := context.AfterFunc(cctx, stop)

	var tools []*mcp.Tool
	cs, err := mcp.NewClient(mcpClientInfo, nil).Connect(life, transport, nil)
	if err == nil {
		s.cs = cs
		for t, lerr := range cs.Tools(life, nil) {
			if lerr != nil {
				err = fmt.Errorf("list tools: %w", lerr)
				break
			}
			tools = append(tools, t)
		}
	}
	if !unhook() { // the timeout or ctx fired: the connection is gone
		if err == nil {
			err = context.Canceled
		}
		if ctx.Err() == nil {
			err = fmt.Errorf("no answer within %s: %w", o.ConnectTimeout, err)
		}
	}
	if err != nil {
		_ = s.close()
		return nil, err
	}
	return tools, nil
}

// watch logs a server that goes away on its own and closes its session, so
// its process is reaped and its calls fail fast.
func (s *mcpSession) watch() {
	err := s.cs.Wait()
	if !s.closing.CompareAndSwap(false, true) {
		return // Close came first: an expected exit
	}
	s.died.Store(true)
	attrs := []any{"server", s.srv.Name}
	if err != nil {
		attrs = append(attrs, "error", s.scrubLine(err.Error()))
	}
	if s.stderr != nil && s.stderr.String() != "" {
		attrs = append(attrs, "stderr", s.srv.scrub(s.stderr.String()))
	}
	s.log.Warn("tool server exited", attrs...)
	_ = s.close()
}

// close ends the session: the SDK closes stdin, waits, sends SIGTERM, then
// kills; what the server left behind in its process group is then ended.
func (s *mcpSession) close() error {
	s.closing.Store(true)
	var err error
	if s.cs != nil {
		err = s.cs.Close()
	}
	if s.stop != nil {
		s.stop()
	}
	s.proc.endGroup()
	if s.unconfine != nil {
		s.unconfine()
	}
	return err
}

// Tools returns the mounted tools, servers in name order, each server's
// tools in its own order.
func (m *MCPMount) Tools() []Tool {
	if m == nil {
		return nil
	}
	return append([]Tool(nil), m.tools...)
}

// CloseIdleConnections closes the idle connections of the servers over
// HTTP (the service's, once no session is live); calls in flight keep
// theirs, and an SSE server's stream is in use, not idle.
func (m *MCPMount) CloseIdleConnections() {
	if m != nil {
		httppool.CloseIdle(m.pool)
	}
}

// Close closes every session in parallel and returns one error naming the
// servers that did not close cleanly. It is idempotent.
func (m *MCPMount) Close() error {
	if m == nil {
		return nil
	}
	m.closeOnce.Do(func() {
		errs := make([]string, len(m.sessions))
		var wg sync.WaitGroup
		for i, s := range m.sessions {
			wg.Go(func() {
				if err := s.close(); err != nil && !s.died.Load() {
					errs[i] = fmt.Sprintf("tool server %q: %s", s.srv.Name, s.scrubLine(err.Error()))
				}
			})
		}
		var personal []string
		for _, p := range m.people {
			wg.Go(func() {
				if err := p.close(); err != nil {
					m.closeMu.Lock()
					personal = append(personal, fmt.Sprintf("tool server %q: %s", p.srv.Name, p.srv.scrub(err.Error())))
					m.closeMu.Unlock()
				}
			})
		}
		wg.Wait()
		// Nothing is left to use the pool's connections.
		httppool.CloseIdle(m.pool)
		errs = append(errs, personal...)
		var msgs []string
		for _, e := range errs {
			if e != "" {
				msgs = append(msgs, e)
			}
		}
		if len(msgs) > 0 {
			m.closeErr = errors.New("close tool servers: " + strings.Join(msgs, "; "))
		}
	})
	return m.closeErr
}

// scrubLine makes an error text safe and one line.
func (s *mcpSession) scrubLine(text string) string {
	return strings.Join(strings.Fields(s.srv.scrub(text)), " ")
}
