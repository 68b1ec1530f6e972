// Package deptest holds the dependency check the packages' tests share: a
// package lists the imports it must never gain, each with its reason, and
// the check fails when `go list -deps` finds one (tailscale's
// tstest/deptest does the same).
//
// Its own tests check docs/architecture.md's rules for the whole module:
// every package's imports (TestArchitecture: the domain package, pkg/, the
// vendor SDKs' homes, who may import the simulator, the inbox and the test
// kit, and the simulator's inner arrows, simRank), the service free of the
// simulator, and cmd/agent declaring no type that implements an interface
// of pipeline, schedule, session or commands (a go/types check over export
// data, proven on testdata/planted).
package deptest
