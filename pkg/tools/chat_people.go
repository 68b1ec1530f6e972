package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Profiles are cached for the process: a profile changes rarely, and a
// model that meets the same people in every thread would otherwise ask the
// platform for each of them each time. profileTTL bounds how stale a title
// or a time zone may be; profileCap bounds the memory (the people the
// persona meets, not the whole workspace: a profile is a few hundred bytes).
const (
	profileTTL = 5 * time.Minute
	profileCap = 1000
)

// profileCache is the zero-value-ready cache of profiles by user id.
type profileCache struct {
	mu sync.Mutex
	m  map[string]cachedProfile
}

type cachedProfile struct {
	p  pipeline.Profile
	at time.Time
}

func (pc *profileCache) get(id string, now time.Time) (pipeline.Profile, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e, ok := pc.m[id]
	if !ok || now.Sub(e.at) >= profileTTL || now.Before(e.at) {
		return pipeline.Profile{}, false
	}
	return e.p, true
}

// put keeps p; a full cache first drops what has expired, then, if still
// full, the oldest entry.
func (pc *profileCache) put(id string, p pipeline.Profile, now time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.m == nil {
		pc.m = map[string]cachedProfile{}
	}
	if _, ok := pc.m[id]; !ok && len(pc.m) >= profileCap {
		oldest := ""
		for k, e := range pc.m {
			if now.Sub(e.at) >= profileTTL {
				delete(pc.m, k)
			} else if oldest == "" || e.at.Before(pc.m[oldest].at) {
				oldest = k
			}
		}
		if len(pc.m) >= profileCap {
			delete(pc.m, oldest)
		}
	}
	pc.m[id] = cachedProfile{p: p, at: now}
}

func (pc *profileCache) len() int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return len(pc.m)
}

func (c *ChatServer) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// userID reads a user id as the model may write it: U…, <@U…> or
// <@U…|name>; ok is false for anything else.
func userID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if inner, ok := strings.CutPrefix(s, "<@"); ok {
		s, _, _ = strings.Cut(strings.TrimSuffix(inner, ">"), "|")
	}
	if len(s) < 2 || len(s) > 32 || (s[0] != 'U' && s[0] != 'W' && s[0] != 'B') {
		return "", false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return "", false
		}
	}
	return s, true
}

func (c *ChatServer) getUser(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		UserID string `json:"user_id"`
	}
	if err := decodeConfined(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	id, ok := userID(in.UserID)
	if !ok {
		return Errorf("user_id must be a user id like U0123ABCD"), nil
	}
	if _, refused := c.readTurn(ctx); refused != nil {
		return *refused, nil
	}
	now := c.now()
	p, cached := c.profiles.get(id, now)
	if !cached {
		var err error
		if p, err = c.Reader.UserProfile(ctx, id); err != nil {
			return c.readFailed(ctx, "user not looked up", err)
		}
		c.profiles.put(id, p, now)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "user <@%s>", id)
	field := func(name, v string) {
		if v = strings.TrimSpace(v); v != "" {
			fmt.Fprintf(&b, "\n%s: %s", name, personWrote(c.redact(v)))
		}
	}
	field("name", p.Name)
	field("real name", p.RealName)
	field("display name", p.DisplayName)
	field("title", p.Title)
	tz := p.TimeZone
	if p.TZLabel != "" {
		tz += " (" + p.TZLabel + ")"
	}
	field("time zone", tz)
	fmt.Fprintf(&b, "\nbot: %s", yesNo(p.IsBot))
	if p.Deleted {
		b.WriteString("\ndeactivated: yes")
	}
	if c.Self != nil && c.Self().UserID == id {
		b.WriteString("\nthis is you")
	} else if !p.IsBot && c.Roles != nil {
		fmt.Fprintf(&b, "\nrole to you: %s", pipeline.EnvelopeRole(string(c.Roles.RoleOf(id))))
	}
	return Result{Text: b.String()}, nil
}

func (c *ChatServer) channelInfo(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct{}
	if err := decodeConfined(input, &in); err != nil {
		return Errorf("%v", err), nil
	}
	t, refused := c.readTurn(ctx)
	if refused != nil {
		return *refused, nil
	}
	info, err := c.Reader.ConversationInfo(ctx, t.Event.ChannelID)
	if err != nil {
		return c.readFailed(ctx, "conversation not described", err)
	}
	var b strings.Builder
	kind := "public channel"
	switch {
	case info.IsIM:
		kind = "direct message"
		if info.User != "" {
			kind += " with <@" + info.User + ">"
		}
	case info.IsMPIM:
		kind = "group direct message"
	case info.IsPrivate:
		kind = "private channel"
	}
	fmt.Fprintf(&b, "this conversation: %s, a %s", t.Event.ChannelID, kind)
	field := func(name, v string) {
		if v = strings.TrimSpace(v); v != "" {
			fmt.Fprintf(&b, "\n%s: %s", name, personWrote(c.redact(v)))
		}
	}
	if info.Name != "" {
		field("name", "#"+info.Name)
	}
	field("topic", info.Topic)
	field("purpose", info.Purpose)
	if info.Members > 0 {
		fmt.Fprintf(&b, "\nmembers: %d", info.Members)
	}
	if !info.Created.IsZero() {
		field("created", info.Created.UTC().Format("2006-01-02"))
	}
	if info.Creator != "" {
		field("created by", "<@"+info.Creator+">")
	}
	if info.IsArchived {
		b.WriteString("\narchived: yes")
	}
	if t.Access.Layer != "" {
		fmt.Fprintf(&b, "\ntrust layer: %s", t.Access.Layer)
	}
	return Result{Text: b.String()}, nil
}

func (c *ChatServer) channelMembers(ctx context.Context, input json.RawMessage) (Result, error) {
	var in struct {
		Limit  int    `json:"limit"`
		Cursor string `json:"cursor"`
	}
	t, cur, refused := c.startPaged(ctx, input, &in, &in.Cursor, func(t *pipeline.Turn) string { return "members:" + t.Event.ChannelID })
	if refused != nil {
		return *refused, nil
	}
	members, next, err := c.Reader.ConversationMembers(ctx, t.Event.ChannelID, cur.platform, pageSize(in.Limit, membersDefault, membersMax))
	if err != nil {
		return c.readFailed(ctx, "members not listed", err)
	}
	self := ""
	if c.Self != nil {
		self = c.Self().UserID
	}
	var b strings.Builder
	b.WriteString("members of this conversation:\n")
	for _, id := range members[min(cur.skip, len(members)):] {
		switch {
		case id == self:
			fmt.Fprintf(&b, "<@%s> (you)\n", id)
		case c.Roles != nil:
			fmt.Fprintf(&b, "<@%s> %s\n", id, pipeline.EnvelopeRole(string(c.Roles.RoleOf(id))))
		default:
			fmt.Fprintf(&b, "<@%s>\n", id)
		}
	}
	if len(members) == 0 {
		b.WriteString("(none)\n")
	}
	if next != "" {
		next = readCursor{scope: cur.scope, platform: next}.String()
	}
	finish(&b, next, "that is all of them")
	return Result{Text: b.String()}, nil
}

// personWrote is a field a person wrote (a profile's names and title, a
// channel's topic and purpose) as a tool result shows it: on one line,
// escaped as a message is in its envelope (pipeline.EscapeEnvelopes), so
// that a title or a topic can neither open an envelope nor close one and
// speak as someone else.
func personWrote(v string) string {
	return pipeline.EscapeEnvelopes(oneLine(v))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
