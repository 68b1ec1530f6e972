package tools

import (
	"os"
	"os/exec"
	"path/filepath"
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
// it must read to run at all: its program's folder (a binary outside the
// system folders) and any existing absolute path among its arguments (a
// script, a config file), or that path's folder when it is a file.
func serverReadable(cmd *exec.Cmd) []string {
	var out []string
	if filepath.IsAbs(cmd.Path) {
		out = append(out, filepath.Dir(cmd.Path))
	}
	for _, a := range cmd.Args[1:] {
		if !filepath.IsAbs(a) {
			continue
		}
		if fi, err := os.Stat(a); err == nil {
			if fi.IsDir() {
				out = append(out, a)
			} else {
				out = append(out, filepath.Dir(a))
			}
		}
	}
	return out
}
