package commands_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/commands"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/pkg/persona"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// friday is the schedules' clock: Friday 27 November 2026, 12:00 UTC.
var friday = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

const scheduleRefused = "only manager or approver can schedule work"

// scheduler is a persona with an approver of scope schedule besides the
// roster's.
var scheduler = func() *persona.Persona {
	p, err := persona.Parse("SOUL.md", []byte(soul+"- <@U0SCH>: schedule\n"))
	if err != nil {
		panic(err)
	}
	return p
}()

// schedHarness is the commands with a book of schedules on the store,
// the clock at friday; profiles gives people's time zones; notified
// counts Notify.
type schedHarness struct {
	*harness
	book     *commands.Schedules
	notified int
	profiles map[string]string
}

func newSchedHarness(t *testing.T, max int) *schedHarness {
	h := &schedHarness{harness: newHarness(t), profiles: map[string]string{}}
	h.cmds.Persona = scheduler
	h.book = &commands.Schedules{Store: h.st, Now: func() time.Time { return friday }, Max: max,
		Profile: func(_ context.Context, user string) (pipeline.Profile, error) {
			tz, ok := h.profiles[user]
			if !ok {
				return pipeline.Profile{}, errors.New("users.info: user_not_found")
			}
			return pipeline.Profile{UserID: user, TimeZone: tz}, nil
		},
		Notify: func() { h.notified++ },
		Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	h.cmds.Schedules = h.book
	return h
}

func schedAccess(user string) pipeline.Access {
	return pipeline.Access{UserID: user, Role: scheduler.RoleOf(user), Scopes: scheduler.ScopesOf(user),
		Layer: pipeline.LayerTrusted, Mode: pipeline.ModeAsk}
}

var createdRE = regexp.MustCompile(`^cron job created: (s[a-z2-7]{8}), next run (.+)$`)

// create runs text as user and returns the new schedule's id.
func (h *schedHarness) create(user, text string) (id, next string) {
	h.t.Helper()
	got := h.say(message(user, text), schedAccess(user))
	m := createdRE.FindStringSubmatch(strings.TrimSuffix(got, " (posts at the channel root)"))
	if m == nil {
		h.t.Fatalf("%s: answer %q, want cron job created", text, got)
	}
	return m[1], m[2]
}

func (h *schedHarness) stored() []schedule.Schedule {
	h.t.Helper()
	all, err := h.st.Schedules(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return all
}

func TestScheduleCreate(t *testing.T) {
	h := newSchedHarness(t, 100)
	h.profiles[manager] = "Europe/Berlin"
	id, next := h.create(manager, `/schedule "0 9 * * 1" "summarise last week's incidents"`)
	if next != "2026-11-30 09:00 Europe/Berlin" {
		t.Errorf("next run %q, want Monday 9:00 in the manager's profile zone", next)
	}
	all := h.stored()
	if len(all) != 1 {
		t.Fatalf("stored %d schedules, want 1", len(all))
	}
	sc := all[0]
	if sc.ID != id || sc.Creator != manager || sc.Channel != "C1" || sc.ThreadTS != "1.0" || sc.Target != schedule.TargetThread ||
		sc.When != "0 9 * * 1" || sc.TZ != "Europe/Berlin" || sc.Prompt != "summarise last week's incidents" {
		t.Errorf("stored %+v", sc)
	}
	if h.notified != 1 {
		t.Errorf("Notify called %d times, want 1", h.notified)
	}

	// A channel target, by the alias, with curly quotes; no profile zone:
	// AGENT_TZ.
	h.book.AgentZone = mustZone(t, "America/New_York")
	got := h.say(message(anyone, `/cron-add “@daily” “post the open incidents” channel`), schedAccess(anyone))
	if !strings.HasSuffix(got, ", next run 2026-11-28 00:00 America/New_York (posts at the channel root)") {
		t.Errorf("channel target: %q", got)
	}
	// Neither: UTC.
	h.book.AgentZone = nil
	if _, next := h.create(backup, `/schedule "in 90s" "stretch"`); next != "2026-11-27 12:01:30 UTC" {
		t.Errorf("in 90s: next run %q", next)
	}
	// A slash command has no thread: its target is the channel.
	got = h.say(slash(manager, "/schedule", `"0 18 * * 5" "weekly wrap-up"`), schedAccess(manager))
	wantIn(t, got, "cron job created: ", "(posts at the channel root)")
	if h.notified != 4 {
		t.Errorf("Notify called %d times, want 4", h.notified)
	}
}

func TestScheduleRoles(t *testing.T) {
	h := newSchedHarness(t, 100)
	for _, user := range []string{manager, backup, anyone, "U0SCH"} {
		h.create(user, `/schedule "@hourly" "check the queue"`)
	}
	// An approver of other scopes, of mode, a member, someone unknown:
	// refused, for every command and alias, and nothing stored.
	for _, user := range []string{approver, moder, skiller, alice, bob} {
		for _, text := range []string{`/schedule "@hourly" "x"`, `/cron-add "0 9 * * 1" "test"`, "/schedules", "/cron-list",
			"/unschedule saaaaaaaa", "/cron-remove fake-id", "/schedule", "/unschedule"} {
			if got := h.say(message(user, text), schedAccess(user)); got != scheduleRefused {
				t.Errorf("%s by %s: %q, want the refusal", text, user, got)
			}
		}
		if got := h.say(slash(user, "/schedules", ""), schedAccess(user)); got != scheduleRefused {
			t.Errorf("slash /schedules by %s: %q", user, got)
		}
	}
	if n := len(h.stored()); n != 4 {
		t.Errorf("%d schedules stored, want 4", n)
	}
}

func TestScheduleListAndRemove(t *testing.T) {
	h := newSchedHarness(t, 100)
	if got := h.say(message(manager, "/schedules"), schedAccess(manager)); got != "No cron jobs." {
		t.Errorf("empty list: %q", got)
	}
	h.profiles[manager] = "Europe/Berlin"
	weekly, _ := h.create(manager, `/schedule "0 9 * * 1" "weekly <!channel> digest"`)
	daily, _ := h.create(manager, `/cron-add "@daily" "daily check" channel`)
	// One made in another conversation: counted, not shown.
	other := message(manager, `/schedule "@hourly" "the secret project's numbers"`)
	other.ChannelID = "G9"
	h.say(other, schedAccess(manager))

	got := h.say(message(manager, "/cron-list"), schedAccess(manager))
	// Soonest first.
	want := "Active cron jobs:\n" +
		"- " + daily + " `@daily` [channel] next run 2026-11-28 00:00 Europe/Berlin: daily check\n" +
		"- " + weekly + " `0 9 * * 1` [thread] next run 2026-11-30 09:00 Europe/Berlin: weekly < !channel> digest\n" +
		"(1 more made in other conversations, not shown here)"
	if got != want {
		t.Errorf("list:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "secret") {
		t.Errorf("list shows another conversation's prompt: %q", got)
	}

	notified := h.notified
	if got := h.say(message(anyone, "/cron-remove "+weekly), schedAccess(anyone)); got != "cron job "+weekly+" removed" {
		t.Errorf("remove: %q", got)
	}
	if h.notified != notified+1 {
		t.Errorf("remove did not notify")
	}
	if got := h.say(message(manager, "/unschedule "+weekly), schedAccess(manager)); got != "no cron job "+weekly {
		t.Errorf("remove again: %q", got)
	}
	for text, want := range map[string]string{
		"/cron-remove fake-id-00":  "no cron job fake-id-00",
		"/unschedule <!here>":      "no cron job < !here>",
		"/unschedule":              "usage: /unschedule <id>",
		"/unschedule saaaaaaaa xx": "usage: /unschedule <id>",
	} {
		if got := h.say(message(manager, text), schedAccess(manager)); got != want {
			t.Errorf("%s: %q, want %q", text, got, want)
		}
	}
	if h.notified != notified+1 {
		t.Errorf("a failed remove notified")
	}
	if got := h.say(message(manager, "/schedules"), schedAccess(manager)); !strings.Contains(got, daily) || strings.Contains(got, weekly) {
		t.Errorf("list after remove: %q", got)
	}
}

func TestScheduleBadInput(t *testing.T) {
	h := newSchedHarness(t, 100)
	usage := `usage: /schedule "<when>" "<prompt>" [channel]`
	for _, tt := range []struct{ text, want string }{
		{`/cron-add "not-a-cron" "test prompt"`, "invalid cron expression: "},
		{`/schedule "0 9 * *" "four fields"`, "invalid cron expression: "},
		{`/schedule "2026-01-05T09:00:00Z" "the past"`, "time in the past: "},
		{`/schedule "0 9 * * 1" "   "`, "empty prompt: "},
		{`/schedule "@every 30s" "flood"`, "too frequent: "},
		{`/schedule "* * * * *" "every minute is fine"`, "cron job created: "},
		{`/schedule "0 9 * * 1"`, usage},
		{`/schedule`, usage},
		{`/schedule "0 9 * * 1" "x" everywhere`, usage},
		{`/schedule "0 9 * * 1" "no end`, usage + ` (unclosed quote "\"")`},
	} {
		got := h.say(message(manager, tt.text), schedAccess(manager))
		if !strings.HasPrefix(got, tt.want) || strings.Contains(got, "\n") {
			t.Errorf("%s: %q, want one line starting %q", tt.text, got, tt.want)
		}
	}
	if n := len(h.stored()); n != 1 {
		t.Errorf("%d stored, want only the valid one", n)
	}
}

// An unknown zone is named (the tool's tz: the command has none).
func TestScheduleUnknownZone(t *testing.T) {
	h := newSchedHarness(t, 100)
	_, err := h.book.Add(context.Background(), schedAccess(manager), message(manager, ""),
		tools.ScheduleRequest{When: "@daily", Prompt: "x", TZ: "Mars/Olympus"})
	var ue *pipeline.UserError
	if !errors.As(err, &ue) || ue.Message != `unknown time zone "Mars/Olympus" (want an IANA name like Europe/Berlin)` {
		t.Errorf("Add with tz Mars/Olympus: %v", err)
	}
	// A profile zone the platform has wrong is skipped, not an error.
	h.profiles[manager] = "Not/AZone"
	h.book.AgentZone = mustZone(t, "Asia/Tokyo")
	if _, next := h.create(manager, `/schedule "@daily" "x"`); next != "2026-11-28 00:00 Asia/Tokyo" {
		t.Errorf("bad profile zone: next run %q, want AGENT_TZ's", next)
	}
}

func TestScheduleLimit(t *testing.T) {
	h := newSchedHarness(t, 2)
	h.create(manager, `/schedule "@daily" "one"`)
	h.create(manager, `/schedule "@weekly" "two"`)
	got := h.say(message(manager, `/schedule "@hourly" "three"`), schedAccess(manager))
	if got != "too many schedules: at most 2 per persona (AGENT_MAX_SCHEDULES); remove one first" {
		t.Errorf("over the limit: %q", got)
	}
	if n := len(h.stored()); n != 2 {
		t.Errorf("%d stored, want 2", n)
	}
}

// Without a book (no store wired), the commands say so.
func TestScheduleNotAvailable(t *testing.T) {
	h := newHarness(t)
	got := h.say(message(manager, "/schedules"), access(manager))
	if got != "Schedules are not available here." {
		t.Errorf("%q", got)
	}
}

func TestShowTime(t *testing.T) {
	for _, tt := range []struct {
		t    time.Time
		tz   string
		want string
	}{
		{time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), "Europe/Berlin", "2026-11-30 09:00 Europe/Berlin"},
		{time.Date(2026, 7, 1, 7, 0, 0, 0, time.UTC), "Europe/Berlin", "2026-07-01 09:00 Europe/Berlin"},
		{time.Date(2026, 7, 1, 7, 0, 5, 0, time.UTC), "", "2026-07-01 07:00:05 UTC"},
		{time.Time{}, "UTC", "none"},
	} {
		if got := commands.ShowTime(tt.t, tt.tz); got != tt.want {
			t.Errorf("ShowTime(%v, %q) = %q, want %q", tt.t, tt.tz, got, tt.want)
		}
	}
}

// A paused schedule runs again once someone who may schedule work resumes
// it where it was made: theirs from now on, from its next due time (the
// runs missed while paused are not caught up), the answer showing the
// prompt they adopt. Elsewhere it is not found; a member is refused; one
// not paused, or a one-off whose time has passed, says so.
func TestScheduleResume(t *testing.T) {
	h := newSchedHarness(t, 100)
	daily, _ := h.create(manager, `/schedule "0 9 * * *" "post the numbers"`)
	once, _ := h.create(manager, `/schedule "in 1h" "once"`)
	for _, id := range []string{daily, once} {
		if err := h.st.SetSchedulePaused(context.Background(), id, true); err != nil {
			t.Fatal(err)
		}
	}
	elsewhere := message("U0SCH", "/schedule resume "+daily)
	elsewhere.ChannelID = "G9"
	notified := h.notified
	for _, c := range []struct {
		ev   *pipeline.Event
		want string
	}{
		{message(alice, "/schedule resume "+daily), scheduleRefused},
		{elsewhere, "no cron job " + daily},
		{message("U0SCH", "/schedule resume sabsent22"), "no cron job sabsent22"},
	} {
		if got := h.say(c.ev, schedAccess(c.ev.UserID)); got != c.want {
			t.Errorf("%s in %s: %q, want %q", c.ev.Text, c.ev.ChannelID, got, c.want)
		}
	}
	if h.notified != notified {
		t.Error("a refused resume notified the scheduler")
	}

	got := h.say(message("U0SCH", "/cron-add resume "+daily), schedAccess("U0SCH"))
	want := "cron job resumed, running as <@U0SCH> from now on: " + daily + " `0 9 * * *` [thread] next run 2026-11-28 09:00 UTC: post the numbers"
	if got != want {
		t.Errorf("resume:\n%q\nwant\n%q", got, want)
	}
	if h.notified != notified+1 {
		t.Error("the scheduler was not told")
	}
	sc, err := h.st.Schedule(context.Background(), daily)
	if err != nil || sc.Paused || sc.Creator != "U0SCH" || !sc.NextRunAt.Equal(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("stored: %+v, %v", sc, err)
	}
	if got := h.say(message(manager, "/schedule resume "+daily), schedAccess(manager)); got != "cron job "+daily+" is not paused" {
		t.Errorf("resume again: %q", got)
	}

	// The one-off's hour has passed by the time it is resumed.
	h.book.Now = func() time.Time { return friday.Add(2 * time.Hour) }
	if got := h.say(message(manager, "/schedule resume "+once), schedAccess(manager)); got != "cron job "+once+" has no run left: `/unschedule "+once+"` removes it" {
		t.Errorf("resume a spent one-off: %q", got)
	}
	// A `when` of "resume" is still only a bad expression.
	if got := h.say(message(manager, `/schedule resume "the numbers"`), schedAccess(manager)); !strings.HasPrefix(got, "invalid cron expression") {
		t.Errorf("a schedule whose when is resume: %q", got)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
