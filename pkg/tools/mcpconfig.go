package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Transport types of an MCPServer.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
	MCPSSE   = "sse"
)

// mcpServerName is what a server name may be: it becomes part of the tool
// names the model sees (mcp__<server>__<tool>), whose alphabet is this one.
var mcpServerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// mcpReservedServers are the in-process tool servers; an mcp.json entry of
// the same name would produce duplicate tool names (a Registry panic).
var mcpReservedServers = map[string]bool{"agent_chat": true, "agent_skills": true, "agent_kb": true}

// MCPConfig is a parsed mcp.json: the external tool servers to mount.
type MCPConfig struct {
	// Servers is sorted by name, so mounting and tool order are stable.
	Servers []MCPServer
}

// MCPServer is one entry of mcp.json, with ${VAR} references expanded.
type MCPServer struct {
	Name string
	// Type is MCPStdio, MCPHTTP or MCPSSE.
	Type string

	// Command, Args and Env describe a stdio server. Env is added to the
	// minimal base environment of MCPOptions; nothing else is inherited.
	Command string
	Args    []string
	Env     map[string]string

	// URL and Headers describe an HTTP or SSE server.
	URL     string
	Headers map[string]string

	// Auth is MCPAuthOAuth when each person signs in with their own
	// account ("auth": "oauth"); ClientID, ClientSecret and Scopes are
	// then the operator's client (optional: without a ClientID the
	// client registers itself) and the scopes asked for.
	Auth         string
	ClientID     string
	ClientSecret string
	Scopes       []string

	// Missing lists the variables referenced without a default that were
	// unset or empty; they expanded to "". Mounting warns about them.
	Missing []string

	// secrets are the values that must never appear in logs or errors:
	// every expanded variable, env value and header value.
	secrets []string
	// credentials are those of the secrets that look like credentials
	// (credentialValue): they join the runtime's redactor.
	credentials []string
}

// Secrets are the credentials the servers of c are given — the values of
// ${VAR} references, env variables, headers and URL parameters whose name
// says credential or whose value looks like one (credentialValue), and
// URL passwords — for the runtime's redactor, so that a tool server's
// token never shows in a reply, a log line or a tool's output.
func (c *MCPConfig) Secrets() []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.credentials...)
	}
	return out
}

// mcpFile is the on-disk shape of mcp.json.
type mcpFile struct {
	MCPServers map[string]struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		// Per-person sign-in (issue 36).
		Auth         string   `json:"auth"`
		ClientID     string   `json:"client_id"`
		ClientSecret string   `json:"client_secret"`
		Scopes       []string `json:"scopes"`
	} `json:"mcpServers"`
}

