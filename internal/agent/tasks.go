package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// taskInterval is the least time between two updates of a turn's task
// message that could wait: the platform limits how often a stream is
// appended to. What the person must see at once (a step's start, a card's
// wait, the end) goes out whatever the time; a task's end waits for the
// next of those when the last update is more recent than this.
const taskInterval = time.Second

// Limits of what a task shows (runes): a Bash task's title is its
// command's first line, at most 60 characters (the pinned interface); a
// detail or output is short (the platform's cards show a few lines; a
// third-party SDK says 256 characters).
const (
	maxTaskTitle  = 60
	maxTaskDetail = 200
	maxTaskLines  = 3
)

// The texts of the tasks the runtime adds.
const (
	taskWaitTitle = "Waiting for approval"
	taskStopped   = "stopped before it finished"
)

// taskView shows one turn's work as tasks in a streamed message of its
// thread (pipeline.TaskPoster): each tool call of the agent's work (the
// calls that show themselves, a reply, a card, a reaction, are not tasks)
// and each wait for a card. Updates are batched: the latest state of each
// task changed since the last call goes out with the next one. Where the
// platform refuses tasks, off is set and the turn shows the status line.
type taskView struct {
	e *Engine
	t *pipeline.Turn

	mu      sync.Mutex
	off     bool   // the platform refused, or the message failed: status line
	ts      string // the message, once started
	stopped bool
	seq     int
	tasks   map[string]*pipeline.Task // by id
	order   []string                  // ids, as created
	dirty   []string                  // ids changed since the last call, in order
	last    time.Time                 // the last call
	calls   map[string]string         // tool_use id → task id
}

// newTaskView returns the turn's task view; off when the engine has no
// TaskPoster.
func (e *Engine) newTaskView(t *pipeline.Turn) *taskView {
	return &taskView{e: e, t: t, off: e.o.Tasks == nil, tasks: map[string]*pipeline.Task{}, calls: map[string]string{}}
}

// shows reports whether tasks show the turn's work (rather than the status
// line): none refused so far.
func (v *taskView) shows() bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return !v.off
}

// batch adds the calls of a model answer that are tasks, the first in
// progress and the others pending, and shows them at once.
func (v *taskView) batch(ctx context.Context, uses []toolUse) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.off || v.stopped {
		return
	}
	added := false
	for _, u := range uses {
		if activity(u.Name) == "" {
			continue
		}
		status := pipeline.TaskPending
		if !added {
			status = pipeline.TaskInProgress
		}
		added = true
		v.calls[u.ID] = v.addLocked(v.e.taskTitle(u.Name, u.Input), status, "")
	}
	if added {
		v.flushLocked(ctx, true)
	}
}

// begin shows the call id in progress (shown when the last update is old
// enough, else with the next).
func (v *taskView) begin(ctx context.Context, id string) {
	v.set(ctx, id, pipeline.TaskInProgress, "", "")
}

// end shows the call id ended: complete, or error with a short reason.
func (v *taskView) end(ctx context.Context, id string, res tools.Result, outcome string) {
	if outcome == "ok" && !res.IsError {
		v.set(ctx, id, pipeline.TaskComplete, "", v.e.summarise(res.Text))
		return
	}
	v.set(ctx, id, pipeline.TaskError, v.e.reason(res.Text), "")
}

func (v *taskView) set(ctx context.Context, callID string, status pipeline.TaskStatus, details, output string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	id, ok := v.calls[callID]
	if !ok || v.off || v.stopped {
		return
	}
	task := v.tasks[id]
	if task.Status == status && task.Details == details && task.Output == output {
		return
	}
	task.Status, task.Details, task.Output = status, details, output
	v.touchLocked(id)
	v.flushLocked(ctx, false)
}

// wait shows a card's wait as a task of its own, at once; the function
// returned ends it.
func (v *taskView) wait(ctx context.Context) func(ctx context.Context) {
	if v == nil {
		return func(context.Context) {}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.off || v.stopped {
		return func(context.Context) {}
	}
	id := v.addLocked(taskWaitTitle, pipeline.TaskInProgress, "a card in this thread waits for a decision")
	v.flushLocked(ctx, true)
	return func(ctx context.Context) {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.off || v.stopped {
			return
		}
		task := v.tasks[id]
		task.Status, task.Details = pipeline.TaskComplete, ""
		v.touchLocked(id)
		v.flushLocked(ctx, false)
	}
}

// finish stops the message with the updates not yet shown; a task still
// running (the turn was stopped or failed) ends as error.
func (v *taskView) finish(ctx context.Context) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopped || v.ts == "" || v.off {
		v.stopped = true
		return
	}
	for _, id := range v.order {
		if task := v.tasks[id]; task.Status == pipeline.TaskPending || task.Status == pipeline.TaskInProgress {
			task.Status, task.Details = pipeline.TaskError, taskStopped
			v.touchLocked(id)
		}
	}
	v.stopped = true
	if err := v.e.o.Tasks.StopTasks(ctx, v.t.Event.ChannelID, v.ts, v.takeLocked()); err != nil {
		v.e.o.Log.DebugContext(ctx, "stop the task message", "err", err)
	}
}

