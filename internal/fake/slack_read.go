package fake

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The workspace the fake reads back: the messages of its conversations
// (every message event sent over the socket, the messages of AddHistory,
// the bot's posts), the people and conversations it knows, and the bot's
// reactions. conversations.replies, conversations.history, users.info,
// conversations.info, conversations.members, reactions.add and
// reactions.remove answer from it, in the platform's shapes.

// slackScopes are the scopes the platform names as needed when it
// answers a method missing_scope (its "needed" field).
var slackScopes = map[string]string{
	"conversations.history": "channels:history,groups:history,mpim:history,im:history",
	"conversations.replies": "channels:history,groups:history,mpim:history,im:history",
	"conversations.info":    "channels:read,groups:read,mpim:read,im:read",
	"conversations.members": "channels:read,groups:read,mpim:read,im:read",
	"users.info":            "users:read",
	"reactions.add":         "reactions:write",
	"reactions.remove":      "reactions:write",
	"chat.postMessage":      "chat:write",
}

// slackWriteMethodError answers code for c's method; missing_scope names
// the scopes needed and those the token has, as the platform does.
func slackWriteMethodError(w http.ResponseWriter, c *slackCall, code string) {
	if code != "missing_scope" {
		slackWriteError(w, code)
		return
	}
	slackWriteJSON(w, map[string]any{"ok": false, "error": code, "needed": slackScopes[c.method],
		"provided": strings.Join(c.cfg.scopes, ",")})
}

// Person is a member of the workspace: users.info answers their profile
// (email and phone included, as the platform does to a token with
// users:read.email). Unknown U… ids get a made-up profile.
type Person struct {
	ID          string
	Name        string // the handle; default: the id in lower case
	RealName    string
	DisplayName string
	Title       string
	Email       string
	Phone       string
	TZ          string // default "UTC"
	TZLabel     string
	IsBot       bool
	Deleted     bool
}

// Conversation is a channel, private channel or DM: conversations.info
// and conversations.members answer it. Unknown C…, G… and D… ids get a
// made-up one whose members are the bot and whoever posted in it.
type Conversation struct {
	ID       string
	Name     string
	Topic    string
	Purpose  string
	Creator  string
	Members  []string
	User     string // the other person of a DM
	Archived bool
}

// slackStored is a person's message in a conversation, as the platform
// keeps it.
type slackStored struct {
	ts, thread string
	wire       map[string]any
}

// AddPerson makes the fake know p (users.info).
func (s *Slack) AddPerson(p Person) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.people == nil {
		s.people = map[string]Person{}
	}
	s.people[p.ID] = p
}

// AddConversation makes the fake know c (conversations.info, .members).
func (s *Slack) AddConversation(c Conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.convs == nil {
		s.convs = map[string]Conversation{}
	}
	c.Members = slices.Clone(c.Members)
	s.convs[c.ID] = c
}

// AddHistory stores messages posted before the test, as if delivered
// earlier: conversations.history and conversations.replies return them. A
// message without a ts gets a fresh one; the ts are returned in order.
func (s *Slack) AddHistory(ms ...Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		if m.TS == "" {
			m.TS = slackPayloadTS()
		}
		out[i] = m.TS
		ev := m.inner("message")
		s.mu.Lock()
		s.storeMessage(m.Channel, ev)
		s.notify()
		s.mu.Unlock()
	}
	return out
}

// AddMessage records m in its channel as if it had been posted, without
// sending its event: a thread's earlier messages, said where the bot was
// not listening. Messages sent with Send (SendEvent, SendOn) are recorded
// already.
func (s *Slack) AddMessage(m Message) {
	s.AddHistory(m)
}

// hiddenSubtypes are message events that say something about another
// message (an edit, a deletion, a reply count) rather than being one.
var hiddenSubtypes = map[string]bool{"message_changed": true, "message_deleted": true, "message_replied": true}

// Reactions returns the names of the bot's reactions on the message at ts
// in channel, in the order they were added.
func (s *Slack) Reactions(channel, ts string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reactions[channel+"/"+ts])
}

// recordDelivered stores the message of an events_api payload sent over
// the socket: what the platform delivers is in the conversation.
func (s *Slack) recordDelivered(raw json.RawMessage) {
	var outer struct {
		Event map[string]any `json:"event"`
	}
	if json.Unmarshal(raw, &outer) != nil || outer.Event == nil {
		return
	}
	ev := outer.Event
	typ, _ := ev["type"].(string)
	sub, _ := ev["subtype"].(string)
	channel, _ := ev["channel"].(string)
	if (typ != "message" && typ != "app_mention") || hiddenSubtypes[sub] || channel == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeMessage(channel, ev)
}

