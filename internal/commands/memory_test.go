package commands_test

import (
	"context"
	"slices"
	"testing"

	"github.com/persona-runtime/agent/internal/memory"
)

// /remember makes a memory of this conversation for anyone who may talk
// here; /remember --persona one of every conversation, for the manager
// and the backup manager only (their own decision: no card), never for an
// approver of anything.
func TestRemember(t *testing.T) {
	h := newHarness(t)
	if got := h.say(message(alice, "/remember we deploy on Tuesdays"), access(alice)); got != "memory is not configured here" {
		t.Errorf("without memory: %q", got)
	}
	m := &memory.Memories{Store: h.st, Log: h.cmds.Log}
	h.cmds.Memory = memory.Commands{M: m}
	ctx := context.Background()
	for _, c := range []struct {
		who, text, want string
		scope, stored   string // the memory stored; "" for none
	}{
		{alice, "/remember", "usage: /remember [--persona] <text>", "", ""},
		{alice, "/remember --persona", "usage: /remember [--persona] <text>", "", ""},
		{alice, "/remember we deploy on Tuesdays", "(recalled in this conversation)", memory.ScopeConversation, "we deploy on Tuesdays"},
		{alice, "/remember --persona interns own releases", "only the manager can make a persona-wide memory", "", ""},
		{anyone, "/remember --persona interns own releases", "only the manager can make a persona-wide memory", "", ""},
		{alice, "/remember --personal notes", "(recalled in this conversation)", memory.ScopeConversation, "--personal notes"},
		{manager, "/remember --persona Morgan owns releases", "(recalled everywhere)", memory.ScopePersona, "Morgan owns releases"},
		{backup, "/remember —persona the freeze starts on the 20th", "(recalled everywhere)", memory.ScopePersona, "the freeze starts on the 20th"},
	} {
		before, _ := h.st.Memories(ctx, "")
		got := h.say(message(c.who, c.text), access(c.who))
		wantIn(t, got, c.want)
		after, _ := h.st.Memories(ctx, "")
		var added []memory.Memory
		for _, m := range after {
			if !slices.ContainsFunc(before, func(b memory.Memory) bool { return b.ID == m.ID }) {
				added = append(added, m)
			}
		}
		switch {
		case c.scope == "" && len(added) != 0:
			t.Errorf("%s %q stored %+v", c.who, c.text, added)
		case c.scope != "" && (len(added) != 1 || added[0].Scope != c.scope || added[0].Author != c.who ||
			added[0].Channel != "C1" || added[0].ThreadTS != "1.0" || added[0].Text != c.stored):
			t.Errorf("%s %q stored %+v, want %q of scope %s", c.who, c.text, added, c.stored, c.scope)
		}
	}
	// The slash form, typed in the channel.
	wantIn(t, h.say(slash(manager, "/remember", "--persona standup is at ten"), access(manager)), "(recalled everywhere)")
	wantIn(t, h.say(message(alice, "/help"), access(alice)), "`/remember <text>`", "`/remember --persona <text>`")
}
