package home

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// The view's texts (golden: the tests' and the simulator's).
const (
	titleThreads     = "Your recent threads with me"
	titleSchedules   = "Your schedules"
	titleMemories    = "What I remember from you"
	titleConnections = "Your connected accounts"
	titleSpend       = "Today's spend"
	titleCards       = "Cards waiting for a decision"
	titleModes       = "Channels' permission modes"
	titleMutes       = "Mutes in force"
)

// View builds userID's view from their own things only; the managers'
// sections are added for the manager and the backup.
func (h *Home) View(ctx context.Context, userID string) (pipeline.HomeView, error) {
	a := h.Access(userID)
	var v pipeline.HomeView
	for _, build := range []func(context.Context, pipeline.Access) (*pipeline.HomeSection, error){
		h.threads, h.schedules, h.memories, h.connections,
	} {
		s, err := build(ctx, a)
		if err != nil {
			return v, err
		}
		if s != nil {
			v.Sections = append(v.Sections, *s)
		}
	}
	if !a.Managing() {
		return v, nil
	}
	for _, build := range []func(context.Context, pipeline.Access) (*pipeline.HomeSection, error){
		h.spend, h.cards, h.modes, h.mutes,
	} {
		s, err := build(ctx, a)
		if err != nil {
			return v, err
		}
		if s != nil {
			v.Sections = append(v.Sections, *s)
		}
	}
	return v, nil
}

// section keeps at most maxItems lines, counting the rest.
func section(title, empty string, lines []pipeline.HomeLine) *pipeline.HomeSection {
	s := &pipeline.HomeSection{Title: title, Empty: empty, Lines: lines}
	if len(lines) > maxItems {
		s.Lines, s.More = lines[:maxItems], len(lines)-maxItems
	}
	return s
}

func (h *Home) threads(ctx context.Context, a pipeline.Access) (*pipeline.HomeSection, error) {
	ts, err := h.Store.ThreadsOf(ctx, a.UserID, maxItems+1)
	if err != nil {
		return nil, err
	}
	var lines []pipeline.HomeLine
	for _, t := range ts {
		channel, root, _ := strings.Cut(t.Key, ":")
		lines = append(lines, pipeline.HomeLine{Text: fmt.Sprintf("<%s|a thread> in %s · last %s", permalink(channel, root), where(channel), stamp(t.Last))})
	}
	s := section(titleThreads, "No threads yet: mention me in a channel or write to me here.", lines)
	if len(ts) > maxItems {
		s.More = 0 // the most recent only: no count of the older ones
	}
	return s, nil
}

func (h *Home) schedules(ctx context.Context, a pipeline.Access) (*pipeline.HomeSection, error) {
	all, err := h.Store.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	var lines []pipeline.HomeLine
	for _, sc := range all {
		if sc.Creator != a.UserID {
			continue
		}
		line := pipeline.HomeLine{Text: fmt.Sprintf("`%s` %s in %s: %s", sc.ID, escape(sc.When), where(sc.Channel), escape(clip(sc.Prompt, 120)))}
		if sc.Paused {
			line.Text += " _(paused)_"
		}
		if schedule.MaySchedule(a) {
			line.Button = &pipeline.HomeButton{Label: "Remove", ActionID: ActionRemoveSchedule, Value: sc.ID}
		}
		lines = append(lines, line)
	}
	return section(titleSchedules, "None.", lines), nil
}

func (h *Home) memories(ctx context.Context, a pipeline.Access) (*pipeline.HomeSection, error) {
	ms, err := h.Store.MemoriesBy(ctx, a.UserID)
	if err != nil {
		return nil, err
	}
	var lines []pipeline.HomeLine
	for i := len(ms) - 1; i >= 0; i-- { // the newest first
		m := ms[i]
		lines = append(lines, pipeline.HomeLine{Text: fmt.Sprintf("`%s` %s", m.ID, escape(clip(m.Text, 200))),
			Button: &pipeline.HomeButton{Label: "Forget", ActionID: ActionForgetMemory, Value: m.ID}})
	}
	return section(titleMemories, "Nothing: ask me to remember something with /remember.", lines), nil
}