// storeMessage keeps a message event's message (once per ts) as
// conversations.history shows it; s.mu must be held.
func (s *Slack) storeMessage(channel string, ev map[string]any) {
	ts, _ := ev["ts"].(string)
	if ts == "" {
		return
	}
	if s.history == nil {
		s.history = map[string][]slackStored{}
	}
	for _, m := range s.history[channel] {
		if m.ts == ts {
			return // an app_mention's message twin
		}
	}
	wire := maps.Clone(ev)
	wire["type"] = "message"
	for _, k := range []string{"channel", "channel_type", "event_ts"} {
		delete(wire, k)
	}
	thread, _ := wire["thread_ts"].(string)
	s.history[channel] = append(s.history[channel], slackStored{ts: ts, thread: thread, wire: wire})
}

// conversation is every message of channel, people's and the bot's, oldest
// first; s.mu must be held.
func (s *Slack) conversation(c *slackCall, channel string, meta bool) []slackStored {
	posted := map[string]bool{}
	for _, p := range s.posts {
		if p.Channel == channel {
			posted[p.TS] = true
		}
	}
	var out []slackStored
	for _, m := range s.history[channel] {
		if !posted[m.ts] { // an echoed post (EchoPosts) is the post itself
			out = append(out, m)
		}
	}
	for _, p := range s.posts {
		if p.Channel != channel {
			continue
		}
		m := map[string]any{"type": "message", "text": p.Text, "user": c.cfg.botUserID, "bot_id": c.cfg.botID,
			"app_id": c.cfg.appID, "ts": p.TS}
		if p.ThreadTS != "" {
			m["thread_ts"] = p.ThreadTS
		}
		if md := p.Params.Get("metadata"); meta && md != "" {
			m["metadata"] = json.RawMessage(md)
		}
		out = append(out, slackStored{ts: p.TS, thread: p.ThreadTS, wire: m})
	}
	slices.SortStableFunc(out, func(a, b slackStored) int { return slackCompareTS(a.ts, b.ts) })
	return out
}

// slackCompareTS orders two message ts ("1700000000.000100") by time.
func slackCompareTS(a, b string) int {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	switch {
	case ai != bi:
		return compareInt(ai, bi)
	}
	af, bf = af+strings.Repeat("0", max(0, 6-len(af))), bf+strings.Repeat("0", max(0, 6-len(bf)))
	return strings.Compare(af, bf)
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// slackCursor is a cursor as the platform writes them: base64 of
// "next_ts:<ts>" for messages, of "{user_id: <id>}" for members.
func slackCursor(prefix, v string) string {
	return base64.StdEncoding.EncodeToString([]byte(prefix + v))
}

// slackFromCursor reads back a cursor of slackCursor; ok is false for a
// cursor the fake did not write (the platform answers invalid_cursor).
func slackFromCursor(prefix, cursor string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	return strings.CutPrefix(string(b), prefix)
}

// slackLimit is a call's limit parameter, def when absent.
func slackLimit(c *slackCall, def int) int {
	if n, err := strconv.Atoi(c.params.Get("limit")); err == nil && n > 0 {
		return n
	}
	return def
}

// slackPage cuts msgs at the message cursor names (or the start), limit
// long, and returns the page and the next cursor ("" at the end).
func slackPage(msgs []slackStored, cursor string, limit int) ([]map[string]any, string, string) {
	start := 0
	if cursor != "" {
		ts, ok := slackFromCursor("next_ts:", cursor)
		if !ok {
			return nil, "", "invalid_cursor"
		}
		start = slices.IndexFunc(msgs, func(m slackStored) bool { return m.ts == ts })
		if start < 0 {
			return nil, "", "invalid_cursor"
		}
	}
	end := min(start+limit, len(msgs))
	page := make([]map[string]any, 0, end-start)
	for _, m := range msgs[start:end] {
		page = append(page, m.wire)
	}
	next := ""
	if end < len(msgs) {
		next = slackCursor("next_ts:", msgs[end].ts)
	}
	return page, next, ""
}

// conversationsReplies answers a thread, oldest first, in pages: the
// first starts with the root whatever the bounds (which it always says
// is one), then the replies between oldest and latest (both included
// with inclusive, else excluded); later pages do not repeat the root.
func (s *Slack) conversationsReplies(c *slackCall) (map[string]any, string, func()) {
	channel, root := c.params.Get("channel"), c.params.Get("ts")
	if channel == "" {
		return nil, "channel_not_found", nil
	}
	if root == "" {
		return nil, "thread_not_found", nil
	}
	meta := c.params.Get("include_all_metadata") == "1" || c.params.Get("include_all_metadata") == "true"
	inclusive := c.params.Get("inclusive") == "1" || c.params.Get("inclusive") == "true"
	oldest, latest := c.params.Get("oldest"), c.params.Get("latest")
	within := func(ts string) bool {
		lo, hi := slackCompareTS(ts, oldest), slackCompareTS(ts, latest)
		return (oldest == "" || lo > 0 || inclusive && lo == 0) && (latest == "" || hi < 0 || inclusive && hi == 0)
	}
	cursor := c.params.Get("cursor")
	s.mu.Lock()
	var thread []slackStored
	for _, m := range s.conversation(c, channel, meta) {
		switch {
		case m.ts == root && cursor == "":
			if m.wire["thread_ts"] == nil {
				m.wire = maps.Clone(m.wire)
				m.wire["thread_ts"] = root // the root of a thread says so when read back
			}
			thread = append(thread, m)
		case m.ts != root && m.thread == root && within(m.ts):
			thread = append(thread, m)
		}
	}
	s.mu.Unlock()
	page, next, code := slackPage(thread, cursor, slackLimit(c, 1000))
	if code != "" {
		return nil, code, nil
	}
	return map[string]any{"messages": page, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}}, "", nil
}

