package tools

import (
	"errors"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpWaitDelay bounds how long reaping a stdio server waits for its stderr
// to close once it has exited: a grandchild (npx starts node) may hold it.
const mcpWaitDelay = 2 * time.Second

// mcpStderrTail is how much of a stdio server's stderr is kept for the
// warning when it fails: enough for the usual last words (a stack trace's
// head, an npm error) without keeping a chatty server's output.
const mcpStderrTail = 2048

// transport builds the SDK transport of the server.
func (s *mcpSession) transport(o MCPOptions) (mcp.Transport, error) {
	switch s.srv.Type {
	case MCPStdio:
		cmd := exec.Command(s.srv.Command, s.srv.Args...)
		// Always non-nil: a nil Env would inherit the runtime's environment,
		// credentials included.
		cmd.Env = mcpEnv(o.BaseEnv, s.srv.Env)
		s.stderr = &tailBuffer{}
		cmd.Stderr = s.stderr
		cmd.WaitDelay = mcpWaitDelay
		s.proc.prepare(cmd)
		if o.Sandbox != nil {
			if cmd.Err != nil {
				return nil, cmd.Err
			}
			if o.StateDir == "" {
				return nil, errors.New("no state folder for a confined tool server")
			}
			readable, withheld := serverReadable(cmd, o.Deny)
			if len(withheld) > 0 && o.Log != nil {
				o.Log.Warn("tool server: a folder on its command line holds the runtime's secrets and is not readable to it",
					"server", s.srv.Name, "folders", strings.Join(withheld, ", "))
			}
			cleanup, err := o.Sandbox.Server(cmd, filepath.Join(o.StateDir, s.srv.Name), readable)
			if err != nil {
				return nil, err
			}
			s.unconfine = sync.OnceFunc(cleanup)
		}
		return &mcp.CommandTransport{Command: cmd}, nil
	case MCPHTTP, MCPSSE:
		u, err := url.Parse(s.srv.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("url is not an http or https address")
		}
		base := o.pool
		if base == nil {
			base = http.DefaultTransport
		}
		client := &http.Client{Transport: &headerTransport{base: base, host: u.Host, header: s.srv.Headers}}
		if s.srv.Auth == MCPAuthOAuth {
			client = s.personClient(u, client.Transport)
		}
		if s.srv.Type == MCPSSE {
			return &mcp.SSEClientTransport{Endpoint: s.srv.URL, HTTPClient: client}, nil
		}
		return &mcp.StreamableClientTransport{Endpoint: s.srv.URL, HTTPClient: client}, nil
	}
	return nil, errors.New("unknown transport type " + s.srv.Type)
}

// mcpEnv is the whole environment of a stdio server: base without the
// runtime's credentials, overridden and extended by the entry's env, which
// is taken as given (it is the operator's explicit choice).
func mcpEnv(base []string, extra map[string]string) []string {
	env := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || isRuntimeCredential(k) {
			continue
		}
		if _, over := extra[k]; over {
			continue
		}
		env = append(env, kv)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// headerTransport adds the configured headers to requests for the server's
// own host only, so a redirect elsewhere does not carry its credentials.
type headerTransport struct {
	base   http.RoundTripper
	host   string
	header map[string]string
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 && req.URL.Host == t.host {
		req = req.Clone(req.Context())
		for k, v := range t.header {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

// tailBuffer keeps the last mcpStderrTail bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - mcpStderrTail; over > 0 {
		t.buf = append(t.buf[:0:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the tail, trimmed.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
