package slackio

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The platform's agent surface (its "agent view"): the session status of
// a thread and the suggested prompts of the DM. slack-go v0.35 has both
// methods (SetAgentSessionStatusContext,
// SetAssistantThreadsSuggestedPromptsContext); this file is the one place
// they are called and their answers read.

// Web API methods of the agent surface.
const (
	methodSessionStatus = "agents.sessions.setStatus"
	methodPrompts       = "assistant.threads.setSuggestedPrompts"
)

// Limits of the agent surface (docs.slack.dev, the methods' pages): a
// session title of at most 200 characters, at most four suggested prompts.
const (
	maxSessionTitle = 200
	maxPrompts      = 4
)

// refusedCodes are the platform's error codes that refuse a method as such,
// not one call of it: unknown_method (a platform or gateway without the
// method), method_not_supported and not_allowed_token_type are the Web API's
// common answers; not_allowed, missing_scope, no_permission and
// feature_not_enabled are what an app not declared as an agent may be told
// (the method's page lists no error table we could confirm: a code missing
// here costs one failed call per turn, never a turn). A code about one
// thread or channel (channel_not_found, invalid_thread_ts, ...) or a
// passing failure is not remembered.
var refusedCodes = map[string]bool{
	"unknown_method": true, "method_not_supported": true, "not_allowed_token_type": true,
	"not_allowed": true, "missing_scope": true, "no_permission": true, "feature_not_enabled": true,
}

// refusals remembers, for the life of the process, the methods the
// platform refused, so that no turn asks again; and the warnings it gave,
// so that each is logged once.
type refusals struct {
	mu     sync.Mutex
	codes  map[string]string // method → the code that refused it
	warned map[string]bool   // method + "/" + warning
}

// refused returns the code that refused method, or "".
func (r *refusals) refused(method string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.codes[method]
}

// refuse remembers err's code when it refuses method as such, and reports
// whether it did.
func (r *refusals) refuse(method string, err error) bool {
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || !refusedCodes[se.Err] {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.codes == nil {
		r.codes = map[string]string{}
	}
	r.codes[method] = se.Err
	return true
}

// firstWarning reports whether warning is new for method.
func (r *refusals) firstWarning(method, warning string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.warned == nil {
		r.warned = map[string]bool{}
	}
	key := method + "/" + warning
	if r.warned[key] {
		return false
	}
	r.warned[key] = true
	return true
}

// SetSessionStatus moves the agent session of u's thread to u.Status
// (agents.sessions.setStatus), creating it on the first call with u's
// title (cut to the platform's 200 characters) and initiator. A platform
// that refuses the method fails with pipeline.ErrNoAgentSessions, at this
// call and, without asking again, at every later one of the process.
func (c *Chat) SetSessionStatus(ctx context.Context, u pipeline.SessionUpdate) error {
	if code := c.agentView.refused(methodSessionStatus); code != "" {
		return fmt.Errorf("%s: %w (%s before)", methodSessionStatus, pipeline.ErrNoAgentSessions, code)
	}
	resp, err := c.api.SetAgentSessionStatusContext(ctx, slack.AgentSessionSetStatusParameters{
		Status: string(u.Status), ChannelID: u.ChannelID, ThreadTS: u.ThreadTS,
		Title: cutRunes(u.Title, maxSessionTitle), InitiatorUserID: u.Initiator,
	})
	if err != nil {
		if c.agentView.refuse(methodSessionStatus, err) {
			c.log.InfoContext(ctx, "chat: agent sessions refused; showing the assistant status line instead",
				"err", c.wrap(methodSessionStatus, err))
			return fmt.Errorf("%w: %w", pipeline.ErrNoAgentSessions, c.wrap(methodSessionStatus, err))
		}
		return c.wrap(methodSessionStatus, err)
	}
	// A session the platform made before this call (a DM thread the
	// person opened) kept its own title: the first message names it.
	if title := cutRunes(u.Title, maxSessionTitle); title != "" && resp.Title != title {
		c.renameSession(ctx, u.ChannelID, u.ThreadTS, title)
	}
	// Without the agent_session_stopped subscription the platform shows
	// a stop button that does nothing: worth the operator's eye, once.
	if w := resp.Warning; w != "" && c.agentView.firstWarning(methodSessionStatus, w) {
		c.log.WarnContext(ctx, "chat: agents.sessions.setStatus warns", "warning", w)
	}
	return nil
}

// SuggestPrompts offers prompts (at most the platform's four; each its own
// title) in the DM channelID (assistant.threads.setSuggestedPrompts). No
// thread_ts is sent: the method's page says that for an app declared with
// agent_view, as the manifest declares this one, a call with thread_ts
// fails silently, and that without it the prompts go to the channel's
// latest message. A refusal of the method is remembered like
// SetSessionStatus's.
func (c *Chat) SuggestPrompts(ctx context.Context, channelID string, prompts []string) error {
	if code := c.agentView.refused(methodPrompts); code != "" {
		return fmt.Errorf("%s: refused (%s before)", methodPrompts, code)
	}
	params := slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: channelID}
	for _, p := range prompts[:min(len(prompts), maxPrompts)] {
		params.AddPrompt(p, p)
	}
	if err := c.api.SetAssistantThreadsSuggestedPromptsContext(ctx, params); err != nil {
		if c.agentView.refuse(methodPrompts, err) {
			c.log.InfoContext(ctx, "chat: suggested prompts refused; not offering them again", "err", c.wrap(methodPrompts, err))
		}
		return c.wrap(methodPrompts, err)
	}
	return nil
}

// cutRunes cuts s to at most n runes.
func cutRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// methodRename is the method that changes a session's title.
const methodRename = "agents.sessions.rename"

// renameSession titles the session of a thread (agents.sessions.rename);
// a failure is logged, never the turn's (a refusal of the method is
// remembered like SetSessionStatus's).
func (c *Chat) renameSession(ctx context.Context, channelID, threadTS, title string) {
	if c.agentView.refused(methodRename) != "" {
		return
	}
	_, err := c.api.RenameAgentSessionContext(ctx, slack.AgentSessionRenameParameters{Title: title, ChannelID: channelID, ThreadTS: threadTS})
	if err != nil {
		c.agentView.refuse(methodRename, err)
		c.log.DebugContext(ctx, "chat: session not renamed", "err", c.wrap(methodRename, err))
	}
}
