// Package runner runs the simulator: it boots the production service on
// the simulated platform (package platform) with the scripted model (or a
// live one), drives it with the steps people take — a message (a channel's
// thread root mentions the bot and arrives twice, as on the platform), a
// click on a card — and waits for it to settle. The scenario runner of
// `agent sim run` plays scenario files with those steps and checks their
// golden transcripts; the REPL (package repl) drives the same steps by hand.
//
// The service is the production one, built by internal/service from the
// simulator's platform, model, clock and hooks (service.Deps); the
// runner's own tests give a stand-in (Options.Boot).
package runner
