package sandbox

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// watchBelow is the Landlock ABI from which the kernel scopes signals
// (LANDLOCK_SCOPE_SIGNAL, ABI 6): below it a command can kill its helper,
// whose supervisor then reports the process groups of its descendants to
// the runtime (see watch), and the runtime kills them when the command
// ends (watcher.kill).
const watchBelow = 6

// watchDoneLine ends a supervisor's report when it has ended everything
// below it itself.
const watchDoneLine = "done"

// watchWait bounds how long the runtime waits for the end of a report
// once the command has ended: the supervisor has exited by then, and the
// report ends at once.
const watchWait = time.Second

// watcher is the runtime's end of a supervisor's report: the process
// groups the command's processes made, read as they come.
type watcher struct {
	r, w   *os.File
	ended  chan struct{}
	mu     sync.Mutex
	groups []int
	done   bool
}

// newWatcher makes the pipe of a report; w goes to the helper.
func newWatcher() (*watcher, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	wt := &watcher{r: r, w: w, ended: make(chan struct{})}
	go wt.read()
	return wt, nil
}

func (wt *watcher) read() {
	defer close(wt.ended)
	sc := bufio.NewScanner(wt.r)
	for sc.Scan() {
		line := sc.Text()
		wt.mu.Lock()
		if line == watchDoneLine {
			wt.done = true
		} else if g, err := strconv.Atoi(strings.TrimPrefix(line, "g ")); err == nil && g > 1 {
			wt.groups = append(wt.groups, g)
		}
		wt.mu.Unlock()
	}
}

// kill ends the report (the runtime's copy of its write end is closed;
// the supervisor's closed when it exited) and, unless the supervisor said
// it ended everything itself, kills every process group reported: the
// supervisor was killed (by the command, or the OOM killer) before it
// could. A group is killed only once the command has ended, within a
// second of it, so a group number is not someone else's by then unless
// the kernel's pids wrapped around in that second.
func (wt *watcher) kill() {
	_ = wt.w.Close()
	select {
	case <-wt.ended:
	case <-time.After(watchWait):
	}
	_ = wt.r.Close()
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.done {
		return
	}
	for _, g := range wt.groups {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}