// conversationsHistory answers a conversation's top-level messages,
// newest first, after oldest (exclusive unless inclusive=1), in pages;
// a thread's root carries its reply_count.
func (s *Slack) conversationsHistory(c *slackCall) (map[string]any, string, func()) {
	channel, oldest := c.params.Get("channel"), c.params.Get("oldest")
	if channel == "" {
		return nil, "channel_not_found", nil
	}
	inclusive := c.params.Get("inclusive") == "1" || c.params.Get("inclusive") == "true"
	s.mu.Lock()
	all := s.conversation(c, channel, false)
	s.mu.Unlock()
	replies := map[string]int{}
	for _, m := range all {
		if m.thread != "" && m.thread != m.ts {
			replies[m.thread]++
		}
	}
	var top []slackStored
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if m.thread != "" && m.thread != m.ts {
			continue
		}
		if oldest != "" {
			if d := slackCompareTS(m.ts, oldest); d < 0 || d == 0 && !inclusive {
				continue
			}
		}
		if n := replies[m.ts]; n > 0 {
			m.wire = maps.Clone(m.wire)
			m.wire["thread_ts"], m.wire["reply_count"] = m.ts, n
		}
		top = append(top, m)
	}
	page, next, code := slackPage(top, c.params.Get("cursor"), slackLimit(c, 100))
	if code != "" {
		return nil, code, nil
	}
	return map[string]any{"messages": page, "has_more": next != "", "pin_count": 0,
		"response_metadata": map[string]any{"next_cursor": next}}, "", nil
}

// usersInfo answers a person the fake knows, or a made-up profile for any
// other U… or W… id.
func (s *Slack) usersInfo(c *slackCall) (map[string]any, string, func()) {
	id := c.params.Get("user")
	s.mu.Lock()
	p, known := s.people[id]
	s.mu.Unlock()
	if !known {
		if !strings.HasPrefix(id, "U") && !strings.HasPrefix(id, "W") {
			return nil, "user_not_found", nil
		}
		p = Person{ID: id, RealName: "User " + id, IsBot: id == c.cfg.botUserID}
	}
	name := slackOr(p.Name, strings.ToLower(p.ID))
	tz := slackOr(p.TZ, "UTC")
	profile := map[string]any{"real_name": p.RealName, "real_name_normalized": p.RealName,
		"display_name": p.DisplayName, "display_name_normalized": p.DisplayName, "title": p.Title,
		"avatar_hash": "g0fake", "status_text": "", "status_emoji": "", "team": c.cfg.teamID}
	if p.Email != "" {
		profile["email"] = p.Email
	}
	if p.Phone != "" {
		profile["phone"] = p.Phone
	}
	return map[string]any{"user": map[string]any{
		"id": p.ID, "team_id": c.cfg.teamID, "name": name, "deleted": p.Deleted, "color": "9f69e7",
		"real_name": p.RealName, "tz": tz, "tz_label": slackOr(p.TZLabel, "Coordinated Universal Time"), "tz_offset": 0,
		"profile": profile, "is_admin": false, "is_owner": false, "is_primary_owner": false, "is_restricted": false,
		"is_ultra_restricted": false, "is_bot": p.IsBot, "is_app_user": false, "updated": 1600000000,
	}}, "", nil
}

// conversationOf is the conversation the fake knows as id, or a made-up
// one; ok is false for an id no conversation can have. s.mu must be held.
func (s *Slack) conversationOf(c *slackCall, id string) (Conversation, bool) {
	if conv, ok := s.convs[id]; ok {
		return conv, true
	}
	if id == "" || !strings.ContainsAny(id[:1], "CDG") {
		return Conversation{}, false
	}
	conv := Conversation{ID: id, Members: []string{c.cfg.botUserID}}
	if !strings.HasPrefix(id, "D") {
		conv.Name = strings.ToLower(id)
	}
	for _, m := range s.history[id] {
		if u, _ := m.wire["user"].(string); u != "" && !slices.Contains(conv.Members, u) {
			conv.Members = append(conv.Members, u)
			if strings.HasPrefix(id, "D") && conv.User == "" {
				conv.User = u
			}
		}
	}
	return conv, true
}

