// Package schedule is scheduled work, the whole feature: what a schedule
// is and when it is due, who may make one, what people read of it, the
// model's tools and what a due run does.
//
//   - What a schedule is: its `when` (a 5-field cron expression through
//     robfig/cron's standard parser, a descriptor such as @daily or
//     @every 15m, `in <duration>`, an RFC 3339 time) read in an IANA time
//     zone, with daylight-saving changes made explicit (when.go, dst.go,
//     zone.go); the checks of a new one (new.go); the catch-up rule after
//     the service was down (catchup.go).
//   - The book (book.go): who may (MaySchedule), add, list, remove and
//     resume, with the pinned texts (text.go: "cron job" in every answer,
//     as interfaces.md pins them). The /schedule commands reach it through
//     Commands (commands.go, internal/commands' adapter), the model
//     through Book.Tools (tools.go, the agent_schedule tools).
//   - The scheduler (scheduler.go): one timer for all schedules, a single
//     goroutine sleeping until the earliest due time on an injected clock,
//     claiming each due run through the store so that replicas never both
//     run it, and handing it to a Runner.
//   - The run side (run.go): Runs, the Runner and the agent stage's gate.
//     A run becomes a KindSchedule event with its creator's authority; a
//     creator who lost the role has their schedules paused and the
//     manager told; a channel target posts its root message first; a run
//     still going makes the next due time skip.
//
// It knows nothing of the chat platform's wire, the database or the
// service: the store (internal/store) serves its Store, BookStore and
// RunStore with this package's types, and internal/service wires the
// chat, the inbox and the gateway in through small interfaces.
package schedule
