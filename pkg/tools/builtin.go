package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/persona-runtime/agent/pkg/secret"
)

// Names of the built-in tools: the well-known coding-agent tools
// (interfaces.md), called by their bare names.
const (
	BuiltinRead  = "Read"
	BuiltinWrite = "Write"
	BuiltinEdit  = "Edit"
	BuiltinGrep  = "Grep"
	BuiltinGlob  = "Glob"
	BuiltinLS    = "LS"
	BuiltinBash  = "Bash"
)

// Limits of the built-in tools.
const (
	// DefaultBashTimeout and MaxBashTimeout are the well-known Bash tool's
	// default and ceiling: two minutes unless the call asks for more, never
	// more than ten.
	DefaultBashTimeout = 2 * time.Minute
	MaxBashTimeout     = 10 * time.Minute
	// DefaultMaxOutput is the byte cap of one tool result: the well-known
	// Bash tool truncates its output at 30000 characters.
	DefaultMaxOutput = 30000
)

// builtinRedacted replaces every secret value in tool output.
const builtinRedacted = "[redacted]"

// builtinDefaultEnv is Bash's environment when BuiltinOptions.Env is empty:
// a search path for the usual tools and a UTF-8 locale, nothing else.
var builtinDefaultEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C.UTF-8",
}

// BuiltinOptions configure the built-in file and shell tools.
type BuiltinOptions struct {
	// Home is AGENT_HOME; <Home>/skills and <Home>/knowledge are the shared
	// folders the tools may read and write besides the thread's workspace.
	Home string
	// Workspaces is AGENT_WORKSPACES, the parent of the per-thread
	// workspaces; created 0700 if missing. Empty means <Home>/workspaces.
	Workspaces string
	// WorkspacesOnDemand makes the workspaces folder with the first
	// thread's workspace instead of at once (the simulator: a scenario's
	// home is made only if the scenario writes there).
	WorkspacesOnDemand bool
	// Deny are absolute paths the tools never touch, whatever the root: the
	// .env files, the database file (its -wal, -shm and -journal siblings
	// are denied with it) and anything else the runtime keeps private. A
	// denied directory denies everything under it. Files named .env or
	// .env.* are denied everywhere without being listed.
	Deny []string
	// Secrets are credential values scrubbed from every tool result.
	Secrets []string
	// BashTimeout is the Bash timeout when a call sets none; zero means
	// DefaultBashTimeout, and it may not exceed MaxBashTimeout.
	BashTimeout time.Duration
	// MaxOutput caps the bytes of one tool result; zero means
	// DefaultMaxOutput.
	MaxOutput int
	// Sandbox, when set, confines every Bash command (internal/sandbox);
	// nil runs Bash unconfined: only its scrubbed environment and the
	// permission gate stand between it and the host.
	Sandbox Confiner
	// Env is the whole base environment of Bash ("KEY=value": PATH, LANG,
	// …); HOME and PWD are set to the workspace on top of it. Runtime
	// settings and credentials (CHAT_*, LLM_*, AGENT_*) are dropped from it
	// even if passed. Empty means a default PATH and LANG.
	Env []string
}

// Builtins are the built-in tools (Read, Write, Edit, Grep, Glob, LS,
// Bash), confined to the thread's workspace, <Home>/skills and
// <Home>/knowledge. A Builtins is safe for concurrent use.
type Builtins struct {
	workspaces string // resolved
	skills     string // resolved
	knowledge  string // resolved
	deny       []string
	secrets    []string    // longest first
	set        *secret.Set // the secrets, raw and encoded (MinLen bytes and more)
	short      *strings.Replacer
	timeout    time.Duration
	maxOutput  int
	env        []string
	shell      string
	sandbox    Confiner
}

