package service

// Name and Version of the runtime (its traces and health, `agent version`,
// the simulator's title).
const (
	Name    = "agent"
	Version = "0.1.0"
)
