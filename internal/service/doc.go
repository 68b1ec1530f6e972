// Package service builds, wires and runs the runtime: everything `agent
// start` runs. New takes the configuration and the Deps a caller gives
// (the chat platform, and for the simulator and the tests its model,
// clock, ids and observers), opens the store, reads SOUL.md, builds the
// pipeline's stages, the approval gate, the engine, the tools, the
// scheduler, the fleet of replicas and the HTTP surface, and connects
// them; Run runs them until its context ends, then drains and closes.
//
// It is wiring: what the service does lives in the packages it connects
// (docs/architecture.md names each concept's home), so that a test of a
// rule needs that package, not a booted service. Both callers build it
// the same way: cmd/agent from the command line, and the simulator
// (internal/sim/runner) on its in-memory platform.
package service
