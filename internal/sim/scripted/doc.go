// Package scripted is the simulator's model: a Messages API "model" that
// follows a script instead of thinking. Each behaviour of interfaces.md
// (reply, echo, request_approval, boom, events, events2, markdown, silent,
// upload, edit, ...) answers with tool calls; the real agent engine runs it, so every
// call goes through the real tool servers, the real approval gate and the
// real history. interfaces.md and the CLI call it "the stub agent" (--stub);
// it names itself "stub" to the engine and in traces for the same reason.
package scripted
