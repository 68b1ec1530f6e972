// Package agentview offers the persona's suggested prompts (SOUL.md
// "## Suggested prompts") on the chat platform's agent surface: to a
// person who opens the persona's DM, and on a new DM thread. The rest of
// that surface lives where its events do: a turn's agent session in
// internal/agent, the stop button in internal/commands, the idle close in
// pkg/session, the wire in pkg/gateway/slackio.
package agentview
