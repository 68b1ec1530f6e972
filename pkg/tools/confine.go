package tools

import (
	"os"
	"os/exec"
	"path/filepath"
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
	Command(cmd *exec.Cmd, workspace string, timeout time.Duration) (cleanup func(), err error)
	// Server confines cmd as a long-lived stdio tool server that may
	// write state (its HOME) and read readable besides the system.
	Server(cmd *exec.Cmd, state string, readable []string) (cleanup func(), err error)
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
