package service

import (
	"context"
	"fmt"
	"os"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/sandbox"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// The wiring of tool confinement. What the tools may reach is
// tools.Confinement (pkg/tools), the kernel's part internal/sandbox; here
// they get the configuration's values and meet.

// newConfinement is the confinement of the runtime configured by cfg, in
// this working directory and environment.
func newConfinement(cfg *config.Config, getenv func(string) string) tools.Confinement {
	h := tools.Host{Home: cfg.Home, Getenv: getenv}
	if db := cfg.Database(); db != store.InMemory && !store.IsPostgres(db) {
		h.Database = db
	}
	if wd, err := os.Getwd(); err == nil {
		h.Dir = wd
	}
	return tools.NewConfinement(h)
}

// newSandbox makes the runtime non-dumpable and builds the sandbox of
// Bash and the tool servers from AGENT_SANDBOX and AGENT_SANDBOX_NET
// (with the egress proxy under allowlist, egress.go);
// it says once what is enforced (a startup line and agent_sandbox_info).
// Without the kernel sandbox it refuses a configuration asking for bypass
// (persona.CheckBypass) and keeps why in s.noBypass.
// The returned Confiner is nil with AGENT_SANDBOX=off.
func (s *Service) newSandbox(c tools.Confinement) (tools.Confiner, error) {
	if err := sandbox.HardenProcess(); err != nil {
		return nil, fmt.Errorf("make the runtime non-dumpable: %w", err)
	}
	eg, err := s.newEgress()
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Mode(s.cfg.Sandbox), Net: sandbox.Net(s.cfg.SandboxNet),
		ReadOnly: c.ReadOnly, LandlockABI: s.landlockABI, Egress: eg})
	if err != nil {
		return nil, err
	}
	s.git = runtimeGit(sb, s.cfg.Home, os.Getenv, s.cfg.Secrets())
	st := sb.Status()
	s.metrics.SandboxInfo.WithLabelValues(st.Labels()...).Set(1)
	st.Log(s.log)
	s.noBypass = st.BypassRefusal()
	if err := s.persona.CheckBypass(pipeline.Mode(s.cfg.DefaultMode), s.noBypass); err != nil {
		return nil, err
	}
	if st.Mode == sandbox.ModeOff {
		return nil, nil
	}
	return sb, nil
}

// mountMCP mounts the external tool servers of conf (the home's mcp.json),
// each confined by c and confiner; a server that fails to start is logged
// and skipped by MountMCP.
func (s *Service) mountMCP(ctx context.Context, registry *tools.Registry, conf *tools.MCPConfig, c tools.Confinement, confiner tools.Confiner) error {
	if len(conf.Servers) == 0 {
		return nil
	}
	m, err := tools.MountMCP(ctx, conf, tools.MCPOptions{Runner: s.cfg.PackageRunner, BaseEnv: c.Env, Log: s.log,
		Sandbox: confiner, StateDir: c.ServerState, Deny: c.Deny, Auth: s.mcpAuth()})
	if err != nil {
		return fmt.Errorf("mount tool servers: %w", err)
	}
	s.mcp = m
	s.closers = append(s.closers, func(context.Context) error { return m.Close() })
	registry.Add(m.Tools()...)
	s.log.Info("tool servers mounted", "servers", len(conf.Servers), "tools", len(m.Tools()))
	return nil
}

// attachments saves the files of a message in the thread's workspace,
// streamed from the platform through the workspace's root, and reads the
// ones the model sees back from there. The files of all threads stay
// within AGENT_ATTACHMENTS_MAX_GB (s.attachQuota, which prune also keeps
// to AGENT_ATTACHMENTS_KEEP).
func (s *Service) attachments(chat ChatAPI) *tools.Attachments {
	a := &tools.Attachments{Workspace: s.builtins.Workspace, Download: chat, TooLarge: gateway.ErrFileTooLarge,
		SignIn: gateway.ErrFileSignIn, Host: gateway.ErrFileHost, Log: s.log,
		MaxFiles: s.cfg.MaxAttachments, MaxBytes: int64(s.cfg.MaxAttachmentMB) << 20,
		Skipped: func(reason string) { s.metrics.AttachmentsSkipped.WithLabelValues(reason).Inc() }}
	if quota := s.cfg.AttachmentsQuota(); quota > 0 {
		s.attachQuota = tools.NewAttachQuota(s.cfg.Workspaces, quota)
		a.Quota = s.attachQuota
	}
	return a
}
