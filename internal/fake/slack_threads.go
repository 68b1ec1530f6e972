package fake

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A thread's messages as conversations.replies reads them back: the bot's
// posts (postMessage), and what people and other bots said, which the
// fake learns from the message events it sends over the socket (the
// platform has what it delivers) or from AddMessage.

// slackRepliesLimit is the page size of conversations.replies when the
// call names none (the platform's documented default is 1000 at most;
// a smaller one makes paging show in tests).
const slackRepliesLimit = 100

// hiddenSubtypes are message events that say something about another
// message (an edit, a deletion, a reply count) rather than being one.
var hiddenSubtypes = map[string]bool{"message_changed": true, "message_deleted": true, "message_replied": true}

// AddMessage records m in its channel as if it had been posted, without
// sending its event: a thread's earlier messages, said where the bot was
// not listening. Messages sent with Send (SendEvent, SendOn) are recorded
// already.
func (s *Slack) AddMessage(m Message) {
	ev := m.inner("message")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keepInnerLocked(ev)
}

// keepMessageLocked records the message an events_api payload carries, if
// it carries one; s.mu must be held.
func (s *Slack) keepMessageLocked(raw json.RawMessage) {
	var p struct {
		Type  string         `json:"type"`
		Event map[string]any `json:"event"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Type != "event_callback" || p.Event == nil {
		return
	}
	if typ, _ := p.Event["type"].(string); typ != "message" {
		return // an app_mention is the message event's twin
	}
	s.keepInnerLocked(p.Event)
}

// keepInnerLocked records a message event's inner event once per channel
// and ts (a retry carries the same); s.mu must be held.
func (s *Slack) keepInnerLocked(ev map[string]any) {
	sub, _ := ev["subtype"].(string)
	channel, _ := ev["channel"].(string)
	ts, _ := ev["ts"].(string)
	if hiddenSubtypes[sub] || channel == "" || ts == "" {
		return
	}
	for _, m := range s.said {
		if m["channel"] == channel && m["ts"] == ts {
			return
		}
	}
	m := maps.Clone(ev)
	for _, k := range []string{"event_ts", "channel_type", "client_msg_id", "parent_user_id"} {
		delete(m, k)
	}
	s.said = append(s.said, m)
}

// conversationsReplies answers a thread's messages, oldest first: the
// root first on the first page whatever the bounds, then the replies
// between oldest and latest (both included with inclusive, else
// excluded), limit a page, with a cursor to the next page. The bot's
// posts carry their metadata when include_all_metadata is set.
func (s *Slack) conversationsReplies(c *slackCall) (map[string]any, string, func()) {
	channel, root := c.params.Get("channel"), c.params.Get("ts")
	if channel == "" {
		return nil, "channel_not_found", nil
	}
	if root == "" {
		return nil, "thread_not_found", nil
	}
	limit := slackRepliesLimit
	if l := c.params.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return nil, "invalid_limit", nil
		}
		limit = min(n, 1000)
	}
	start := ""
	if cur := c.params.Get("cursor"); cur != "" {
		b, err := base64.StdEncoding.DecodeString(cur)
		next, ok := strings.CutPrefix(string(b), "next_ts:")
		if err != nil || !ok {
			return nil, "invalid_cursor", nil
		}
		start = next
	}
	inclusive := c.params.Get("inclusive") == "1" || c.params.Get("inclusive") == "true"
	oldest, latest := c.params.Get("oldest"), c.params.Get("latest")
	within := func(ts string) bool {
		lo, hi := slackCompareTS(ts, oldest), slackCompareTS(ts, latest)
		return (oldest == "" || lo > 0 || inclusive && lo == 0) && (latest == "" || hi < 0 || inclusive && hi == 0)
	}
	thread := s.threadMessages(c, channel, root)
	var all []map[string]any
	for _, m := range thread {
		ts := m["ts"].(string)
		if ts == root && start == "" || ts != root && within(ts) {
			all = append(all, m)
		}
	}
	i := 0
	if start != "" {
		i = slices.IndexFunc(all, func(m map[string]any) bool { return slackCompareTS(m["ts"].(string), start) >= 0 })
		if i < 0 {
			i = len(all)
		}
	}
	page := all[i:min(i+limit, len(all))]
	next := ""
	if i+limit < len(all) {
		next = base64.StdEncoding.EncodeToString([]byte("next_ts:" + all[i+limit]["ts"].(string)))
	}
	if page == nil {
		page = []map[string]any{}
	}
	return map[string]any{"messages": page, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}}, "", nil
}

// threadMessages is every message of the thread at root in channel, the
// root first, the bot's posts among the others, oldest first.
func (s *Slack) threadMessages(c *slackCall, channel, root string) []map[string]any {
	meta := c.params.Get("include_all_metadata") == "1" || c.params.Get("include_all_metadata") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	var msgs []map[string]any
	posted := map[string]bool{} // an echoed post (EchoPosts) is the post itself
	for _, p := range s.posts {
		if p.Channel != channel || (p.ThreadTS != root && p.TS != root) {
			continue
		}
		posted[p.TS] = true
		m := map[string]any{"type": "message", "text": p.Text, "user": c.cfg.botUserID, "bot_id": c.cfg.botID,
			"ts": p.TS, "thread_ts": root}
		if md := p.Params.Get("metadata"); meta && md != "" {
			m["metadata"] = json.RawMessage(md)
		}
		msgs = append(msgs, m)
	}
	for _, m := range s.said {
		ts, _ := m["ts"].(string)
		if thread, _ := m["thread_ts"].(string); m["channel"] == channel && (ts == root || thread == root) && !posted[ts] {
			m = maps.Clone(m)
			if ts == root {
				m["thread_ts"] = root // the root of a thread says so when read back
			}
			msgs = append(msgs, m)
		}
	}
	slices.SortStableFunc(msgs, func(a, b map[string]any) int { return slackCompareTS(a["ts"].(string), b["ts"].(string)) })
	return msgs
}

// slackCompareTS orders two message timestamps as numbers: seconds, then
// the decimal fraction.
func slackCompareTS(a, b string) int {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		if ai < bi {
			return -1
		}
		return 1
	}
	w := max(len(af), len(bf))
	return strings.Compare(af+strings.Repeat("0", w-len(af)), bf+strings.Repeat("0", w-len(bf)))
}
