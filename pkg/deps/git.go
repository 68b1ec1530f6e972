package deps

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Git runs the git command line with args in dir (the process's working
// directory when dir is empty) and returns its standard output. An error
// should carry git's standard error, as [*GitError] does, because install
// errors quote it.
type Git func(ctx context.Context, dir string, args ...string) (stdout string, err error)

// ExecGit is the default [Git]: it runs the git binary found on PATH, with
// the process environment plus GIT_TERMINAL_PROMPT=0 and
// GCM_INTERACTIVE=never so that a missing credential fails at once instead
// of waiting for a prompt nobody answers. Failures are [*GitError].
func ExecGit(ctx context.Context, dir string, args ...string) (string, error) {
	return runGit(ctx, nil, dir, args)
}

var _ Git = ExecGit

// Confine rewrites cmd, one git command made by exec.Command and not yet
// started, to run confined (internal/sandbox); cleanup is called once it
// has exited.
type Confine func(ctx context.Context, cmd *exec.Cmd) (cleanup func(), err error)

// ConfinedGit is [ExecGit] with each command started through confine: the
// runtime's own git (install-deps, the knowledge bases, the skills sync)
// in a network of its own under AGENT_SANDBOX_NET=allowlist.
func ConfinedGit(confine Confine) Git {
	return func(ctx context.Context, dir string, args ...string) (string, error) {
		return runGit(ctx, confine, dir, args)
	}
}

func runGit(ctx context.Context, confine Confine, dir string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if confine != nil {
		cleanup, err := confine(ctx, cmd)
		if err != nil {
			return "", &GitError{Args: args, Err: err}
		}
		defer cleanup()
		// The process is the sandbox's helper: a SIGTERM ends the command
		// and everything it started at once.
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 5 * time.Second
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return stdout.String(), &GitError{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// GitError is a failed git command.
type GitError struct {
	Args   []string // arguments after "git"
	Stderr string   // git's standard error, untrimmed
	Err    error    // the exit status, or the context's error
}

// Error is "git <subcommand>: <message>", where the message is git's own:
// its fatal: and error: lines when it printed any, else all of its standard
// error, on one line.
func (e *GitError) Error() string {
	sub := "git"
	for i := 0; i < len(e.Args); i++ {
		switch a := e.Args[i]; {
		case a == "-c" || a == "-C":
			i++ // skip the option's value
		case !strings.HasPrefix(a, "-"):
			sub += " " + a
			i = len(e.Args)
		}
	}
	if msg := gitMessage(e.Stderr); msg != "" && !errors.Is(e.Err, context.Canceled) && !errors.Is(e.Err, context.DeadlineExceeded) {
		return sub + ": " + msg
	}
	return sub + ": " + e.Err.Error()
}

// Unwrap returns the exit status or the context's error.
func (e *GitError) Unwrap() error { return e.Err }

func gitMessage(stderr string) string {
	var all, fatal []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		all = append(all, line)
		if strings.HasPrefix(line, "fatal:") || strings.HasPrefix(line, "error:") {
			fatal = append(fatal, line)
		}
	}
	if len(fatal) > 0 {
		return strings.Join(fatal, "; ")
	}
	return strings.Join(all, "; ")
}
