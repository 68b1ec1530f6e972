// Package schedule is scheduled work: what a schedule is and when it is
// due. It reads a schedule's `when` (a 5-field cron expression through
// robfig/cron's standard parser, a descriptor such as @daily or
// @every 15m, `in <duration>`, an RFC 3339 time) in an IANA time zone,
// with daylight-saving changes made explicit (when.go, dst.go); it checks a
// new schedule (new.go); it decides what a schedule found due runs after
// the service was down (catchup.go); and it runs one timer for all
// schedules (scheduler.go): a single goroutine sleeping until the earliest
// due time on an injected clock, claiming each due run through the store
// so that replicas never both run it, and handing it to a callback.
//
// It knows nothing of the chat platform, the pipeline or the database:
// the store (internal/store) serves its Store interface, and cmd wires the
// callback that turns a run into an event.
package schedule
