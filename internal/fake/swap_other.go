//go:build !linux

package fake

import "errors"

// exchange needs renameat2, which only Linux has.
func exchange(a, b string) error {
	return errors.New("renameat2 is Linux-only")
}
