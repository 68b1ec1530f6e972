package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Confiner starts commands inside a sandbox; internal/sandbox implements
// it. When set, every Bash command and every stdio tool server starts
// through it.
type Confiner interface {
	// Command confines cmd (made by exec.Command, not yet started) as one
	// Bash call in the thread's workspace with the call's timeout.
	// cleanup is called once the command and its group have ended.
	Command(ctx context.Context, cmd *exec.Cmd, workspace string, timeout time.Duration) (cleanup func(), err error)
	// Server confines cmd as a long-lived stdio tool server that may
	// write state (its HOME) and read readable besides the system.
	Server(cmd *exec.Cmd, state string, readable []string) (cleanup func(), err error)
}

// Confinement is what the agent's tools may reach of the host: the file
// tools never open Deny, a confined tool server is never granted a folder
// that holds one of them, Bash and the tool servers start from a minimal
// environment (never the runtime's own, which holds its credentials), and
// a confined command reads ReadOnly besides the system and writes only
// its own folders. It holds with the kernel sandbox off as much as on:
// the sandbox (internal/sandbox, through Confiner) is what makes a command
// keep to it. NewConfinement makes it from the runtime's place on the
// host; cmd hands its parts to NewBuiltins, MountMCP and the sandbox.
type Confinement struct {
	// Deny are the runtime's own files, absolute: the .env files of every
	// place the configuration is read from, mcp.json and the database.
	Deny []string
	// ReadOnly are the trees, and files, every confined command may read
	// besides the system: the skills and knowledge folders, and the
	// runtime user's git configuration (never the credential store beside
	// it).
	ReadOnly []string
	// Env is the environment a tool server starts from: PATH, LANG,
	// LC_ALL, TZ, TMPDIR, HOME and USER as the runtime has them, and a
	// PATH when it has none.
	Env []string
	// BashEnv is Bash's: Env, and GIT_CONFIG_GLOBAL naming the runtime
	// user's ~/.gitconfig when there is one (Bash's HOME is the
	// workspace, so git would not find it otherwise).
	BashEnv []string
	// ServerState is the folder under which each confined tool server
	// gets its own writable HOME (MCPOptions.StateDir).
	ServerState string
}

// Host is the runtime's place on the host: the plain values a Confinement
// is made from.
type Host struct {
	// Home is AGENT_HOME.
	Home string
	// Database is the database file; "" when the database is not a file
	// (Postgres, or a database in memory).
	Database string
	// Dir is the working directory, whose .env the configuration reads;
	// "" when it is not known.
	Dir string
	// Getenv reads the runtime's environment: HOME and XDG_CONFIG_HOME
	// (where the user's .env and git configuration are), and the
	// variables Env keeps.
	Getenv func(string) string
}

// NewConfinement returns the confinement of the runtime at h.
func NewConfinement(h Host) Confinement {
	c := Confinement{
		Deny:        confineDeny(h),
		ReadOnly:    append([]string{filepath.Join(h.Home, "skills"), filepath.Join(h.Home, "knowledge")}, gitConfigFiles(h.Getenv)...),
		Env:         confineEnv(h.Getenv),
		ServerState: filepath.Join(h.Home, "tool-servers"),
	}
	c.BashEnv = slices.Clip(c.Env)
	if files := gitConfigFiles(h.Getenv); len(files) > 0 {
		if fi, err := os.Stat(files[0]); err == nil && fi.Mode().IsRegular() {
			c.BashEnv = append(c.BashEnv, "GIT_CONFIG_GLOBAL="+files[0])
		}
	}
	return c
}

// confineDeny are the files the tools never open: the database and the
// .env files of every location the configuration reads, absolute.
func confineDeny(h Host) []string {
	deny := []string{filepath.Join(h.Home, ".env"), filepath.Join(h.Home, "mcp.json")}
	if h.Database != "" {
		deny = append(deny, h.Database)
	}
	if home := h.Getenv("HOME"); home != "" {
		deny = append(deny, filepath.Join(home, ".agent", ".env"))
	}
	if h.Dir != "" {
		deny = append(deny, filepath.Join(h.Dir, ".env"))
	}
	for i, p := range deny {
		if abs, err := filepath.Abs(p); err == nil {
			deny[i] = abs
		}
	}
	return deny
}

// confineEnv is the minimal environment child processes (Bash, tool
// servers) start from.
func confineEnv(getenv func(string) string) []string {
	var env []string
	for _, k := range []string{"PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME", "USER"} {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	if getenv("PATH") == "" {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	return env
}

// gitConfigFiles are the runtime user's git configuration files: its
// ~/.gitconfig, then $XDG_CONFIG_HOME/git/config.
func gitConfigFiles(getenv func(string) string) []string {
	var files []string
	if h := getenv("HOME"); h != "" {
		files = append(files, filepath.Join(h, ".gitconfig"))
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && getenv("HOME") != "" {
		xdg = filepath.Join(getenv("HOME"), ".config")
	}
	if xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	return files
}

// serverReadable are the paths a stdio server's command line names that
// it must read to run at all: its program (a binary outside the system
// folders) and any existing absolute path among its arguments (a script, a
// config file, a folder). A file is granted with its folder (a script
// loads the modules beside it), unless that folder holds a path of deny
// (the runtime's .env, mcp.json, database): then the file alone, which
// Landlock can grant by itself. A folder named on the command line that
// holds a denied path is never granted: withheld lists it.
func serverReadable(cmd *exec.Cmd, deny []string) (grant, withheld []string) {
	denied := make([]string, 0, 2*len(deny))
	for _, d := range deny {
		denied = append(denied, filepath.Clean(d), canonical(d))
	}
	holdsDenied := func(dir string) bool {
		for _, base := range []string{filepath.Clean(dir), canonical(dir)} {
			for _, d := range denied {
				if d == base || strings.HasPrefix(d, strings.TrimSuffix(base, "/")+"/") {
					return true
				}
			}
		}
		return false
	}
	file := func(p string) {
		if dir := filepath.Dir(p); !holdsDenied(dir) {
			grant = append(grant, dir)
		} else {
			grant = append(grant, p)
		}
	}
	if filepath.IsAbs(cmd.Path) {
		file(cmd.Path)
	}
	for _, a := range cmd.Args[1:] {
		if !filepath.IsAbs(a) {
			continue
		}
		fi, err := os.Stat(a)
		switch {
		case err != nil:
		case !fi.IsDir():
			file(a)
		case holdsDenied(a):
			withheld = append(withheld, a)
		default:
			grant = append(grant, a)
		}
	}
	return grant, withheld
}

// canonical is p with its symbolic links resolved, as far as it exists
// (a database not made yet still has a folder).
func canonical(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(r, filepath.Base(p))
	}
	return p
}
