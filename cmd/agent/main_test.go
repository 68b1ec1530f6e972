package main

import (
	"os"
	"testing"

	"github.com/persona-runtime/agent/internal/sandbox"
)

// TestMain lets the test binary stand in for the agent binary when the
// service under test re-executes itself as the sandbox helper.
func TestMain(m *testing.M) {
	if sandbox.IsHelper(os.Args) {
		os.Exit(sandbox.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}
