// Package gateway is the dispatcher: it takes the events a Transport
// delivers and runs each through the pipeline, in per-thread order, with
// clicks, slash commands and a thread's /abort on queues of their own, a
// per-event timeout, the durable inbox's hooks and a drain on shutdown.
//
// It knows no chat platform's SDK (a dependency test keeps slack-go out):
// the Slack adapter is in package slackio beside it, the simulator's
// in-memory platform is internal/sim/platform. What the platforms share (Transport,
// ErrFileTooLarge, ErrFileSignIn, ErrFileHost, ChannelType) is here.
package gateway
