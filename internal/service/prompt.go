package service

import (
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// prompt is the engine's system prompt of a turn (persona.StaticPrompt and
// ThreadPrompt), given this service's skills, identity and workspaces.
func (s *Service) prompt(t *pipeline.Turn) (static, thread string) {
	ws, _ := s.builtins.WorkspacePath(t.Event.ThreadKey())
	return s.persona.StaticPrompt(s.skills.Prompt()), s.persona.ThreadPrompt(persona.Conversation{
		Self: s.self.UserID, ChannelID: t.Event.ChannelID, Access: t.Access, Workspace: ws,
	})
}
