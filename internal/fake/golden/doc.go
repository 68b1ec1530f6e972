// Package golden compares a test's output with a reviewed file, and
// rewrites the file when the test runs with -update (go test ./pkg -update):
// the diff of the files is then what a reviewer reads. Importing it
// defines the -update flag, so a test package must not define its own.
package golden
