// Package deptest holds the dependency check the packages' tests share: a
// package lists the imports it must never gain, each with its reason, and
// the check fails when `go list -deps` finds one (tailscale's
// tstest/deptest does the same).
package deptest
