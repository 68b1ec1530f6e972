package pipeline

import (
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Engagements remembers which threads the bot is engaged in, and where a
// thread's messages the bot has not seen begin. Both persist across
// restarts.
type Engagements interface {
	// Engaged reports whether the bot is engaged in the thread; known is
	// false when the thread was never seen.
	Engaged(ctx context.Context, threadKey string) (engaged, known bool, err error)
	// Engage engages the thread for the message at ts, which mentions the
	// bot, and returns the ts of the first message of the thread before
	// ts that the bot has not seen ("" when there is none): the thread's
	// root when the bot was never engaged in it (and ts is a reply), the
	// message that disengaged it, or the mark an earlier Engage returned
	// while its turn has not stored those messages yet (UnseenMarks).
	Engage(ctx context.Context, threadKey, channelID, rootTS, ts string) (unseen string, err error)
	// Disengage records that the bot stops following the thread at the
	// message at ts: it sees neither that message nor the ones after it
	// until it is mentioned again. An earlier unseen mark is kept.
	Disengage(ctx context.Context, threadKey, ts string) error
}

// Engagement decisions: the reason attribute of the engage span.
const (
	engageDM         = "dm"
	engageMention    = "mention"
	engageThread     = "engaged_thread"
	engageDisengaged = "disengaged"
	engageNotEngaged = "not_engaged"
)

// NewEngage returns the engagement stage, the rules of the spec:
//  1. a direct message is always engaged;
//  2. an @mention of the bot engages the thread (the bot answers in-thread);
//     in a thread holding messages the bot has not seen, the event's Unseen
//     says where they begin;
//  3. a plain reply in an engaged thread is handled;
//  4. a message in an engaged thread that mentions another user (and not the
//     bot) disengages the thread and is itself not answered.
//
// Everything else in channels (chatter the bot is not part of) stops here
// without a drop count: it was never addressed to the bot. Commands and
// clicks pass through.
func NewEngage(tracer trace.Tracer, m StageMetrics, threads Engagements, self func() Identity, log *slog.Logger) Middleware {
	if threads == nil || self == nil || log == nil {
		panic("pipeline: NewEngage needs threads, self and log")
	}
	return newStage("engage", tracer, m, func(ctx context.Context, ev *Event, next Handler) (string, string, error) {
		if ev.Kind != KindMessage {
			return OutcomePass, "", next.Handle(ctx, ev)
		}
		decision, err := engage(ctx, threads, self().UserID, ev)
		if err != nil {
			return OutcomeError, "", err
		}
		switch decision {
		case engageDisengaged, engageNotEngaged:
			if log.Enabled(ctx, slog.LevelDebug) {
				log.DebugContext(ctx, "not engaged", "decision", decision, "event_id", ev.ID, "channel_id", ev.ChannelID)
			}
			return OutcomeDrop, decision, nil
		}
		return OutcomePass, decision, next.Handle(ctx, ev)
	})
}

func engage(ctx context.Context, threads Engagements, botUserID string, ev *Event) (string, error) {
	if ev.IsDM() {
		return engageDM, nil
	}
	mentionsBot, mentionsOther := false, false
	for _, id := range mentions(ev.Text) {
		if id == botUserID {
			mentionsBot = true
		} else {
			mentionsOther = true
		}
	}
	if ev.Type == "app_mention" {
		mentionsBot = true
	}
	key := ev.ThreadKey()
	if mentionsBot {
		unseen, err := threads.Engage(ctx, key, ev.ChannelID, ev.RootTS(), ev.TS)
		if err != nil {
			return "", err
		}
		ev.Unseen = unseen
		return engageMention, nil
	}
	if ev.ThreadTS == "" {
		return engageNotEngaged, nil
	}
	engaged, _, err := threads.Engaged(ctx, key)
	if err != nil {
		return "", err
	}
	if !engaged {
		return engageNotEngaged, nil
	}
	if mentionsOther {
		if err := threads.Disengage(ctx, key, ev.TS); err != nil {
			return "", err
		}
		return engageDisengaged, nil
	}
	return engageThread, nil
}

// StripMention removes the mentions of the bot from text (with one space
// after each): what the agent reads is the person's words, not the address.
func StripMention(text, botUserID string) string {
	if botUserID == "" || !strings.Contains(text, "<@"+botUserID) {
		return strings.TrimSpace(text)
	}
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "<@"+botUserID)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '>')
		if j < 0 {
			b.WriteString(rest)
			break
		}
		if id := rest[i+2 : i+j]; id != botUserID && !strings.HasPrefix(id, botUserID+"|") {
			b.WriteString(rest[:i+j+1]) // another id that starts alike
			rest = rest[i+j+1:]
			continue
		}
		b.WriteString(rest[:i])
		rest = strings.TrimPrefix(rest[i+j+1:], " ")
	}
	return strings.TrimSpace(b.String())
}
