package service

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/persona-runtime/agent/internal/egress"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/persona"
)

// newEgress builds the egress proxy of AGENT_SANDBOX_NET=allowlist (nil
// under allow or deny): what the persona's commands may reach is "##
// Network", the git remotes of the manifest (agent.json, read per
// request: an install may change it) and of AGENT_SKILLS_REPO, and the
// hosts a card allowed in the thread (the store); AGENT_EGRESS_HOSTS is
// read before DNS.
func (s *Service) newEgress() (sandbox.Egress, error) {
	if sandbox.Net(s.cfg.SandboxNet) != sandbox.NetAllowlist || sandbox.Mode(s.cfg.Sandbox) == sandbox.ModeOff {
		return nil, nil
	}
	hosts, err := egress.ParseHosts(s.cfg.EgressHosts)
	if err != nil {
		return nil, err
	}
	p, err := egress.New(egress.Options{Allowed: s.egressAllowed, Hosts: hosts, Threads: s.store, Cards: s.gate,
		Redact: s.redactor.Redact, Requests: s.metrics.EgressRequests, Tracer: s.tracer, Log: s.log})
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	s.closers = append(s.closers, func(context.Context) error { return p.Close() })
	return p, nil
}

// egressAllowed is what every command may reach now.
func (s *Service) egressAllowed() []persona.NetHost {
	out := append([]persona.NetHost(nil), s.persona.Network...)
	add := func(host string) {
		if h, err := persona.ParseNetHost(host); err == nil && host != "" {
			out = append(out, h)
		}
	}
	add(deps.GitHost(s.cfg.SkillsRepo))
	if m, err := deps.LoadManifest(filepath.Join(s.cfg.Home, deps.ManifestFile)); err == nil {
		for _, h := range m.GitHosts() {
			add(h)
		}
	}
	return out
}
