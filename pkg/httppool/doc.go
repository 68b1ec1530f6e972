// Package httppool makes the connection pools of the runtime's own HTTP
// calls: the chat platform's Web API (pkg/gateway/slackio), the model's
// (internal/llm) and the external tool servers' over HTTP (pkg/tools).
//
// Each pool is http.DefaultTransport's settings (the proxy from the
// environment, its timeouts, HTTP/2) keeping [IdleConnsPerHost] idle
// connections per host where net/http keeps two. Turns run several at a
// time (AGENT_MAX_TURNS, 8 by default), and a turn's calls to one host
// overlap (its status line, its post and its edits; its model call; its
// tool calls). Over HTTP/1.1 each call in flight holds a connection, so
// with two kept every call past the second opened a connection (a TLS
// handshake, unless the address is plain http) and closed it after: the
// chat's calls opened 408 connections in a run of the project bench
// against the fakes (some 420 turns), 28 with its pool. A host that
// speaks HTTP/2 carries the calls on one connection either way.
//
// The owner of each pool closes its idle connections once no session is
// live (the service's idle release, internal/service/idle.go), so a
// persona at rest keeps its socket and nothing more.
package httppool
