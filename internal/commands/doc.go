// Package commands runs the thread commands of interfaces.md: /mode,
// /abort, /compact, /help, /1on1 and /ingest. Each works as a registered
// slash command (applying to the channel or DM where it was typed) and as
// the text of a message in a thread (applying to that thread). The
// platform's stop button of a thread's agent session runs as that
// thread's /abort.
package commands
