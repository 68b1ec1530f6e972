package service

import "github.com/persona-runtime/agent/pkg/pipeline"

// peers is the drop stage's team of personas: the SOUL's ## Peers, the
// store's counts (shared by replicas and restarts), AGENT_PEER_TURNS. nil
// without peers: every bot's message is dropped, and a person's message
// writes nothing.
func (s *Service) peers() *pipeline.Peers {
	if len(s.persona.Peers) == 0 {
		return nil
	}
	return &pipeline.Peers{Roster: s.persona, Turns: s.store, Max: s.cfg.PeerTurns}
}
