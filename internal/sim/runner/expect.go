package runner

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/golden"
	"github.com/persona-runtime/agent/internal/sim/platform"
)

func (p *Player) expectReply(ctx context.Context, st sim.Step) error {
	want := fmt.Sprintf("a reply containing %q", st.Contains)
	if st.Persona != "" {
		want = fmt.Sprintf("a reply of %s containing %q", st.Persona, st.Contains)
	}
	author := p.s.botOf(st.Persona).UserID
	return p.expect(ctx, want, func(s platform.Snapshot) (bool, string) {
		var seen []string
		for _, m := range s.Messages {
			if (m.Op == platform.OpPost || m.Op == platform.OpUpdate || m.Op == platform.OpUpload) && m.UserID == author {
				if strings.Contains(m.Text, st.Contains) || (m.Card != nil && strings.Contains(m.Card.Body(), st.Contains)) {
					return true, ""
				}
				seen = append(seen, fmt.Sprintf("%q", golden.OneLine(m.Text, 80)))
			}
		}
		return false, seenList(seen)
	})
}

func (p *Player) expectCard(ctx context.Context, st sim.Step) error {
	kind := cmp.Or(st.CardKind, "approval")
	want := fmt.Sprintf("an unresolved %s card", kind)
	if st.Contains != "" {
		want += fmt.Sprintf(" containing %q", st.Contains)
	}
	return p.expect(ctx, want, func(s platform.Snapshot) (bool, string) {
		var seen []string
		for _, c := range s.Cards {
			if !c.Resolved && c.Card.Kind == kind && (st.Contains == "" || strings.Contains(c.Card.Body()+" "+c.Card.Details, st.Contains)) {
				return true, ""
			}
			state := "unresolved"
			if c.Resolved {
				state = "resolved: " + c.Card.Outcome
			}
			seen = append(seen, fmt.Sprintf("%s card %q (%s)", c.Card.Kind, golden.OneLine(c.Card.Body(), 60), state))
		}
		return false, seenList(seen)
	})
}

// expectDrop checks the last send: the message, or its app_mention twin
// (one of the two is the other's duplicate), was dropped with the reason.
func (p *Player) expectDrop(st sim.Step) error {
	if st.Persona != "" {
		return p.expectTeamDrop(st)
	}
	drops := p.s.Drops(p.last)
	got := ""
	if len(drops) > 0 {
		got = drops[0]
	}
	if len(drops) > 1 && got != st.Reason && drops[1] == st.Reason {
		got = drops[1]
	}
	if got != st.Reason {
		seen := "it was not dropped"
		if got != "" {
			seen = "it was dropped with reason " + got
		}
		return fmt.Errorf("expected the last message dropped with reason %s; %s", st.Reason, seen)
	}
	return nil
}

// expect waits (event-driven, bounded by stepTimeout) for cond over the
// transcript.
func (p *Player) expect(ctx context.Context, want string, cond func(platform.Snapshot) (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		changed := p.s.chat.Changed()
		ok, seen := cond(p.s.chat.Snapshot())
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("expected %s; saw %s", want, seen)
		}
	}
}

func seenList(seen []string) string {
	if len(seen) == 0 {
		return "nothing"
	}
	if len(seen) > 5 {
		seen = append(seen[len(seen)-5:], "…")
	}
	return strings.Join(seen, ", ")
}