// NewBuiltins returns the built-in tools configured by o. It creates the
// workspaces directory and fails on a configuration it cannot honour.
func NewBuiltins(o BuiltinOptions) (*Builtins, error) {
	if o.Home == "" {
		return nil, errors.New("builtins: Home is required")
	}
	if o.BashTimeout < 0 || o.BashTimeout > MaxBashTimeout {
		return nil, fmt.Errorf("builtins: BashTimeout %v is outside 0..%v", o.BashTimeout, MaxBashTimeout)
	}
	if o.MaxOutput < 0 {
		return nil, fmt.Errorf("builtins: MaxOutput %d is negative", o.MaxOutput)
	}
	home, err := filepath.Abs(o.Home)
	if err != nil {
		return nil, fmt.Errorf("builtins: home: %w", err)
	}
	ws := o.Workspaces
	if ws == "" {
		ws = filepath.Join(home, "workspaces")
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, fmt.Errorf("builtins: workspaces: %w", err)
	}
	if !o.WorkspacesOnDemand {
		if err := os.MkdirAll(ws, 0o700); err != nil {
			return nil, fmt.Errorf("builtins: create workspaces: %w", err)
		}
	}
	b := &Builtins{timeout: o.BashTimeout, maxOutput: o.MaxOutput, shell: bashShell(), sandbox: o.Sandbox}
	if b.timeout == 0 {
		b.timeout = DefaultBashTimeout
	}
	if b.maxOutput == 0 {
		b.maxOutput = DefaultMaxOutput
	}
	// The roots are resolved once: a symlink planted later in their place
	// leads elsewhere and is refused rather than followed.
	for _, r := range []struct {
		dst *string
		p   string
	}{{&b.workspaces, ws}, {&b.skills, filepath.Join(home, "skills")}, {&b.knowledge, filepath.Join(home, "knowledge")}} {
		if *r.dst, err = fsEvalPath(r.p); err != nil {
			return nil, fmt.Errorf("builtins: resolve %s: %w", r.p, err)
		}
	}
	parents := fsParents{} // the deny paths share their directories
	for _, d := range o.Deny {
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("builtins: deny path %q is not absolute", d)
		}
		d = filepath.Clean(d)
		for _, p := range []string{d, d + "-wal", d + "-shm", d + "-journal"} {
			b.deny = append(b.deny, p)
			if r, err := parents.eval(p); err == nil && r != p {
				b.deny = append(b.deny, r)
			}
		}
	}
	b.setSecrets(o.Secrets)
	b.env = builtinEnv(o.Env, b.secrets)
	return b, nil
}

// setSecrets keeps the non-empty secrets, longest first so that a secret
// containing another is scrubbed whole. Secrets of secret.MinLen bytes or
// more are also found base64-, hex- or URL-encoded; shorter ones (test or
// placeholder values) only as they are.
func (b *Builtins) setSecrets(secrets []string) {
	seen := map[string]bool{}
	for _, s := range secrets {
		if s != "" && !seen[s] {
			seen[s] = true
			b.secrets = append(b.secrets, s)
		}
	}
	sort.Slice(b.secrets, func(i, j int) bool { return len(b.secrets[i]) > len(b.secrets[j]) })
	b.set = secret.New(b.secrets...)
	var pairs []string
	for _, s := range b.secrets {
		if len(s) < secret.MinLen {
			pairs = append(pairs, s, builtinRedacted)
		}
	}
	if len(pairs) > 0 {
		b.short = strings.NewReplacer(pairs...)
	}
}

