package service

import (
	"context"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// threadContext reads back, for a turn that engages the bot in a thread
// holding messages it has not seen, those messages (AGENT_CONTEXT_MESSAGES
// of them at most), with their authors' roles from the persona, redacted
// like every inbound message, and marks them seen in the store.
func (s *Service) threadContext(chat ChatAPI) *pipeline.ThreadContext {
	return &pipeline.ThreadContext{Reader: chat, People: s.persona, Marks: s.store, Redact: s.redactor.Redact,
		Self: func() pipeline.Identity { return s.self }, Max: s.cfg.ContextMessages, Unheard: s.unheard,
		Peer: s.persona.IsPeer}
}

// unheard reports whether a person's words never reach the model, as the
// drop stage decides for what they type: blocked (SOUL ## Blocked), or
// muted now (/ignore) and not the manager or the backup, whom mutes never
// apply to. The read tools and a thread's unseen messages leave theirs
// out.
func (s *Service) unheard(ctx context.Context, userID string) (bool, error) {
	switch {
	case s.persona.IsBlocked(userID):
		return true, nil
	case s.persona.IsManager(userID):
		return false, nil
	}
	// No thread: only the person's own mute is asked.
	user, _, err := s.store.Muted(ctx, userID, "", "", s.now())
	return user, err
}
