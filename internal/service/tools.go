package service

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/persona-runtime/agent/internal/agent"
	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/internal/publish"
	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// newTools builds the agent's tools, each confined (confine.go): the
// built-in file and shell tools, the chat, skills and knowledge tool
// servers, and the external tool servers of mcp.json (mcpConf). secrets
// are scrubbed from every result of the built-ins.
func (s *Service) newTools(ctx context.Context, d Deps, mcpConf *tools.MCPConfig, secrets []string, chat ChatAPI) (*tools.Registry, error) {
	cfg := s.cfg
	confine := newConfinement(cfg, d.Getenv)
	confiner, err := s.newSandbox(confine)
	if err != nil {
		return nil, err
	}
	if s.builtins, err = tools.NewBuiltins(tools.BuiltinOptions{Home: cfg.Home, Workspaces: cfg.Workspaces,
		WorkspacesOnDemand: d.Soul != nil,
		Deny:               confine.Deny, Secrets: secrets, Env: confine.BashEnv, Sandbox: confiner}); err != nil {
		return nil, err
	}
	registry := tools.NewRegistry()
	s.registry = registry
	registry.Add(s.builtins.Tools()...)
	chatTools := &tools.ChatServer{Redactor: s.redactor, Approvals: s.gate, Replied: agent.MarkReplied,
		Uploader: chat, Open: s.builtins.OpenInWorkspace,
		Reader: chat, Roles: s.persona, Self: func() pipeline.Identity { return s.self }, Unheard: s.unheard}
	registry.Add(chatTools.Tools()...)
	if searcher, ok := chat.(connect.Searcher); ok { // the platform's real-time search (not the simulator's)
		registry.Add((&connect.Search{Chat: searcher, Redact: s.redactor.Redact}).Tools()...)
	}
	s.skills = tools.NewSkills(filepath.Join(cfg.Home, "skills"), s.log)
	if cfg.SkillsRepo != "" {
		if _, err := deps.RepoURL(cfg.SkillsRepo); err != nil {
			return nil, fmt.Errorf("AGENT_SKILLS_REPO: %w", err)
		}
	}
	pub := &publish.Publisher{Home: cfg.Home, SkillsRepo: cfg.SkillsRepo, Author: s.gitAuthor(), Log: s.log, KBLock: s.store,
		Git: s.git}
	registry.Add((&tools.SkillsServer{Skills: s.skills, Sync: pub.Sync}).Tools()...)
	registry.Add((&tools.KBServer{Home: cfg.Home}).Tools()...)
	registry.Add(s.schedBook.Tools()...)
	registry.Add(s.memories().Tools()...)
	if err := s.mountMCP(ctx, registry, mcpConf, confine, confiner); err != nil {
		return nil, err
	}
	return registry, nil
}

// gitAuthor is the commit identity of the runtime's own commits when git
// has none: AGENT_GIT_AUTHOR, by default the persona's name.
func (s *Service) gitAuthor() string {
	if s.cfg.GitAuthor != "" {
		return s.cfg.GitAuthor
	}
	return s.persona.Identity.Name + " <agent@localhost>"
}
