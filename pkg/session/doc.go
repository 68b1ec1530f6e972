// Package session keeps one agent session per chat thread and its live /
// closed state machine: a session is live while its thread is active and
// closes after AGENT_IDLE_MINUTES without activity; the next message in the
// thread resumes it with its full history from the store, also after a
// restart.
package session
