// Package config loads the runtime's settings: .env files, the process
// environment and command-line flags, in that order of increasing weight.
//
// The .env files are read from ~/.agent/.env, ./.env and $AGENT_HOME/.env;
// a later file wins over an earlier one, the process environment wins over
// every file, and a flag wins over everything. Flags and files are read only
// in cmd: packages get plain values.
package config
