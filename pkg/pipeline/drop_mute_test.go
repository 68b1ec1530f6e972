package pipeline_test

import (
	"context"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// fakeMutes mutes the people and thread keys it lists.
type fakeMutes struct {
	users, threads map[string]bool
}

func (m fakeMutes) Muted(_ context.Context, userID, threadKey, channelKey string) (bool, bool, error) {
	return m.users[userID], m.threads[threadKey] || m.threads[channelKey], nil
}

func TestDropMuted(t *testing.T) {
	const thread = "1.0"
	key := pipeline.ThreadKey(trustedCh, thread)
	mutes := fakeMutes{users: map[string]bool{member: true}, threads: map[string]bool{key: true}}
	say := func(user, threadTS, text string) *pipeline.Event {
		return with(msg("E1", trustedCh, user, threadTS), func(e *pipeline.Event) { e.Text = text })
	}
	tests := []struct {
		name string
		ev   *pipeline.Event
		want string
	}{
		{"a muted person", say(member, "", "hello"), pipeline.DropIgnored},
		{"a muted person anywhere", say(member, "7.0", "hello"), pipeline.DropIgnored},
		{"someone in a muted thread", say(outsider, thread, "hello"), pipeline.DropIgnored},
		// Mutes never apply to the manager or the backup (pinned).
		{"the manager in a muted thread", say(manager, thread, "hello"), ""},
		{"the manager's /ignore in a muted thread", say(manager, thread, "/ignore-thread 1h"), ""},
		// The command lifting a thread's mute is typed in it.
		{"/unignore-thread in a muted thread", say(manager, thread, "/unignore-thread"), ""},
		{"/unignore-thread after the bot's mention", say(outsider, thread, "<@"+botUser+"> /unignore-thread"), ""},
		// A muted person's own /unignore does not reach the persona.
		{"a muted person's /unignore-thread", say(member, thread, "/unignore-thread"), pipeline.DropIgnored},
		{"a muted person's /unignore", say(member, "", "/unignore <@"+member+">"), pipeline.DropIgnored},
		{"someone else elsewhere", say(outsider, "7.0", "hello"), ""},
		{"a muted person's click", click("action:T1", trustedCh, member), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newMuteFixture(t, mutes)
			if err := f.h.Handle(context.Background(), tt.ev); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				f.assertPassed(t)
				return
			}
			f.assertDropped(t, tt.want, 0)
		})
	}
}

// newMuteFixture is newDropFixture's stage with mutes.
func newMuteFixture(t *testing.T, mutes pipeline.Mutes) *dropFixture {
	t.Helper()
	tracer, sr := newTracer()
	f := &dropFixture{next: &terminal{}, seen: memSeen(), drops: newDropCounter(), metrics: newStageMetrics(), sr: sr}
	deps := pipeline.DropDeps{Roster: worldRoster(), Seen: f.seen, Self: selfFn, Drops: f.drops, Log: discardLog(), Mutes: mutes}
	f.h = pipeline.Chain(f.next, pipeline.NewDrop(tracer, f.metrics, deps))
	return f
}
