package fake

import (
	"context"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// The platform's agent surface (docs.slack.dev, "Agent sessions",
// agents.sessions.setStatus, agent_session_stopped,
// assistant.threads.setSuggestedPrompts): a thread's session and its
// status, the stop button, the DM's suggested prompts.

// SessionStatus is an agents.sessions.setStatus call, or (Session) the
// session of a thread as it stands.
type SessionStatus struct {
	Channel   string
	ThreadTS  string
	Status    string // processing, active, suspended, closed
	Title     string // as sent; the session keeps the first call's only
	Initiator string // as sent; the session keeps the first call's only
}

// SuggestedPrompts is an assistant.threads.setSuggestedPrompts call.
type SuggestedPrompts struct {
	Channel  string
	ThreadTS string // "" when the call sent none
	Title    string
	Prompts  []Prompt
}

// Prompt is one suggested prompt.
type Prompt struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

// The method pages' limits.
const (
	slackMaxSessionTitle = 200
	slackMaxPrompts      = 4
)

var slackSessionStatuses = []string{"processing", "active", "suspended", "closed"}

// setSessionStatus creates a thread's session at its first call (keeping
// that call's title and initiator; later ones are ignored, as on the
// platform) and sets its status.
func (s *Slack) setSessionStatus(c *slackCall) (map[string]any, string, func()) {
	st := SessionStatus{Channel: c.params.Get("channel_id"), ThreadTS: c.params.Get("thread_ts"),
		Status: c.params.Get("status"), Title: c.params.Get("title"), Initiator: c.params.Get("initiator_user_id")}
	switch {
	case !slices.Contains(slackSessionStatuses, st.Status):
		s.failf("fake slack: agents.sessions.setStatus: status %q is none of %v", st.Status, slackSessionStatuses)
		return nil, "invalid_arguments", nil
	case st.Channel == "" || st.ThreadTS == "":
		// Required for a thread's session in a channel or a DM.
		return nil, "invalid_arguments", nil
	case utf8.RuneCountInString(st.Title) > slackMaxSessionTitle:
		s.failf("fake slack: agents.sessions.setStatus: a title of %d characters, the limit is %d",
			utf8.RuneCountInString(st.Title), slackMaxSessionTitle)
		return nil, "invalid_arguments", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions = append(s.sessions, st)
	if s.session == nil {
		s.session = map[string]*SessionStatus{}
	}
	key := st.Channel + "/" + st.ThreadTS
	if cur := s.session[key]; cur != nil {
		cur.Status = st.Status
	} else {
		s.session[key] = &st
	}
	s.notify()
	return map[string]any{"status": st.Status, "agent_status": st.Status, "title": s.session[key].Title}, "", nil
}

func (s *Slack) setSuggestedPrompts(c *slackCall) (map[string]any, string, func()) {
	p := SuggestedPrompts{Channel: c.params.Get("channel_id"), ThreadTS: c.params.Get("thread_ts"), Title: c.params.Get("title")}
	if p.Channel == "" {
		return nil, "channel_not_found", nil
	}
	if err := json.Unmarshal([]byte(c.params.Get("prompts")), &p.Prompts); err != nil || len(p.Prompts) == 0 {
		s.failf("fake slack: assistant.threads.setSuggestedPrompts: bad prompts %q", c.params.Get("prompts"))
		return nil, "invalid_arguments", nil
	}
	if len(p.Prompts) > slackMaxPrompts {
		s.failf("fake slack: assistant.threads.setSuggestedPrompts: %d prompts, the limit is %d", len(p.Prompts), slackMaxPrompts)
		return nil, "invalid_arguments", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, p)
	s.notify()
	return nil, "", nil
}

// SessionStatuses returns the agents.sessions.setStatus calls so far, in
// order.
func (s *Slack) SessionStatuses() []SessionStatus { return slackCopy(s, &s.sessions) }

// Session returns the agent session of a thread as it stands: its status
// now, the title and initiator it was created with.
func (s *Slack) Session(channel, thread string) (SessionStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.session[channel+"/"+thread]; cur != nil {
		return *cur, true
	}
	return SessionStatus{}, false
}

// WaitForSessionStatus is WaitForPost for agents.sessions.setStatus calls.
func (s *Slack) WaitForSessionStatus(ctx context.Context, match func(SessionStatus) bool) (SessionStatus, error) {
	return slackWait(ctx, s, "session status", &s.sessions, match)
}

// Prompts returns the assistant.threads.setSuggestedPrompts calls so far,
// in order.
func (s *Slack) Prompts() []SuggestedPrompts { return slackCopy(s, &s.prompts) }

// WaitForPrompts is WaitForPost for assistant.threads.setSuggestedPrompts
// calls.
func (s *Slack) WaitForPrompts(ctx context.Context, match func(SuggestedPrompts) bool) (SuggestedPrompts, error) {
	return slackWait(ctx, s, "suggested prompts", &s.prompts, match)
}

// ClickStop is user's click on the stop button of the agent session of
// the thread at channel/thread, as the platform handles it: the bot's
// streams still open in the thread are stopped (appending to or stopping
// them again answers message_not_in_streaming_state) and the
// agent_session_stopped event, listing them, is sent over the socket. It
// returns the envelope's id and the streams stopped.
func (s *Slack) ClickStop(user, channel, thread string) (envelopeID string, stopped []string) {
	s.mu.Lock()
	open := map[string]bool{}
	var order []string
	for _, p := range s.streams {
		key := p.Channel + "/" + p.TS
		switch {
		case p.Method == "chat.startStream" && p.ThreadTS == thread && p.Channel == channel:
			open[key] = true
			order = append(order, p.TS)
		case p.Method == "chat.stopStream":
			delete(open, key)
		}
	}
	if s.halted == nil {
		s.halted = map[string]bool{}
	}
	for _, ts := range order {
		if key := channel + "/" + ts; open[key] && !s.halted[key] {
			s.halted[key] = true
			stopped = append(stopped, ts)
		}
	}
	s.notify()
	s.mu.Unlock()
	return s.SendEvent(AgentSessionStopped{User: user, Channel: channel, ThreadTS: thread, Streams: stopped}.Payload()), stopped
}

// renameSession changes a thread's session title (agents.sessions.rename):
// 1–200 characters, the thread's session must exist.
func (s *Slack) renameSession(c *slackCall) (map[string]any, string, func()) {
	channel, thread, title := c.params.Get("channel_id"), c.params.Get("thread_ts"), c.params.Get("title")
	switch n := utf8.RuneCountInString(title); {
	case n == 0 || n > slackMaxSessionTitle:
		return nil, "invalid_name", nil
	case thread == "":
		return nil, "thread_ts_required", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.session[channel+"/"+thread]
	if cur == nil {
		return nil, "session_not_found", nil
	}
	cur.Title = title
	s.renames = append(s.renames, SessionStatus{Channel: channel, ThreadTS: thread, Status: cur.Status, Title: title})
	s.notify()
	return map[string]any{"title": title}, "", nil
}

// OpenSession makes the session of a thread as the platform does when a
// person opens a DM thread: active, untitled; a later setStatus keeps it
// untitled (its title applies only when it creates the session).
func (s *Slack) OpenSession(channel, thread string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		s.session = map[string]*SessionStatus{}
	}
	s.session[channel+"/"+thread] = &SessionStatus{Channel: channel, ThreadTS: thread, Status: "active"}
}

// Renames returns the agents.sessions.rename calls that succeeded, in order.
func (s *Slack) Renames() []SessionStatus { return slackCopy(s, &s.renames) }
