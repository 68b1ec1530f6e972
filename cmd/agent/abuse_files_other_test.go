//go:build !linux

package main

import "errors"

// renameExchange needs renameat2, which only Linux has.
func renameExchange(a, b string) (func() error, error) {
	return nil, errors.New("renameat2 is Linux-only")
}