// LoadMCPConfig reads the mcp.json at path, expanding ${VAR} and
// ${VAR:-default} with getenv in commands, args, env values, URLs and header
// values. A missing file is an empty config. Bad JSON, a bad server name, an
// entry with neither command nor url, and a reference to one of the
// runtime's own credentials (CHAT_*, LLM_*) are errors naming the file and
// the server or position.
func LoadMCPConfig(path string, getenv func(string) string) (*MCPConfig, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &MCPConfig{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp config: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &MCPConfig{}, nil
	}
	var f mcpFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("mcp config %s: %w", jsonPosition(path, data, err), err)
	}
	cfg := &MCPConfig{}
	for name, e := range f.MCPServers {
		s := MCPServer{Name: name, Type: strings.ToLower(strings.TrimSpace(e.Type))}
		if err := s.validate(e.Command, e.URL); err != nil {
			return nil, fmt.Errorf("mcp config %s: server %q: %w", path, name, err)
		}
		x := expander{getenv: getenv}
		s.Command = x.expand(e.Command)
		for _, a := range e.Args {
			s.Args = append(s.Args, x.expand(a))
		}
		if len(e.Env) > 0 {
			s.Env = make(map[string]string, len(e.Env))
		}
		for k, v := range e.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return nil, fmt.Errorf("mcp config %s: server %q: invalid env name %q", path, name, k)
			}
			s.Env[k] = x.expand(v)
			x.secret(s.Env[k])
			x.credential(k, s.Env[k])
		}
		s.URL = x.expand(e.URL)
		if u, err := url.Parse(s.URL); err == nil {
			// Keys are often passed in the query or as a password, and
			// transport errors quote the whole URL.
			if p, ok := u.User.Password(); ok {
				x.secret(p)
				x.credentials = append(x.credentials, p)
			}
			for k, vs := range u.Query() {
				for _, v := range vs {
					x.secret(v)
					x.credential(k, v)
				}
			}
		}
		if len(e.Headers) > 0 {
			s.Headers = make(map[string]string, len(e.Headers))
		}
		for k, v := range e.Headers {
			s.Headers[k] = x.expand(v)
			x.secret(s.Headers[k])
			x.credential(k, s.Headers[k])
		}
		if err := s.setAuth(e.Auth, e.Scopes); err != nil {
			return nil, fmt.Errorf("mcp config %s: server %q: %w", path, name, err)
		}
		if s.Auth == MCPAuthOAuth {
			s.ClientID = x.expand(e.ClientID)
			s.ClientSecret = x.expand(e.ClientSecret)
			x.secret(s.ClientSecret)
			if s.ClientSecret != "" {
				x.credentials = append(x.credentials, s.ClientSecret)
			}
		} else if e.ClientID != "" || e.ClientSecret != "" {
			return nil, fmt.Errorf("mcp config %s: server %q: client_id and client_secret need \"auth\": \"oauth\"", path, name)
		}
		if x.err != nil {
			return nil, fmt.Errorf("mcp config %s: server %q: %w", path, name, x.err)
		}
		// Longest first, so a secret containing another is scrubbed whole.
		sort.Slice(x.secrets, func(i, j int) bool { return len(x.secrets[i]) > len(x.secrets[j]) })
		s.Missing, s.secrets, s.credentials = x.missing, x.secrets, x.credentials
		cfg.Servers = append(cfg.Servers, s)
	}
	sort.Slice(cfg.Servers, func(i, j int) bool { return cfg.Servers[i].Name < cfg.Servers[j].Name })
	return cfg, nil
}

// validate checks the name and settles the type of an entry.
func (s *MCPServer) validate(command, url string) error {
	switch {
	case !mcpServerName().MatchString(s.Name):
		return errors.New("name must match ^[A-Za-z0-9_-]+$")
	case mcpReservedServers[s.Name]:
		return errors.New("name is reserved for a built-in tool server")
	}
	if s.Type == "" {
		switch {
		case command != "":
			s.Type = MCPStdio
		case url != "":
			s.Type = MCPHTTP
		}
	}
	switch s.Type {
	case "":
		return errors.New("neither command nor url")
	case MCPStdio:
		if command == "" {
			return errors.New("stdio server without a command")
		}
	case MCPHTTP, MCPSSE:
		if url == "" {
			return fmt.Errorf("%s server without a url", s.Type)
		}
	default:
		return fmt.Errorf("unknown type %q (want stdio, http or sse)", s.Type)
	}
	return nil
}

// MCPAuthOAuth is the "auth" of a server each person signs in to with
// their own account.
const MCPAuthOAuth = "oauth"

// setAuth checks and sets the entry's "auth": only "oauth", and only on
// an HTTP or SSE server (a stdio server has no sign-in of its own).
func (s *MCPServer) setAuth(auth string, scopes []string) error {
	switch strings.ToLower(strings.TrimSpace(auth)) {
	case "":
		if len(scopes) > 0 {
			return errors.New(`scopes need "auth": "oauth"`)
		}
		return nil
	case MCPAuthOAuth:
		if s.Type == MCPStdio {
			return errors.New(`"auth": "oauth" needs an http or sse server (a url)`)
		}
		s.Auth, s.Scopes = MCPAuthOAuth, scopes
		return nil
	}
	return fmt.Errorf("unknown auth %q (want \"oauth\")", auth)
}

// OAuth are the servers each person signs in to ("auth": "oauth").
func (c *MCPConfig) OAuth() []MCPServer {
	var out []MCPServer
	for _, s := range c.Servers {
		if s.Auth == MCPAuthOAuth {
			out = append(out, s)
		}
	}
	return out
}