// builtinEnv is the Bash base environment: env (or the default) without
// HOME and PWD (set per call), the runtime's own settings and credentials,
// and any variable carrying a secret value.
func builtinEnv(env, secrets []string) []string {
	if len(env) == 0 {
		env = builtinDefaultEnv
	}
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || k == "HOME" || k == "PWD" ||
			strings.HasPrefix(k, "CHAT_") || strings.HasPrefix(k, "LLM_") || strings.HasPrefix(k, "AGENT_") {
			continue
		}
		for _, s := range secrets {
			if strings.Contains(v, s) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// scrub replaces every secret value in s, in any of its encodings.
func (b *Builtins) scrub(s string) string {
	s = b.set.Replace(s, builtinRedacted)
	if b.short != nil {
		s = b.short.Replace(s)
	}
	return s
}

// window is how much output must be kept around a cut so that no secret,
// encoded and wrapped, is cut in two unseen.
func (b *Builtins) window() int {
	w := b.set.Window()
	for _, s := range b.secrets {
		w = max(w, len(s))
	}
	return w
}

// Workspace returns the workspace of the thread threadKey, creating it
// (0700) on first use: a directory under Workspaces named after the key
// made filesystem-safe ("C0TEAM:1700000000.000100" becomes
// "C0TEAM_1700000000.000100"). It refuses a workspace that is not a real
// directory (a symlink planted in its place).
func (b *Builtins) Workspace(threadKey string) (string, error) {
	dir, err := b.WorkspacePath(threadKey)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create workspace: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory", dir)
	}
	return dir, nil
}

// WorkspacePath is the thread's workspace directory, without making it
// (the system prompt names it on every turn; the tools that use it make it).
func (b *Builtins) WorkspacePath(threadKey string) (string, error) {
	name, err := builtinWorkspaceName(threadKey)
	if err != nil {
		return "", err
	}
	return filepath.Join(b.workspaces, name), nil
}

// builtinWorkspaceName makes a thread key a single safe path element. An
// ordinary key ("<channel>:<ts>", letters, digits, dots and dashes) keeps
// its readable form with ':' as '_'; anything else is sanitised and gets a
// hash suffix so that two keys never share a workspace.
func builtinWorkspaceName(key string) (string, error) {
	if key == "" || key == ":" {
		return "", errors.New("workspace: empty thread key")
	}
	plain := func(s string) bool {
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
				return false
			}
		}
		return s != "" && s[0] != '.' && s[0] != '-'
	}
	if ch, ts, ok := strings.Cut(key, ":"); ok && plain(ch) && plain(ts) && len(key) <= 128 {
		return ch + "_" + ts, nil
	}
	var sb strings.Builder
	for _, r := range key {
		if sb.Len() >= 100 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(key))
	return "t" + sb.String() + "~" + hex.EncodeToString(sum[:6]), nil
}

