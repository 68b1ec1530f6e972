//go:build !linux

package sandbox

import "errors"

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
