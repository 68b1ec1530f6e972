package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/persona-runtime/agent/pkg/deps"
)

// installDepsCommand is `agent install-deps`: install the skills and
// knowledge bases of agent.json and write agent.lock.
func (c *cli) installDepsCommand() *ffcli.Command {
	flags := flag.NewFlagSet("install-deps", flag.ContinueOnError)
	check := flags.Bool("check", false, "no network, no writes: exit 0 when agent.lock covers agent.json and the installed tree, 1 on drift")
	frozen := flags.Bool("frozen", false, "install exactly the locked shas; fail when the lock does not cover the manifest")
	update := flags.Bool("update", false, "re-resolve branch refs to their newest sha")
	cfg, finish := c.configFlags(flags, "text")
	return &ffcli.Command{
		Name:       "install-deps",
		ShortUsage: "agent install-deps [--check|--frozen|--update]",
		ShortHelp:  "install skills and knowledge bases from agent.json, write agent.lock",
		FlagSet:    flags,
		Exec: func(ctx context.Context, _ []string) error {
			if err := finish(); err != nil {
				return err
			}
			n := 0
			for _, f := range []bool{*check, *frozen, *update} {
				if f {
					n++
				}
			}
			if n > 1 {
				return errors.New("install-deps: use only one of --check, --frozen and --update")
			}
			manifestPath := filepath.Join(cfg.Home, deps.ManifestFile)
			lockPath := filepath.Join(cfg.Home, deps.LockFile)
			m, err := deps.LoadManifest(manifestPath)
			if errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(c.stdout, "no %s: nothing to install\n", manifestPath)
				return nil
			}
			if err != nil {
				return err
			}
			lock, err := deps.LoadLock(lockPath)
			if err != nil {
				return err
			}
			in := &deps.Installer{Home: cfg.Home, Progress: c.stderr}
			if *check {
				drift, err := in.Check(ctx, m, lock)
				if err != nil {
					return err
				}
				for _, d := range drift {
					fmt.Fprintln(c.stdout, d)
				}
				if len(drift) > 0 {
					return &exitError{code: 1, err: fmt.Errorf("%d drift(s) between agent.json, agent.lock and the installed tree", len(drift))}
				}
				fmt.Fprintln(c.stdout, "agent.lock covers agent.json")
				return nil
			}
			mode := deps.Normal
			switch {
			case *frozen:
				mode = deps.Frozen
			case *update:
				mode = deps.Update
			}
			newLock, err := in.Install(ctx, m, lock, mode)
			if err != nil {
				return err
			}
			if mode == deps.Frozen {
				fmt.Fprintln(c.stdout, "installed the locked versions")
				return nil
			}
			changed, err := deps.WriteLock(lockPath, newLock)
			if err != nil {
				return err
			}
			if changed {
				fmt.Fprintln(c.stdout, "agent.lock updated")
			} else {
				fmt.Fprintln(c.stdout, "agent.lock unchanged")
			}
			return nil
		},
	}
}