// Tools returns the seven built-in tools with their JSON schemas.
func (b *Builtins) Tools() []Tool {
	return []Tool{
		b.tool(BuiltinRead, "Read a text file, with line numbers like cat -n. Reads the first 2000 lines unless offset (1-based line) and limit say otherwise; lines over 2000 characters are cut. Binary files are refused. Paths are absolute or relative to the workspace; only the workspace, skills/ and knowledge/ are reachable.",
			`{"type":"object","properties":{"file_path":{"type":"string","description":"The file to read."},"offset":{"type":"integer","minimum":1,"description":"The line number to start at (1-based)."},"limit":{"type":"integer","minimum":1,"description":"How many lines to read (default 2000)."}},"required":["file_path"],"additionalProperties":false}`,
			b.read),
		b.tool(BuiltinWrite, "Write a file, replacing it if it exists; parent folders are created. The write is atomic. Paths are absolute or relative to the workspace; only the workspace, skills/ and knowledge/ are writable.",
			`{"type":"object","properties":{"file_path":{"type":"string","description":"The file to write."},"content":{"type":"string","description":"The whole new content of the file."}},"required":["file_path","content"],"additionalProperties":false}`,
			b.write),
		b.tool(BuiltinEdit, "Replace old_string with new_string in a file. old_string must match the file exactly (indentation included) and occur exactly once, unless replace_all is set; add surrounding lines to make it unique.",
			`{"type":"object","properties":{"file_path":{"type":"string","description":"The file to edit."},"old_string":{"type":"string","description":"The exact text to replace."},"new_string":{"type":"string","description":"The text to put in its place."},"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)."}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`,
			b.edit),
		b.tool(BuiltinGrep, "Search file contents with a Go regular expression (RE2 syntax). Searches the files under path (default the workspace), optionally only those matching glob (\"*.md\", \"**/*.{go,ts}\"); skips binary files and .git. Output lines are file:line:text.",
			`{"type":"object","properties":{"pattern":{"type":"string","description":"The regular expression."},"path":{"type":"string","description":"A file or folder to search (default the workspace)."},"glob":{"type":"string","description":"Only search files matching this glob."},"output_mode":{"type":"string","enum":["content","files_with_matches","count"],"description":"content (file:line:text, default), files_with_matches (file names) or count (file:count)."},"-i":{"type":"boolean","description":"Case-insensitive search."}},"required":["pattern"],"additionalProperties":false}`,
			b.grep),
		b.tool(BuiltinGlob, "Find files by name pattern (\"**/*.md\", \"src/*.{ts,tsx}\"; ** spans folders), under path (default the workspace). Newest first.",
			`{"type":"object","properties":{"pattern":{"type":"string","description":"The glob pattern."},"path":{"type":"string","description":"The folder to search in (default the workspace)."}},"required":["pattern"],"additionalProperties":false}`,
			b.glob),
		b.tool(BuiltinLS, "List a folder (default the workspace): one entry a line, folders end with /, symlinks with @.",
			`{"type":"object","properties":{"path":{"type":"string","description":"The folder to list."}},"additionalProperties":false}`,
			b.ls),
		b.tool(BuiltinBash, "Run a shell command (bash -c) in the workspace, with an empty stdin and a minimal environment. Returns stdout and stderr combined and the exit status. Times out after 2 minutes unless timeout (milliseconds, at most 600000) says otherwise; a timeout kills the command and everything it started, and so does its end.",
			`{"type":"object","properties":{"command":{"type":"string","description":"The command line."},"timeout":{"type":"integer","minimum":1,"maximum":600000,"description":"Timeout in milliseconds (default 120000)."}},"required":["command"],"additionalProperties":false}`,
			b.bash),
	}
}

// tool wraps a tool function: every result is scrubbed of secrets, and a
// panic becomes a runtime error instead of a crash.
func (b *Builtins) tool(name, desc, schema string, call func(context.Context, json.RawMessage) Result) Tool {
	return Tool{
		Name:        name,
		Description: desc,
		Schema:      json.RawMessage(schema),
		Call: func(ctx context.Context, input json.RawMessage) (res Result, err error) {
			defer func() {
				if r := recover(); r != nil {
					res, err = Result{}, errors.New(b.scrub(fmt.Sprintf("tool %s panicked: %v", name, r)))
				}
			}()
			res = call(ctx, input)
			res.Text = b.scrub(res.Text)
			return res, nil
		},
	}
}

// threadPath resolves p (relative to the thread's workspace) through the
// confinement check; a refusal is the Result the model reads.
func (b *Builtins) threadPath(ctx context.Context, p string) (fsTarget, *Result) {
	ws, res := b.threadWorkspace(ctx)
	if res != nil {
		return fsTarget{}, res
	}
	t, err := b.target(ws, p)
	if err != nil {
		r := Errorf("%v", err)
		return fsTarget{}, &r
	}
	return t, nil
}

// threadWorkspace is the workspace of the turn in ctx.
func (b *Builtins) threadWorkspace(ctx context.Context) (string, *Result) {
	t, ok := TurnFromContext(ctx)
	if !ok || t.Event == nil {
		r := Errorf("no chat thread: the file and shell tools work only inside a thread")
		return "", &r
	}
	ws, err := b.Workspace(t.Event.ThreadKey())
	if err != nil {
		r := Errorf("the thread's workspace is unavailable: %v", err)
		return "", &r
	}
	return ws, nil
}
