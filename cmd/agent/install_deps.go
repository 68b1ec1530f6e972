package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/internal/service"
	"github.com/persona-runtime/agent/pkg/deps"
	"github.com/persona-runtime/agent/pkg/persona"
)

// installDepsCommand is `agent install-deps`: install the skills and
// knowledge bases of agent.json and write agent.lock.
func (c *cli) installDepsCommand() *ffcli.Command {
	var check, frozen, update bool
	return c.command(command{
		name:  "install-deps",
		usage: "agent install-deps [--check|--frozen|--update]",
		help:  "install skills and knowledge bases from agent.json, write agent.lock",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&check, "check", false, "no network, no writes: exit 0 when agent.lock covers agent.json and the installed tree, 1 on drift")
			fs.BoolVar(&frozen, "frozen", false, "install exactly the locked shas; fail when the lock does not cover the manifest")
			fs.BoolVar(&update, "update", false, "re-resolve branch refs to their newest sha")
		},
		run: func(ctx context.Context, inv *invocation, _ []string) error {
			n := 0
			for _, f := range []bool{check, frozen, update} {
				if f {
					n++
				}
			}
			if n > 1 {
				return errors.New("install-deps: use only one of --check, --frozen and --update")
			}
			mode := deps.Normal
			switch {
			case frozen:
				mode = deps.Frozen
			case update:
				mode = deps.Update
			}
			return installDeps(ctx, inv, check, mode)
		},
	})
}

// installDeps checks (check) or installs (in mode) the home's agent.json.
func installDeps(ctx context.Context, inv *invocation, check bool, mode deps.Mode) error {
	home := inv.cfg.Home
	manifestPath := filepath.Join(home, deps.ManifestFile)
	lockPath := filepath.Join(home, deps.LockFile)
	m, err := deps.LoadManifest(manifestPath)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(inv.stdout, "no %s: nothing to install\n", manifestPath)
		return nil
	}
	if err != nil {
		return err
	}
	lock, err := deps.LoadLock(lockPath)
	if err != nil {
		return err
	}
	in := &deps.Installer{Home: home, Progress: inv.stderr}
	if check {
		drift, err := in.Check(ctx, m, lock)
		if err != nil {
			return err
		}
		for _, d := range drift {
			fmt.Fprintln(inv.stdout, d)
		}
		if len(drift) > 0 {
			return &exitError{code: 1, err: fmt.Errorf("%d drift(s) between agent.json, agent.lock and the installed tree", len(drift))}
		}
		fmt.Fprintln(inv.stdout, "agent.lock covers agent.json")
		return nil
	}
	// The installs' git runs as the runtime's does: under allowlist in a
	// network of its own, through an egress proxy of this process.
	var network []persona.NetHost
	if src, err := os.ReadFile(inv.soulPath("")); err == nil {
		if p, err := persona.Parse(inv.soulPath(""), src); err == nil {
			network = p.Network
		}
	}
	git, closeGit, err := service.InstallGit(inv.cfg, network, slog.New(slog.NewTextHandler(inv.stderr, nil)))
	if err != nil {
		return err
	}
	defer closeGit()
	in.Git = git
	newLock, err := in.Install(ctx, m, lock, mode)
	if err != nil {
		return err
	}
	if mode == deps.Frozen {
		fmt.Fprintln(inv.stdout, "installed the locked versions")
		return nil
	}
	changed, err := deps.WriteLock(lockPath, newLock)
	if err != nil {
		return err
	}
	if changed {
		fmt.Fprintln(inv.stdout, "agent.lock updated")
	} else {
		fmt.Fprintln(inv.stdout, "agent.lock unchanged")
	}
	return nil
}
