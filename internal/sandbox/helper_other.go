//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"os"
)

// LandlockABI is 0: Landlock is Linux's.
func LandlockABI() int { return 0 }

// confine fails: there is nothing to confine with outside Linux, and the
// helper never runs a command unconfined.
func (p *policy) confine() error {
	return errors.New("confinement needs Linux")
}

// supervise fails, as confine does.
func (p *policy) supervise([]string) error {
	return errors.New("confinement needs Linux")
}

func execve(string, []string, []string) error {
	return errors.New("confinement needs Linux")
}

func dropCapabilities() error { return errors.New("confinement needs Linux") }

func probe(bool) int { return 1 }

func probeNamespaces(string) bool { return false }

// relay is Linux's: NetAllowlist needs its namespaces.
type relay struct{ theirs *os.File }

func newRelay() (*relay, error) { return nil, errors.New("confinement needs Linux") }

func (*relay) serve(context.Context, Egress) {}

func (*relay) close() {}

func listenInside(int) (string, error) { return "", errors.New("confinement needs Linux") }

func withProxy(env []string, _ string) []string { return env }
