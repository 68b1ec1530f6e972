package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/secret"
)

// bashDrainGrace is how long Bash keeps reading output after the command's
// process group is gone: unconfined, a process that left the group
// (setsid) can still hold the pipe, and the call must not wait on it.
// Confined, the sandbox's helper has killed it already.
const bashDrainGrace = 2 * time.Second

// bashStopGrace bounds the wait for a confined command's helper to end
// what it started once asked to (it kills at once): past it, the group is
// killed as an unconfined command's is.
const bashStopGrace = 5 * time.Second

// bashShell is the shell Bash runs: bash, or sh where there is none. It
// is looked up once per process (PATH does not change under a running
// service), not once per Builtins: the simulator makes one per scenario,
// and a search of PATH is a stat per directory.
var bashShell = sync.OnceValue(func() string {
	for _, sh := range []string{"bash", "sh"} {
		if p, err := exec.LookPath(sh); err == nil {
			return p
		}
	}
	return ""
})

// bash is the Bash tool.
func (b *Builtins) bash(ctx context.Context, input json.RawMessage) Result {
	var in struct {
		Command string  `json:"command"`
		Timeout float64 `json:"timeout"`
	}
	if err := decode(input, &in); err != nil {
		return Errorf("%v", err)
	}
	if strings.TrimSpace(in.Command) == "" {
		return Errorf("command is required")
	}
	if in.Timeout < 0 {
		return Errorf("timeout must be a positive number of milliseconds")
	}
	timeout := b.timeout
	switch {
	case in.Timeout >= float64(MaxBashTimeout/time.Millisecond):
		timeout = MaxBashTimeout // and no float overflow
	case in.Timeout > 0:
		timeout = time.Duration(in.Timeout * float64(time.Millisecond))
	}
	if b.shell == "" {
		return Errorf("no shell (bash or sh) is installed")
	}
	ws, res := b.threadWorkspace(ctx)
	if res != nil {
		return *res
	}

	r, w, err := os.Pipe()
	if err != nil {
		return Errorf("start command: %v", err)
	}
	defer r.Close()
	cmd := exec.Command(b.shell, "-c", in.Command)
	cmd.Dir = ws
	// Never the runtime's own environment: it holds the chat and LLM
	// credentials.
	cmd.Env = append(append(make([]string, 0, len(b.env)+2), b.env...), "HOME="+ws, "PWD="+ws)
	cmd.Stdout, cmd.Stderr = w, w // one pipe: output interleaved as written
	bashSetGroup(cmd)
	release := func() {}
	if b.sandbox != nil {
		cleanup, err := b.sandbox.Command(ctx, cmd, ws, timeout)
		if err != nil {
			w.Close()
			return Errorf("start command: %v", err)
		}
		// Once the group is killed, before the output is drained: what
		// left the group is ended there, and holds the output no more.
		release = sync.OnceFunc(cleanup)
		defer release()
	}
	err = cmd.Start()
	w.Close() // the child holds its own copy
	if err != nil {
		return Errorf("start command: %s", fsErrText(err))
	}
	out := &bashCapture{half: b.maxOutput / 2, slack: b.window()}
	captured := make(chan struct{})
	go func() {
		defer close(captured)
		_, _ = io.Copy(out, r)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var timedOut, cancelled bool
	select {
	case err = <-waited:
	case <-timer.C:
		timedOut = true
		err = b.stop(cmd, waited)
	case <-ctx.Done():
		cancelled = true
		err = b.stop(cmd, waited)
	}
	// What the command left running in its group ends with it, and what
	// the sandbox knows it started elsewhere.
	bashKillGroup(cmd)
	release()
	if r.SetReadDeadline(time.Now().Add(bashDrainGrace)) != nil {
		select {
		case <-captured:
		case <-time.After(bashDrainGrace):
			r.Close()
		}
	}
	<-captured

	text := out.text(b)
	switch {
	case timedOut:
		if note := bashLimitNote(nil, text); note != "" {
			return Errorf("command timed out after %v and was killed with everything it started (%s)", timeout, note)
		}
		return Errorf("command timed out after %v and was killed with everything it started; pass a larger timeout (at most %v) or make it faster", timeout, MaxBashTimeout)
	case cancelled:
		return Errorf("command cancelled: the turn ended")
	}
	if text == "" {
		text = "(no output)"
	}
	if b.sandbox != nil {
		// A limit hit is an error even when the shell carried on and
		// exited 0 (a fork bomb whose forks failed).
		if note := bashLimitNote(cmd.ProcessState, text); note != "" {
			return Errorf("command %s; its output:\n%s", note, text)
		}
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		// A failing command is a normal outcome the model reads.
		text = strings.TrimSuffix(text, "\n") + "\n[" + exitErr.ProcessState.String() + "]"
	case err != nil:
		return Errorf("command failed: %s", fsErrText(err))
	}
	return Result{Text: text}
}

// stop ends a command that ran out of time or whose turn ended, and
// returns its wait's error. A confined command's process is the sandbox's
// helper: asked with SIGTERM, it kills the command and everything the
// command started, in its group or not (setsid), then exits; killing the
// group instead would kill the helper first and set the rest free. An
// unconfined command's group is killed.
func (b *Builtins) stop(cmd *exec.Cmd, waited <-chan error) error {
	if b.sandbox == nil {
		bashKillGroup(cmd)
		return <-waited
	}
	bashTerminate(cmd)
	select {
	case err := <-waited:
		return err
	case <-time.After(bashStopGrace):
		bashKillGroup(cmd)
		return <-waited
	}
}

// bashCapture keeps the first and the last half bytes of the output (each
// end plus slack, the longest secret, so that no secret is cut in two
// before it is scrubbed) and counts the rest.
type bashCapture struct {
	half, slack int
	head, tail  []byte
	total       int
}

// Write implements io.Writer; only the copying goroutine calls it.
func (c *bashCapture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += n
	keep := c.half + c.slack
	if room := keep - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		c.tail = append(c.tail, p...)
		if len(c.tail) > 2*keep {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-keep:]...)
		}
	}
	return n, nil
}

