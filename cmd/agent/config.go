package main

import (
	"flag"
	"os"
	"strings"

	"github.com/persona-runtime/agent/internal/config"
)

// envFor loads the layered environment (.env files under the process
// environment). The home given with --home on the command line, if any,
// decides which $AGENT_HOME/.env is read.
func envFor(getenv func(string) string, args []string) (*config.Env, error) {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "."
	}
	return config.LoadEnv(getenv, cwd, homeFlag(args))
}

// homeFlag finds --home in args before flags are parsed.
func homeFlag(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"--home", "-home"} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
		}
	}
	return ""
}

// configFlags registers the configuration flags on fs; it returns the
// config and a function that finishes it after parsing (derived paths) and
// reports an environment value that did not parse.
func (c *cli) configFlags(fs *flag.FlagSet, logFormat string) (*config.Config, func() error) {
	getenv := c.getenv
	cfg := &config.Config{}
	if !c.envLoaded { // once, not once per command
		c.env, c.envErr = envFor(getenv, c.args)
		c.envLoaded = true
	}
	env, envErr := c.env, c.envErr
	get := getenv
	if envErr == nil {
		get = env.Get
	}
	regErr := cfg.RegisterFlags(fs, get, logFormat)
	return cfg, func() error {
		if envErr != nil {
			return envErr
		}
		if regErr != nil {
			return regErr
		}
		cfg.Resolve(getenv("HOME"))
		return nil
	}
}
