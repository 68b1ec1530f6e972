// Package runner runs the simulator: it boots the production service on
// the simulated platform (package platform) with the scripted model (or a
// live one), drives it with the steps people take — a message (a channel's
// thread root mentions the bot and arrives twice, as on the platform), a
// click on a card — and waits for it to settle. The scenario runner of
// `agent sim run` plays scenario files with those steps and checks their
// golden transcripts; the REPL (package repl) drives the same steps by hand.
//
// The service itself is built in cmd/agent: a Boot function given in the
// Options builds it, so that this package needs nothing of the binary.
package runner
