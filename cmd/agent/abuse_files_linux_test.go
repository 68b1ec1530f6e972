package main

import "golang.org/x/sys/unix"

// renameExchange returns a function that exchanges the names a and b
// atomically (renameat2 RENAME_EXCHANGE), as a sandboxed command can, after
// a first exchange that shows the kernel and the file system support it.
func renameExchange(a, b string) (func() error, error) {
	exchange := func() error { return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) }
	if err := exchange(); err != nil {
		return nil, err
	}
	return exchange, nil
}
