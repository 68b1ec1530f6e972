package service

import (
	"fmt"

	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// prompt is the system prompt of a turn: the runtime baseline and the
// persona (static, identical for every turn), then the thread's part.
func (s *Service) prompt(t *pipeline.Turn) (static, thread string) {
	static = persona.BaselinePrompt() + "\n\n" + s.persona.Prompt()
	// Skills are discovered on every message (stat-based), so an edit
	// applies on the next turn; they change rarely, so they stay in the
	// cached prefix.
	if sk := s.skills.Prompt(); sk != "" {
		static += "\n\n" + sk
	}
	ws, _ := s.builtins.WorkspacePath(t.Event.ThreadKey())
	thread = fmt.Sprintf("## This conversation\n- Your chat user id: <@%s>\n- Channel: <#%s> (trust layer: %s, permission mode: %s)\n- Your workspace (relative paths resolve here): %s\n",
		s.self.UserID, t.Event.ChannelID, t.Access.Layer, t.Access.Mode, ws)
	if ch := s.persona.ChannelPrompt(t.Event.ChannelID); ch != "" {
		thread += "\n" + ch
	}
	return static, thread
}