// withRunner returns s with the Node package runner npx replaced by runner,
// which may carry leading arguments ("pnpm dlx"). An empty runner, or npx
// itself, leaves s unchanged.
func (s MCPServer) withRunner(runner string) MCPServer {
	fields := strings.Fields(runner)
	if s.Type != MCPStdio || s.Command != "npx" || len(fields) == 0 || runner == "npx" {
		return s
	}
	s.Command = fields[0]
	s.Args = append(append([]string{}, fields[1:]...), s.Args...)
	return s
}

// isRuntimeCredential reports whether an environment variable belongs to
// the runtime's own credentials and settings (chat tokens and the signing
// secret, LLM keys, the database address with its password, the trace
// exporter's headers), which tool servers must never receive.
func isRuntimeCredential(name string) bool {
	switch name {
	case "AGENT_DB_URL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS":
		return true
	}
	return strings.HasPrefix(name, "CHAT_") || strings.HasPrefix(name, "LLM_")
}

// mcpVarName is a shell variable name.
var mcpVarName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// expander expands ${VAR} and ${VAR:-default}; anything else, including a
// lone $ or an unterminated ${, is kept literally.
type expander struct {
	getenv      func(string) string
	missing     []string
	secrets     []string
	credentials []string
	err         error
}

func (x *expander) expand(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !mcpVarName().MatchString(name) {
			b.WriteString(s[i : i+end+1])
		} else {
			b.WriteString(x.lookup(name, def, hasDef))
		}
		s = s[i+end+1:]
	}
}

func (x *expander) lookup(name, def string, hasDef bool) string {
	if isRuntimeCredential(name) {
		if x.err == nil {
			x.err = fmt.Errorf("${%s} refers to a runtime credential", name)
		}
		return ""
	}
	v := ""
	if x.getenv != nil {
		v = x.getenv(name)
	}
	if v == "" {
		if !hasDef {
			x.missing = append(x.missing, name)
		}
		return def
	}
	x.secret(v)
	// By the variable's name or the value's look: ${HOME} is no
	// credential, and every reply naming a workspace would be masked.
	x.credential(name, v)
	return v
}

// credential records the value of the env variable, header or URL
// parameter key for the runtime's redactor when it is a credential by its
// name or its look (credentialValue); a value with a scheme word
// ("Bearer <token>") gives its token too.
func (x *expander) credential(key, v string) {
	if !credentialValue(key, v) {
		return
	}
	x.credentials = append(x.credentials, v)
	if fields := strings.Fields(v); len(fields) > 1 {
		x.credentials = append(x.credentials, fields[len(fields)-1])
	}
}

// credentialName matches the names of variables, headers and parameters
// that carry credentials.
var credentialName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)key|token|secret|pass|pwd|auth|cred|cookie|session|private|signature|bearer|jwt`)
})

// credentialValue reports whether a value written in mcp.json is a
// credential: by its name (API_TOKEN, Authorization, X-Api-Key), or by its
// look — at least 16 bytes, no space, not a path or an address, and
// mixing at least two of lower case, upper case and digits, as generated
// keys do. Plain settings (NODE_ENV=production, Accept:
// application/json, a path) stay out of the redactor: each would be
// masked in every reply that says the word.
func credentialValue(key, v string) bool {
	if credentialName().MatchString(key) {
		return true
	}
	if len(v) < 16 || strings.ContainsAny(v, " \t\r\n") || strings.ContainsAny(v[:1], "/.~") || strings.Contains(v, "://") {
		return false
	}
	lower, upper, digit := 0, 0, 0
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z':
			lower = 1
		case c >= 'A' && c <= 'Z':
			upper = 1
		case c >= '0' && c <= '9':
			digit = 1
		}
	}
	return lower+upper+digit >= 2
}

// secret records a value to scrub from logs and errors. Very short values
// are skipped: scrubbing "1" would garble every message.
func (x *expander) secret(v string) {
	if len(v) >= 4 {
		x.secrets = append(x.secrets, v)
	}
}

// scrub replaces the server's secrets in s.
func (s *MCPServer) scrub(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// jsonPosition renders path:line:col for a JSON decoding error when the
// error carries an offset, else just path.
func jsonPosition(path string, data []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return path
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}
