//go:build !linux

package sandbox

import "errors"

// LandlockABI is 0: Landlock is Linux's.
func LandlockABI() int { return 0 }

// apply fails: there is nothing to confine with outside Linux, and the
// helper never runs a command unconfined.
func (p *policy) apply() error {
	return errors.New("confinement needs Linux")
}

func execve(string, []string, []string) error {
	return errors.New("confinement needs Linux")
}
