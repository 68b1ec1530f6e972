package service

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/egress"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/persona"
	"go.opentelemetry.io/otel/trace/noop"
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
	return egressAllowed(s.persona.Network, s.cfg)
}

// egressAllowed is network (SOUL.md "## Network") and the hosts of the
// git remotes of cfg's manifest and AGENT_SKILLS_REPO.
func egressAllowed(network []persona.NetHost, cfg *config.Config) []persona.NetHost {
	out := append([]persona.NetHost(nil), network...)
	add := func(host string) {
		if h, err := persona.ParseNetHost(host); err == nil && host != "" {
			out = append(out, h)
		}
	}
	add(deps.GitHost(cfg.SkillsRepo))
	if m, err := deps.LoadManifest(filepath.Join(cfg.Home, deps.ManifestFile)); err == nil {
		for _, h := range m.GitHosts() {
			add(h)
		}
	}
	return out
}

// runtimeGit is the runtime's own git (the knowledge bases, the skills
// sync, install-deps) started through sb: under allowlist in a network of
// its own whose only way out is the egress proxy, writing only the home's
// git folders (.cache/, skills/, knowledge/), reading besides the system
// git's configuration and credential files. Its environment is the
// runtime's, as ExecGit's is (git's credentials come from there and from
// its configuration), less every variable holding one of the runtime's
// own credentials (secrets: the chat tokens, the model key, the database
// password), which git never needs; the agent's commands never see it:
// they run in Landlock domains of their own, which may not trace or read
// another's processes. Under allow or deny, and with AGENT_SANDBOX=off,
// git runs unconfined as before.
func runtimeGit(sb *sandbox.Sandbox, home string, getenv func(string) string, secrets []string) deps.Git {
	writable := []string{filepath.Join(home, ".cache"), filepath.Join(home, "skills"), filepath.Join(home, "knowledge")}
	var readable []string
	if f := getenv("GIT_CONFIG_GLOBAL"); f != "" {
		readable = append(readable, f)
	}
	if h := getenv("HOME"); h != "" {
		readable = append(readable, filepath.Join(h, ".gitconfig"), filepath.Join(h, ".git-credentials"))
	}
	xdg := getenv("XDG_CONFIG_HOME")
	if xdg == "" && getenv("HOME") != "" {
		xdg = filepath.Join(getenv("HOME"), ".config")
	}
	if xdg != "" {
		readable = append(readable, filepath.Join(xdg, "git"))
	}
	return deps.ConfinedGit(func(ctx context.Context, cmd *exec.Cmd) (func(), error) {
		if err := os.MkdirAll(writable[0], 0o755); err != nil {
			return nil, err
		}
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
			_, v, _ := strings.Cut(kv, "=")
			return slices.ContainsFunc(secrets, func(s string) bool { return strings.Contains(v, s) })
		})
		return sb.Git(ctx, cmd, writable, readable)
	})
}

// InstallGit is the git of `agent install-deps`, run outside the service:
// under AGENT_SANDBOX_NET=allowlist it starts an egress proxy of its own in
// the CLI's process, allowing what the runtime's would without a thread
// (network, SOUL.md "## Network", and the git remotes of the manifest and
// AGENT_SKILLS_REPO; no card), and confines each git command as
// runtimeGit does. Elsewhere it is deps.ExecGit. Call close when done.
func InstallGit(cfg *config.Config, network []persona.NetHost, log *slog.Logger) (git deps.Git, close func(), err error) {
	if sandbox.Net(cfg.SandboxNet) != sandbox.NetAllowlist || sandbox.Mode(cfg.Sandbox) == sandbox.ModeOff {
		return deps.ExecGit, func() {}, nil
	}
	hosts, err := egress.ParseHosts(cfg.EgressHosts)
	if err != nil {
		return nil, nil, err
	}
	p, err := egress.New(egress.Options{Allowed: func() []persona.NetHost { return egressAllowed(network, cfg) },
		Hosts: hosts, Tracer: noop.NewTracerProvider().Tracer("agent"), Log: log})
	if err != nil {
		return nil, nil, fmt.Errorf("egress proxy: %w", err)
	}
	c := newConfinement(cfg, os.Getenv)
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Mode(cfg.Sandbox), Net: sandbox.NetAllowlist,
		ReadOnly: c.ReadOnly, Egress: p})
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	return runtimeGit(sb, cfg.Home, os.Getenv, cfg.Secrets()), func() { p.Close() }, nil
}