// text is the scrubbed output, its middle cut out past 2*half bytes with a
// note saying how much.
func (c *bashCapture) text(b *Builtins) string {
	keep := c.half + c.slack
	tail := c.tail[max(0, len(c.tail)-keep):]
	dropped := c.total - len(c.head) - len(tail)
	head := c.head
	if dropped == 0 {
		head = append(head, tail...)
		tail = nil
		if len(head) <= 2*c.half {
			return strings.ToValidUTF8(b.scrub(string(head)), "\uFFFD")
		}
		tail = head
	}
	// The cuts move off any secret they would split.
	hi := b.secretEnd(head, min(c.half, len(head)))
	lo := b.secretStart(tail, max(0, len(tail)-c.half))
	if dropped == 0 && hi >= lo {
		return strings.ToValidUTF8(b.scrub(string(head)), "\uFFFD")
	}
	omitted := dropped + (len(head) - hi) + lo
	if dropped == 0 {
		omitted = lo - hi
	}
	s := b.scrub(string(head[:hi])) + fmt.Sprintf("\n[output truncated: %d bytes omitted]\n", omitted) + b.scrub(string(tail[lo:]))
	return strings.ToValidUTF8(s, "\uFFFD")
}

// secretEnd moves the cut at (buf[:at] is kept) past any secret it would
// split, in any of its encodings.
func (b *Builtins) secretEnd(buf []byte, at int) int {
	for {
		sp, ok := b.straddle(buf, at)
		if !ok {
			return at
		}
		at = sp[1]
	}
}

// secretStart moves the cut at (buf[at:] is kept) before any secret it
// would split, in any of its encodings.
func (b *Builtins) secretStart(buf []byte, at int) int {
	for {
		sp, ok := b.straddle(buf, at)
		if !ok {
			return at
		}
		at = sp[0]
	}
}

// straddle returns the range of buf showing a secret (raw or encoded) that
// spans the cut at: starting before it, ending after it.
func (b *Builtins) straddle(buf []byte, at int) ([2]int, bool) {
	w := b.window()
	from, to := max(0, at-w), min(len(buf), at+w)
	win := string(buf[from:to])
	for _, sp := range b.set.Spans(win) {
		if from+sp[0] < at && from+sp[1] > at {
			return [2]int{from + sp[0], from + sp[1]}, true
		}
	}
	for _, s := range b.secrets {
		if len(s) >= secret.MinLen {
			continue
		}
		for i := 0; ; {
			j := strings.Index(win[i:], s)
			if j < 0 {
				break
			}
			if a := from + i + j; a < at && a+len(s) > at {
				return [2]int{a, a + len(s)}, true
			}
			i += j + 1
		}
	}
	return [2]int{}, false
}
