// Package inbox is the durable inbox: each person's message or slash
// command is recorded before its envelope is acknowledged and followed to
// its end, so that every event the runtime acknowledges gets an answer or
// an explanation, even when the process dies mid-turn.
//
// An event moves received → running → answering → answered, or ends
// failed (with its error) or dropped (it never reached the agent stage).
// The states are the store's (store.InboxReceived …), defined once beside
// the statements that move an event between them.
//
// A Recorder does the inbox's work:
//   - for the gateway, Receive records an event before it is acknowledged
//     and Begin starts a run of it: the stages report through the
//     pipeline.Progress its context carries, and the run's end settles it
//     (answered at its first post, failed, dropped, or left running when
//     the gateway's shutdown cut it short); a failure before the agent
//     stage is told in the event's thread, once for a mention's two events;
//   - at start, or when a replica's events are taken over, Resume runs
//     again what a stopped run left unfinished, with a line in the thread
//     saying so, reads back from the thread whether an answer being posted
//     landed (never twice), and gives up an event that crashed the runtime
//     twice (poison).
package inbox
