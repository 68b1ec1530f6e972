package config

import (
	"path/filepath"
)

// Env is the layered environment: the process environment over the .env
// files.
type Env struct {
	process func(string) string
	files   map[string]string
	// Loaded lists the .env files that were read, in order.
	Loaded []string
}

// LoadEnv reads ~/.agent/.env, ./.env (under cwd) and $AGENT_HOME/.env, a
// later file winning over an earlier one, under the process environment
// getenv. home, when not empty, is the AGENT_HOME given on the command line;
// otherwise AGENT_HOME comes from the process environment or the first two
// files.
func LoadEnv(getenv func(string) string, cwd, home string) (*Env, error) {
	e := &Env{process: getenv, files: map[string]string{}}
	userHome := getenv("HOME")
	paths := []string{}
	if userHome != "" {
		paths = append(paths, filepath.Join(userHome, ".agent", ".env"))
	}
	paths = append(paths, filepath.Join(cwd, ".env"))
	if err := e.load(paths...); err != nil {
		return nil, err
	}
	if home == "" {
		home = e.Get("AGENT_HOME")
	}
	if home == "" && userHome != "" {
		home = filepath.Join(userHome, ".agent")
	}
	if home != "" {
		home = expandTilde(home, userHome)
		p := filepath.Join(home, ".env")
		if !contains(paths, p) {
			if err := e.load(p); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

func (e *Env) load(paths ...string) error {
	for _, p := range paths {
		vals, err := readDotenv(p)
		if err != nil {
			return err
		}
		if vals == nil {
			continue
		}
		e.Loaded = append(e.Loaded, p)
		for k, v := range vals {
			e.files[k] = v
		}
	}
	return nil
}

// Get returns the process environment's value, else the files'.
func (e *Env) Get(key string) string {
	if v := e.process(key); v != "" {
		return v
	}
	return e.files[key]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
