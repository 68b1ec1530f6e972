package inbox

import (
	"fmt"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Which failed events are told: what was said to the persona, and what
// got past the engagement rules; not a plain thread reply whose
// engagement could not be read.
func TestAddressed(t *testing.T) {
	msg := func(channel, thread, text string) *pipeline.Event {
		return &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", ChannelID: channel, TS: "2.0", ThreadTS: thread, Text: text}
	}
	for _, tt := range []struct {
		name  string
		ev    *pipeline.Event
		stage string
		want  bool
	}{
		{"DM, drop failed", msg("D1", "", "hi"), "drop", true},
		{"command", &pipeline.Event{Kind: pipeline.KindCommand, ChannelID: "C1"}, "auth", true},
		{"app_mention", &pipeline.Event{Kind: pipeline.KindMessage, Type: "app_mention", ChannelID: "C1"}, "engage", true},
		{"mention in the text", msg("C1", "1.0", "<@U0BOT> hi"), "drop", true},
		{"mention with a name", msg("C1", "1.0", "<@U0BOT|bot> hi"), "engage", true},
		{"another id that starts alike", msg("C1", "1.0", "<@U0BOTX> hi"), "engage", false},
		{"thread reply, engagement unknown", msg("C1", "1.0", "plain words"), "engage", false},
		{"thread reply, lock unknown", msg("C1", "1.0", "plain words"), "drop", false},
		{"thread reply past engagement", msg("C1", "1.0", "plain words"), "auth", true},
		{"thread reply, session failed", msg("C1", "1.0", "plain words"), "session", true},
		{"thread reply, failure of unknown place", msg("C1", "1.0", "plain words"), "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := addressed(tt.ev, "U0BOT", tt.stage); got != tt.want {
				t.Errorf("addressed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestToldSet(t *testing.T) {
	var s toldSet
	if !s.first("C1:1.0") || s.first("C1:1.0") {
		t.Fatal("a key is first once")
	}
	for i := range toldMax {
		s.first(fmt.Sprint(i))
	}
	if !s.first("C1:1.0") {
		t.Error("the oldest key was not forgotten")
	}
	if len(s.order) != toldMax || len(s.keys) != toldMax {
		t.Errorf("%d keys in order, %d in the map; want %d", len(s.order), len(s.keys), toldMax)
	}
}
