package main

import "github.com/persona-runtime/agent/pkg/pipeline"

// threadContext reads back, for a turn that engages the bot in a thread
// holding messages it has not seen, those messages (AGENT_CONTEXT_MESSAGES
// of them at most), with their authors' roles from the persona, redacted
// like every inbound message, and marks them seen in the store.
func (s *service) threadContext(chat chatAPI) *pipeline.ThreadContext {
	return &pipeline.ThreadContext{Reader: chat, People: s.persona, Marks: s.store, Redact: s.redactor.Redact,
		Self: func() pipeline.Identity { return s.self }, Max: s.cfg.ContextMessages}
}
