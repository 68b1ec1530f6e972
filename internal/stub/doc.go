// Package stub is the simulator's stand-in for the model: a scripted
// Messages API "model" whose behaviours (interfaces.md: reply, echo,
// request_approval, boom, events, markdown, silent, upload, edit) answer with
// tool calls. The real agent engine runs it, so every call goes through the
// real tool servers, the real approval gate and the real history.
package stub