func (v *taskView) addLocked(title string, status pipeline.TaskStatus, details string) string {
	v.seq++
	id := fmt.Sprintf("task-%d", v.seq)
	v.tasks[id] = &pipeline.Task{ID: id, Title: title, Status: status, Details: details}
	v.order = append(v.order, id)
	v.touchLocked(id)
	return id
}

func (v *taskView) touchLocked(id string) {
	for _, d := range v.dirty {
		if d == id {
			return
		}
	}
	v.dirty = append(v.dirty, id)
}

// takeLocked returns the updates not yet shown, in order, and forgets them.
func (v *taskView) takeLocked() []pipeline.Task {
	out := make([]pipeline.Task, 0, len(v.dirty))
	for _, id := range v.dirty {
		out = append(out, *v.tasks[id])
	}
	v.dirty = nil
	return out
}

// flushLocked sends the updates not yet shown: now when asked, else when
// the last call is older than taskInterval. The first starts the message;
// a refusal turns the view off for the turn (the status line shows the
// rest), and so does a failure (a message the platform lost).
func (v *taskView) flushLocked(ctx context.Context, now bool) {
	if len(v.dirty) == 0 || v.off {
		return
	}
	at := v.e.o.Now()
	if !now && v.ts != "" && at.Sub(v.last) < taskInterval {
		return
	}
	ctx = context.WithoutCancel(ctx)
	updates := v.takeLocked()
	v.last = at
	if v.ts == "" {
		ev := v.t.Event
		ts, err := v.e.o.Tasks.StartTasks(ctx, pipeline.Message{ChannelID: ev.ChannelID, ThreadTS: ev.RootTS(),
			RecipientUser: ev.UserID, RecipientTeam: ev.TeamID}, updates)
		if err != nil {
			v.off = true
			if !errors.Is(err, pipeline.ErrNoTasks) {
				v.e.o.Log.WarnContext(ctx, "start the task message; showing the status line instead", "err", err)
			}
			return
		}
		v.ts = ts
		return
	}
	if err := v.e.o.Tasks.AppendTasks(ctx, v.t.Event.ChannelID, v.ts, updates); err != nil {
		v.e.o.Log.WarnContext(ctx, "append to the task message; showing the status line instead", "err", err)
		v.off = true
	}
}

// taskTitle is what a task is called: a Bash call's command (its first
// line), a file or search tool's target, else the tool's name; redacted,
// on one line, at most maxTaskTitle runes.
func (e *Engine) taskTitle(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	arg := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := in[k].(string); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
		return ""
	}
	label := toolLabel(name)
	title := label
	if name == "Bash" {
		if cmd := arg("command"); cmd != "" {
			title = cmd
		}
	} else if a := arg("file_path", "path", "pattern", "query", "url", "name"); a != "" {
		title = label + " " + a
	}
	title = e.o.Redact(title)
	line, _, _ := strings.Cut(strings.TrimSpace(title), "\n")
	return clipRunes(strings.TrimSpace(line), maxTaskTitle)
}

// toolLabel is a tool's name as a person reads it: a tool server's tool as
// "server: tool".
func toolLabel(name string) string {
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		if server, tool, ok := strings.Cut(rest, "__"); ok {
			return server + ": " + tool
		}
	}
	return name
}

// summarise is a task's output: the result's first lines, redacted, and
// its size when they are not all of it.
func (e *Engine) summarise(text string) string {
	text = strings.TrimSpace(e.o.Redact(text))
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	shown := strings.Join(lines[:min(len(lines), maxTaskLines)], "\n")
	clipped := clipRunes(shown, maxTaskDetail)
	if clipped == text {
		return text
	}
	return fmt.Sprintf("%s\n(%d bytes, %d lines in all)", clipped, len(text), len(lines))
}

// reason is a failed task's detail: the first line of why, redacted.
func (e *Engine) reason(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(e.o.Redact(text)), "\n")
	return clipRunes(line, maxTaskDetail)
}

// clipRunes cuts s to at most n runes, ending with "…" when cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
