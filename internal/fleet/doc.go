// Package fleet is the coordination of replicas: with Postgres, several
// processes of one persona may run at once (a rolling deploy, a standby).
// Each joins the store's fleet (store.Fleet: the advisory locks, the inbox
// rows' owners, the notifications) and then, through a [Replica]:
//
//   - runs only the events whose inbox record it made (the insert is the
//     arbiter: a copy another replica recorded first is dropped);
//   - holds the thread's lock around each message's turn, and lets a
//     thread's older messages (by the platform's ts) that another live
//     replica holds go first, including those recorded up to
//     AGENT_ORDER_SETTLE after the newer one was received
//     ([Replica.LockThread]);
//   - takes over, every [SweepEvery], the unfinished events of replicas
//     that died (their locks went with their connections), with the rule
//     of a crash restart: said in the thread, resumed, or given up
//     ([Replica.Sweep]);
//   - announces card decisions, so that the replica whose turn waits for
//     the click releases it, and reads its pending request back every
//     [ApprovalPoll] in case an announcement was lost
//     ([Replica.AnnounceApproval], [Replica.Listen]);
//   - stops, at another replica's /abort, the turn it runs ([Replica.Engine]
//     announces, [Replica.Listen] stops).
//
// The protocol reaches the store through the small interfaces declared
// here ([Store]) and waits on an injected clock (pkg/clock), so that it is
// tested against an in-memory fake without a database or real time. The
// service wires it (internal/service).
package fleet
