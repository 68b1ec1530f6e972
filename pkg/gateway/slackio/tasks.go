package slackio

import (
	"context"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

var _ pipeline.TaskPoster = (*Chat)(nil)

// methodTasks is the key under which a refusal of task chunks is
// remembered: chat.startStream with chunks (a workspace or client that
// streams text may still not know them).
const methodTasks = "chat.startStream chunks"

// taskPlanTitle is the title of the plan the tasks gather in.
const taskPlanTitle = "Steps"

// maxTaskText is the longest title, detail or output a task update carries
// (runes): the cards show a few lines (a third-party SDK says 256).
const maxTaskText = 256

// StartTasks starts a streamed message of tasks in m's thread
// (chat.startStream with chunks, task_display_mode plan: all the turn's
// tasks in one plan block), with the first updates. A platform that
// refuses the chunks as such (unknown_method, invalid_chunks, …) is
// remembered for the process: it and every later call fail with
// pipeline.ErrNoTasks.
func (c *Chat) StartTasks(ctx context.Context, m pipeline.Message, tasks []pipeline.Task) (string, error) {
	if code := c.agentView.refused(methodTasks); code != "" {
		return "", fmt.Errorf("%s: %w (%s before)", methodTasks, pipeline.ErrNoTasks, code)
	}
	chunks := append([]slack.StreamChunk{slack.NewPlanUpdateChunk(taskPlanTitle)}, taskChunks(tasks)...)
	opts := streamTarget(m, slack.MsgOptionChunks(chunks...), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModePlan))
	_, ts, err := c.api.StartStreamContext(ctx, m.ChannelID, opts...)
	if err != nil {
		if taskRefusal(err) {
			c.agentView.remember(methodTasks, err)
			c.log.InfoContext(ctx, "chat: task updates refused; showing the status line instead", "err", c.wrap("chat.startStream", err))
			return "", fmt.Errorf("%w: %w", pipeline.ErrNoTasks, c.wrap("chat.startStream", err))
		}
		return "", c.wrap("chat.startStream", err)
	}
	return ts, nil
}

// AppendTasks adds task updates to the message at ts (chat.appendStream).
func (c *Chat) AppendTasks(ctx context.Context, channelID, ts string, tasks []pipeline.Task) error {
	if len(tasks) == 0 {
		return nil
	}
	if _, _, err := c.api.AppendStreamContext(ctx, channelID, ts, slack.MsgOptionChunks(taskChunks(tasks)...)); err != nil {
		return c.wrap("chat.appendStream", err)
	}
	return nil
}

// StopTasks ends the message at ts with its last updates (chat.stopStream).
func (c *Chat) StopTasks(ctx context.Context, channelID, ts string, tasks []pipeline.Task) error {
	var opts []slack.MsgOption
	if len(tasks) > 0 {
		opts = append(opts, slack.MsgOptionChunks(taskChunks(tasks)...))
	}
	if _, _, err := c.api.StopStreamContext(ctx, channelID, ts, opts...); err != nil {
		return c.wrap("chat.stopStream", err)
	}
	return nil
}

// taskChunks are the task_update chunks of tasks.
func taskChunks(tasks []pipeline.Task) []slack.StreamChunk {
	out := make([]slack.StreamChunk, 0, len(tasks))
	for _, t := range tasks {
		ch := slack.NewTaskUpdateChunk(t.ID, cutRunes(t.Title, maxTaskText))
		ch.Status = slack.TaskCardStatus(t.Status)
		ch.Details = cutRunes(t.Details, maxTaskText)
		ch.Output = cutRunes(t.Output, maxTaskText)
		out = append(out, ch)
	}
	return out
}

// taskRefusal reports whether err refuses task chunks as such, not one
// call: the agent surface's refusal codes, and the chunks' own
// (invalid_chunks: a platform that does not know task_update).
func taskRefusal(err error) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && (refusedCodes[se.Err] || se.Err == "invalid_chunks")
}

// remember records err's code as refusing method, whatever the code.
func (r *refusals) remember(method string, err error) {
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.codes == nil {
		r.codes = map[string]string{}
	}
	r.codes[method] = se.Err
}

func asSlackError(err error, target *slack.SlackErrorResponse) bool { return errors.As(err, target) }
