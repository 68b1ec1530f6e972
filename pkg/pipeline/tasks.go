package pipeline

import (
	"context"
	"errors"
)

// The work of a turn shown as it happens: each tool call a task of a
// streamed message (the platform's task cards, gathered in one plan), an
// approval's wait a task of its own. Where the platform refuses them, the
// turn shows the status line instead, as before them.

// TaskStatus is where a task stands.
type TaskStatus string

// The task statuses, as the platform names them.
const (
	TaskPending    TaskStatus = "pending"
	TaskInProgress TaskStatus = "in_progress"
	TaskComplete   TaskStatus = "complete"
	TaskError      TaskStatus = "error"
)

// Task is one update of a task: created by its first update, changed by
// the later ones with the same ID. Title, Details and Output are plain
// text, already redacted.
type Task struct {
	ID      string
	Title   string
	Status  TaskStatus
	Details string // why it failed, what it waits for
	Output  string // a summary of what it gave
}

// TaskPoster shows tasks in a streamed message of a thread: started with
// the first updates, appended to, stopped with the last ones (nil or
// empty: none).
type TaskPoster interface {
	// StartTasks starts the message in m's thread (m.RecipientUser and
	// RecipientTeam: whom it is written for) with the tasks' first
	// updates, and returns its ts; it fails with ErrNoTasks when the
	// platform does not show tasks (and, remembered, at every later call).
	StartTasks(ctx context.Context, m Message, tasks []Task) (ts string, err error)
	AppendTasks(ctx context.Context, channelID, ts string, tasks []Task) error
	StopTasks(ctx context.Context, channelID, ts string, tasks []Task) error
}

// ErrNoTasks is the error of a platform that does not show tasks (an older
// workspace or client, a method it does not know).
var ErrNoTasks = errors.New("the platform does not show tasks")
