// Package gateway is the only package that knows the chat platform. It
// holds the transports events come from (Slack's socket mode, and the
// simulator's in-memory platform), the Web API client replies go to, and
// the dispatcher that runs every event through the pipeline: per-thread
// order, clicks and commands on queues of their own, a per-event timeout,
// and a drain on shutdown.
package gateway