func (s *Slack) conversationsInfo(c *slackCall) (map[string]any, string, func()) {
	id := c.params.Get("channel")
	s.mu.Lock()
	conv, ok := s.conversationOf(c, id)
	s.mu.Unlock()
	if !ok {
		return nil, "channel_not_found", nil
	}
	if strings.HasPrefix(id, "D") {
		return map[string]any{"channel": map[string]any{
			"id": id, "created": 1600000000, "is_archived": conv.Archived, "is_im": true, "is_org_shared": false,
			"context_team_id": c.cfg.teamID, "updated": 1600000000000, "user": conv.User, "last_read": "0000000000.000000",
			"latest": nil, "unread_count": 0, "unread_count_display": 0, "is_open": true, "priority": 0,
		}}, "", nil
	}
	private := strings.HasPrefix(id, "G")
	ch := map[string]any{
		"id": id, "name": conv.Name, "is_channel": !private, "is_group": private, "is_im": false, "is_mpim": false,
		"is_private": private, "created": 1600000000, "is_archived": conv.Archived, "is_general": false, "unlinked": 0,
		"name_normalized": conv.Name, "is_shared": false, "is_org_shared": false, "is_pending_ext_shared": false,
		"pending_shared": []string{}, "context_team_id": c.cfg.teamID, "updated": 1600000000000,
		"parent_conversation": nil, "creator": conv.Creator, "is_ext_shared": false,
		"shared_team_ids": []string{c.cfg.teamID}, "pending_connected_team_ids": []string{}, "is_member": true,
		"topic":          map[string]any{"value": conv.Topic, "creator": conv.Creator, "last_set": 1600000000},
		"purpose":        map[string]any{"value": conv.Purpose, "creator": conv.Creator, "last_set": 1600000000},
		"previous_names": []string{},
	}
	if c.params.Get("include_num_members") == "true" || c.params.Get("include_num_members") == "1" {
		ch["num_members"] = len(conv.Members)
	}
	return map[string]any{"channel": ch}, "", nil
}

func (s *Slack) conversationsMembers(c *slackCall) (map[string]any, string, func()) {
	id := c.params.Get("channel")
	s.mu.Lock()
	conv, ok := s.conversationOf(c, id)
	s.mu.Unlock()
	if !ok {
		return nil, "channel_not_found", nil
	}
	start := 0
	if cur := c.params.Get("cursor"); cur != "" {
		user, ok := slackFromCursor("{user_id: ", cur)
		if start = slices.Index(conv.Members, strings.TrimSuffix(user, "}")); !ok || start < 0 {
			return nil, "invalid_cursor", nil
		}
	}
	end := min(start+slackLimit(c, 100), len(conv.Members))
	next := ""
	if end < len(conv.Members) {
		next = slackCursor("{user_id: ", conv.Members[end]+"}")
	}
	return map[string]any{"members": slices.Clone(conv.Members[start:end]),
		"response_metadata": map[string]any{"next_cursor": next}}, "", nil
}

// reactionsAdd adds the bot's reaction to a message of the conversation,
// refusing what the platform refuses.
func (s *Slack) reactionsAdd(c *slackCall) (map[string]any, string, func()) {
	return s.reaction(c, true)
}

func (s *Slack) reactionsRemove(c *slackCall) (map[string]any, string, func()) {
	return s.reaction(c, false)
}

func (s *Slack) reaction(c *slackCall, add bool) (map[string]any, string, func()) {
	channel, ts, name := c.params.Get("channel"), c.params.Get("timestamp"), c.params.Get("name")
	switch {
	case channel == "" || ts == "":
		return nil, "no_item_specified", nil
	case name == "" || strings.ContainsAny(name, ": "):
		return nil, "invalid_name", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, m := range s.conversation(c, channel, false) {
		found = found || m.ts == ts
	}
	if !found {
		return nil, "message_not_found", nil
	}
	key := channel + "/" + ts
	has := slices.Contains(s.reactions[key], name)
	switch {
	case add && has:
		return nil, "already_reacted", nil
	case !add && !has:
		return nil, "no_reaction", nil
	}
	if s.reactions == nil {
		s.reactions = map[string][]string{}
	}
	if add {
		s.reactions[key] = append(s.reactions[key], name)
	} else {
		s.reactions[key] = slices.DeleteFunc(s.reactions[key], func(n string) bool { return n == name })
	}
	s.notify()
	return nil, "", nil
}
