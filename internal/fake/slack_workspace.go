package fake

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// A workspace of several apps: each app is its own Slack fake (its own
// tokens, bot user, socket), and what one posts in a channel the others
// receive over their sockets as the platform delivers another app's post
// to an app subscribed to the channel's messages: a message event with the
// poster's user (its bot user) and bot_id, no client_msg_id. A team of
// personas is tested this way (issue 38).

// Workspace joins apps into one workspace: every chat.postMessage of one
// of them in a channel (not a DM: the others are not in it) is delivered
// to each of the others, and kept in their conversations as it was
// delivered. The apps share one sequence of message ts, as one workspace
// does, so that no two posts of a channel share a ts. Call it before the
// apps are used; give each app its own BotToken, AppToken, BotUserID,
// BotID and AppID.
func Workspace(apps ...*Slack) {
	seq := new(atomic.Int64)
	for _, a := range apps {
		a.mu.Lock()
		a.others = nil
		for _, o := range apps {
			if o != a {
				a.others = append(a.others, o)
			}
		}
		a.tsSeq = seq
		a.mu.Unlock()
	}
}

// deliverToOthers sends a post of this app to the other apps of its
// workspace; nil when it has none.
func (s *Slack) deliverToOthers(c *slackCall, channel, ts, thread, text string) func() {
	s.mu.Lock()
	others := s.others
	s.mu.Unlock()
	if len(others) == 0 || strings.HasPrefix(channel, "D") {
		return nil
	}
	m := Message{TeamID: c.cfg.teamID, User: c.cfg.botUserID, BotID: c.cfg.botID, Channel: channel, TS: ts, ThreadTS: thread, Text: text}
	return func() {
		for _, o := range others {
			o.SendEvent(m.Payload())
		}
	}
}

// workspaceTS is the next ts of the workspace's shared sequence; ok is
// false for an app on its own. s.mu must be held.
func (s *Slack) workspaceTS() (string, bool) {
	if s.tsSeq == nil {
		return "", false
	}
	micros := s.tsSeq.Add(1) * 100
	return fmt.Sprintf("%d.%06d", 1700000000+micros/1e6, micros%1e6), true
}