func (h *Home) connections(ctx context.Context, a pipeline.Access) (*pipeline.HomeSection, error) {
	if h.Connections == nil {
		return nil, nil
	}
	cs, err := h.Connections.List(ctx, a.UserID)
	if err != nil {
		return nil, err
	}
	var lines []pipeline.HomeLine
	for _, c := range cs {
		lines = append(lines, pipeline.HomeLine{Text: fmt.Sprintf("%s as %s", escape(c.Server), escape(c.Account)),
			Button: &pipeline.HomeButton{Label: "Disconnect", ActionID: ActionDisconnect, Value: c.Server}})
	}
	return section(titleConnections, "No connections.", lines), nil
}

func (h *Home) spend(ctx context.Context, _ pipeline.Access) (*pipeline.HomeSection, error) {
	if h.Spend == nil {
		return nil, nil
	}
	t, err := h.Spend.Today(ctx, maxItems-1)
	if err != nil {
		return nil, err
	}
	lines := []pipeline.HomeLine{{Text: fmt.Sprintf("%d tokens today, about $%.2f", t.Tokens, t.Cost)}}
	for _, l := range t.Lines {
		lines = append(lines, pipeline.HomeLine{Text: l.String()})
	}
	return section(titleSpend, "", lines), nil
}

func (h *Home) cards(ctx context.Context, _ pipeline.Access) (*pipeline.HomeSection, error) {
	as, err := h.Store.PendingApprovals(ctx)
	if err != nil {
		return nil, err
	}
	var lines []pipeline.HomeLine
	for _, ap := range as {
		link := "its card is being posted"
		if ap.ChannelID != "" && ap.CardTS != "" {
			link = fmt.Sprintf("<%s?thread_ts=%s&amp;cid=%s|the card>", permalink(ap.ChannelID, ap.CardTS), ap.ThreadTS, ap.ChannelID)
		}
		lines = append(lines, pipeline.HomeLine{Text: fmt.Sprintf("`%s` %s for <@%s> since %s: %s", ap.ID, escape(ap.Category),
			ap.RequestedBy, stamp(ap.RequestedAt), link)})
	}
	return section(titleCards, "None.", lines), nil
}

func (h *Home) modes(ctx context.Context, _ pipeline.Access) (*pipeline.HomeSection, error) {
	ms, err := h.Store.ChannelModes(ctx)
	if err != nil {
		return nil, err
	}
	lines := []pipeline.HomeLine{{Text: fmt.Sprintf("default: %s", h.DefaultMode)}}
	for _, m := range ms {
		lines = append(lines, pipeline.HomeLine{Text: fmt.Sprintf("<#%s>: %s", m.ChannelID, escape(m.Mode))})
	}
	return section(titleModes, "", lines), nil
}

func (h *Home) mutes(ctx context.Context, _ pipeline.Access) (*pipeline.HomeSection, error) {
	ms, err := h.Store.Mutes(ctx, h.Now())
	if err != nil {
		return nil, err
	}
	var lines []pipeline.HomeLine
	for _, m := range ms {
		until := "until lifted"
		if !m.Until.IsZero() {
			until = "until " + stamp(m.Until)
		}
		lines = append(lines, pipeline.HomeLine{Text: fmt.Sprintf("%s, by <@%s>, %s", muteTarget(m.Kind, m.Target), m.By, until),
			Button: &pipeline.HomeButton{Label: "Lift", ActionID: ActionLiftMute, Value: m.Kind + " " + m.Target}})
	}
	return section(titleMutes, "None.", lines), nil
}

// muteTarget names what a mute silences.
func muteTarget(kind, target string) string {
	if kind == "user" {
		return "<@" + target + ">"
	}
	channel, root, _ := strings.Cut(target, ":")
	if root == "" {
		return "<#" + channel + ">"
	}
	return fmt.Sprintf("<%s|a thread> in <#%s>", permalink(channel, root), channel)
}

// where names a conversation: a channel's mention, or a DM.
func where(channel string) string {
	if strings.HasPrefix(channel, "D") {
		return "a DM"
	}
	return "<#" + channel + ">"
}

// permalink is a message's permalink; the platform redirects it to the
// workspace of whoever opens it.
func permalink(channel, ts string) string {
	return "https://slack.com/archives/" + channel + "/p" + strings.ReplaceAll(ts, ".", "")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// escape makes text safe in the platform's dialect: its own markup
// characters only.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// clip cuts s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func asUserError(err error, target **pipeline.UserError) bool { return errors.As(err, target) }
