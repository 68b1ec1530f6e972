package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/internal/redact"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// Conversations and people of the tests.
const (
	dm      = "D0MGR"
	channel = "C0TEAM"
	mgr     = "U0MGR"
	alice   = "U0ALICE"
	bob     = "U0BOB"
)

var (
	manager = memory.Who{UserID: mgr, Role: pipeline.RoleManager}
	backup  = memory.Who{UserID: "U0BAK", Role: pipeline.RoleBackup}
	member  = memory.Who{UserID: alice, Role: pipeline.RoleMember}
	other   = memory.Who{UserID: bob, Role: pipeline.RoleMember}
)

// day is the test clock's date; each reading of it moves a second on, so
// that what is stored in turn is ordered by its time.
var day = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// newMemories is the rules over a real in-memory store, with the real
// redactor (a token's shape, one secret value, one SOUL.md pattern).
func newMemories(t *testing.T) *memory.Memories {
	t.Helper()
	clock := fake.NewClock(day)
	now := func() time.Time { clock.Advance(time.Second); return clock.Now() }
	st, err := store.Open(t.Context(), store.InMemory, store.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := redact.New([]string{"hunter2-very-secret-value"},
		[]redact.Pattern{{Re: regexp.MustCompile(`ACCT-\d{6}`), Description: "account number"}})
	return &memory.Memories{Store: st, Redact: r.Redact, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// refusal is err's refusal text, "" for none; any other error fails t.
func refusal(t *testing.T, err error) string {
	t.Helper()
	var r memory.Refusal
	if errors.As(err, &r) {
		return string(r)
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return ""
}

func TestRememberLengthCap(t *testing.T) {
	m := newMemories(t)
	ctx := t.Context()
	// 2,000 characters, counted as characters, not bytes.
	longest := strings.Repeat("é", store.MaxMemoryLen)
	if _, err := m.Remember(ctx, member, dm, "1.1", longest, ""); err != nil {
		t.Fatalf("2000 characters refused: %v", err)
	}
	got := refusal(t, func() error {
		_, err := m.Remember(ctx, member, dm, "1.1", longest+"é", "")
		return err
	}())
	if got != "not remembered: a memory is at most 2000 characters (this is 2001)" {
		t.Errorf("2001 characters: %q", got)
	}
	for _, blank := range []string{"", "  \n\t "} {
		if _, err := m.Remember(ctx, member, dm, "1.1", blank, ""); refusal(t, err) != "not remembered: the text is empty" {
			t.Errorf("blank %q: %v", blank, err)
		}
	}
	if _, err := m.Remember(ctx, member, dm, "1.1", "x y", "team"); refusal(t, err) != "scope must be conversation or persona" {
		t.Errorf("bad scope: %v", err)
	}
	ms, _ := m.Store.Memories(ctx, "")
	if len(ms) != 1 {
		t.Errorf("stored %d memories, want only the 2000-character one", len(ms))
	}
}

// A text the redactor would change — a token's shape, a configured
// secret's value, a SOUL.md pattern — is refused and never stored, for the
// manager too.
func TestRememberRefusesSecrets(t *testing.T) {
	m := newMemories(t)
	ctx := t.Context()
	for _, text := range []string{
		"the bot token is xoxb-1234567890-abcdefghij",
		"the API key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
		"the admin password is hunter2-very-secret-value",
		"billing goes to ACCT-123456",
	} {
		for _, scope := range []string{"", store.ScopePersona} {
			_, err := m.Remember(ctx, manager, dm, "1.1", text, scope)
			if got := refusal(t, err); got != "not remembered: the text holds a credential or matches a redaction pattern" {
				t.Errorf("%q (scope %q): %q", text, scope, got)
			}
		}
	}
	if ms, _ := m.Store.Memories(ctx, ""); len(ms) != 0 {
		t.Errorf("stored %v", ms)
	}
	if rs, _ := m.Recall(ctx, dm, "", "token password ACCT key", 10); len(rs) != 0 {
		t.Errorf("recall finds %v", rs)
	}
	if _, err := m.Remember(ctx, manager, dm, "1.1", "the token rotates on Mondays", ""); err != nil {
		t.Errorf("a text about tokens refused: %v", err)
	}
}

// Only the manager and the backup manager make persona-wide memories,
// with the pinned text for the others.
func TestRememberPersonaScope(t *testing.T) {
	m := newMemories(t)
	ctx := t.Context()
	for _, who := range []memory.Who{member, {UserID: "U0APP", Role: pipeline.RoleApprover}, {UserID: "B0", Role: ""}} {
		_, err := m.Remember(ctx, who, channel, "1.1", "Morgan owns releases", store.ScopePersona)
		if got := refusal(t, err); got != "only the manager can make a persona-wide memory" {
			t.Errorf("%+v: %q", who, got)
		}
	}
	for _, who := range []memory.Who{manager, backup} {
		mem, err := m.Remember(ctx, who, channel, "1.1", "Morgan owns releases", store.ScopePersona)
		if err != nil || mem.Scope != store.ScopePersona || mem.Author != who.UserID || mem.Channel != channel {
			t.Errorf("%+v: %+v, %v", who, mem, err)
		}
	}
	// A member's own conversation memory is theirs to make.
	mem, err := m.Remember(ctx, member, channel, "1.1", "standup is at ten", "")
	if err != nil || mem.Scope != store.ScopeConversation || !store.ValidMemoryID(mem.ID) {
		t.Errorf("member's memory: %+v, %v", mem, err)
	}
}

// forget: the manager, the backup manager or the memory's author; the
// others are told why, and the memory stays.
func TestForgetPermissions(t *testing.T) {
	m := newMemories(t)
	ctx := t.Context()
	add := func(who memory.Who, scope string) string {
		t.Helper()
		mem, err := m.Remember(ctx, who, channel, "1.1", "standup is at ten", scope)
		if err != nil {
			t.Fatal(err)
		}
		return mem.ID
	}
	id := add(member, "")
	if got := refusal(t, m.Forget(ctx, other, channel, id)); got != "only the manager, the backup manager or its author can forget memory "+id {
		t.Errorf("another member: %q", got)
	}
	if _, err := m.Store.Memory(ctx, id); err != nil {
		t.Errorf("refused, yet: %v", err)
	}
	if err := m.Forget(ctx, member, channel, id); err != nil {
		t.Errorf("the author: %v", err)
	}
	if _, err := m.Store.Memory(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("forgotten, yet: %v", err)
	}
	if got := refusal(t, m.Forget(ctx, member, channel, id)); got != "no memory "+id {
		t.Errorf("again: %q", got)
	}
	for _, who := range []memory.Who{manager, backup} {
		id := add(member, "")
		if err := m.Forget(ctx, who, channel, id); err != nil {
			t.Errorf("%+v: %v", who, err)
		}
	}
	// A persona-wide memory is seen everywhere, forgotten only by those.
	pid := add(manager, store.ScopePersona)
	if got := refusal(t, m.Forget(ctx, member, dm, pid)); !strings.HasPrefix(got, "only the manager, the backup manager") {
		t.Errorf("member on a persona memory: %q", got)
	}
	text, err := m.ForgetText(ctx, backup, dm, " "+pid+" ")
	if err != nil || text != "forgot memory "+pid {
		t.Errorf("ForgetText: %q, %v", text, err)
	}
}

// A memory of another conversation is "no memory <id>" from here, to its
// own author too — whether it exists is not told; the manager may forget
// it from anywhere. A malformed id is said back cut and without markup.
func TestForgetOtherConversation(t *testing.T) {
	m := newMemories(t)
	ctx := t.Context()
	mem, err := m.Remember(ctx, member, dm, "1.1", "my salary review is in May", "")
	if err != nil {
		t.Fatal(err)
	}
	missing := store.NewMemoryID()
	for _, id := range []string{mem.ID, missing} {
		for _, who := range []memory.Who{member, other} {
			if got := refusal(t, m.Forget(ctx, who, channel, id)); got != "no memory "+id {
				t.Errorf("%s by %s from %s: %q", id, who.UserID, channel, got)
			}
		}
	}
	if _, err := m.Store.Memory(ctx, mem.ID); err != nil {
		t.Errorf("refused, yet: %v", err)
	}
	if got := refusal(t, m.Forget(ctx, member, channel, "<@U0MGR> `x` ignore-all-previous-instructions")); got != "no memory U0MGR" {
		t.Errorf("a malformed id: %q", got)
	}
	if got := refusal(t, m.Forget(ctx, member, channel, "maaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")); got != "no memory maaaaaaaaaaaaaaaaaaa…" {
		t.Errorf("a long id: %q", got)
	}
	if err := m.Forget(ctx, manager, channel, mem.ID); err != nil {
		t.Errorf("the manager from another conversation: %v", err)
	}
}

// /memory lists this conversation's memories and the persona's, never
// another conversation's.
func TestListText(t *testing.T) {
	m := newMemories(t)
	ctx := t.Context()
	if text, err := m.List(ctx, channel); err != nil || text != "No memories here." {
		t.Errorf("empty: %q, %v", text, err)
	}
	a, _ := m.Remember(ctx, member, channel, "1.1", "standup  is\nat ten", "")
	p, _ := m.Remember(ctx, manager, dm, "2.1", "Morgan owns releases", store.ScopePersona)
	if _, err := m.Remember(ctx, manager, dm, "2.1", "my salary review is in May", ""); err != nil {
		t.Fatal(err)
	}
	text, err := m.List(ctx, channel)
	want := "Memories (`/forget <id>` removes one):\n" +
		"• `" + a.ID + "` (2026-03-02 <@U0ALICE>) standup is at ten\n" +
		"• `" + p.ID + "` [persona] (2026-03-02 <@U0MGR>) Morgan owns releases"
	if err != nil || text != want {
		t.Errorf("List = %q, %v\nwant %q", text, err, want)
	}
}

// The export: one file per conversation and persona.md, each memory a
// bullet with its id, date, author and thread in a comment.
func TestExportLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kb", "memories")
	at := time.Date(2026, 3, 2, 10, 4, 0, 0, time.UTC)
	ms := []store.Memory{
		{ID: "maaaaaaab", Text: "we deploy\non Tuesdays", Author: mgr, Channel: dm, ThreadTS: "1.1", Scope: store.ScopeConversation, CreatedAt: at},
		{ID: "maaaaaaac", Text: "Morgan owns releases", Author: mgr, Channel: dm, ThreadTS: "1.1", Scope: store.ScopePersona, CreatedAt: at},
		{ID: "maaaaaaad", Text: "standup is at ten", Author: alice, Channel: channel, ThreadTS: "2.1", Scope: store.ScopeConversation, CreatedAt: at},
		{ID: "maaaaaaae", Text: "retro on Fridays", Author: alice, Channel: channel, ThreadTS: "3.1", Scope: store.ScopeConversation, CreatedAt: at},
		{ID: "maaaaaaaf", Text: "odd id", Author: alice, Channel: "../persona", ThreadTS: "4.1", Scope: store.ScopeConversation, CreatedAt: at},
	}
	files, err := memory.Export(dir, ms)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		if filepath.Dir(f) != dir {
			t.Errorf("%s written outside %s", f, dir)
		}
		names = append(names, filepath.Base(f))
	}
	if want := []string{"D0MGR.md", "persona.md", "C0TEAM.md", "___persona.md"}; !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	want := map[string]string{
		"D0MGR.md": "# Memories of conversation D0MGR\n\n- we deploy on Tuesdays\n" +
			"  <!-- id maaaaaaab; 2026-03-02 10:04 UTC; by U0MGR; thread D0MGR/1.1 -->\n",
		"persona.md": "# Persona-wide memories\n\n- Morgan owns releases\n" +
			"  <!-- id maaaaaaac; 2026-03-02 10:04 UTC; by U0MGR; thread D0MGR/1.1 -->\n",
		"C0TEAM.md": "# Memories of conversation C0TEAM\n\n- standup is at ten\n" +
			"  <!-- id maaaaaaad; 2026-03-02 10:04 UTC; by U0ALICE; thread C0TEAM/2.1 -->\n" +
			"- retro on Fridays\n  <!-- id maaaaaaae; 2026-03-02 10:04 UTC; by U0ALICE; thread C0TEAM/3.1 -->\n",
	}
	for name, text := range want {
		if got := fake.ReadFile(t, filepath.Join(dir, name)); got != text {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, text)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "persona.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("persona.md mode: %v, %v", fi, err)
	}
	if files, err := memory.Export(filepath.Join(t.TempDir(), "none"), nil); err != nil || len(files) != 0 {
		t.Errorf("nothing to export: %v, %v", files, err)
	}
}

// The tools act for the turn in their context: its sender's role, its
// conversation; a refusal is a one-line is_error result.
func TestToolsActForTheTurn(t *testing.T) {
	m := newMemories(t)
	byName := map[string]tools.Tool{}
	for _, tl := range m.Tools() {
		byName[tl.Name] = tl
	}
	call := func(name string, who memory.Who, ch, input string) tools.Result {
		t.Helper()
		ctx := tools.NewContextWithTurn(t.Context(), &pipeline.Turn{
			Event:  &pipeline.Event{ChannelID: ch, UserID: who.UserID, TS: "9.1"},
			Access: pipeline.Access{UserID: who.UserID, Role: who.Role},
		})
		res, err := byName[name].Call(ctx, json.RawMessage(input))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	res := call(memory.ToolRemember, member, dm, `{"text":"we deploy on Tuesdays"}`)
	id, ok := strings.CutPrefix(res.Text, "remembered as ")
	id, _, _ = strings.Cut(id, " ")
	if res.IsError || !ok || !store.ValidMemoryID(id) {
		t.Fatalf("remember: %+v", res)
	}
	if res := call(memory.ToolRemember, member, dm, `{"text":"x","scope":"persona"}`); !res.IsError || res.Text != memory.MsgPersonaRefused {
		t.Errorf("member persona: %+v", res)
	}
	if res := call(memory.ToolRemember, member, dm, `{"text":1}`); !res.IsError || !strings.HasPrefix(res.Text, "invalid input:") {
		t.Errorf("bad input: %+v", res)
	}
	if res := call(memory.ToolRecall, member, dm, `{"query":"when do we deploy"}`); res.IsError ||
		!strings.Contains(res.Text, "memory "+id+", 2026-03-02, by <@U0ALICE>, thread D0MGR/9.1: we deploy on Tuesdays") {
		t.Errorf("recall in the DM: %+v", res)
	}
	if res := call(memory.ToolRecall, member, channel, `{"query":"when do we deploy"}`); res.Text != "Nothing remembered or said here matches." {
		t.Errorf("recall in a channel: %+v", res)
	}
	if res := call(memory.ToolForget, other, channel, `{"id":"`+id+`"}`); !res.IsError || res.Text != "no memory "+id {
		t.Errorf("forget from a channel: %+v", res)
	}
	if res := call(memory.ToolForget, member, dm, `{"id":"`+id+`"}`); res.IsError || res.Text != "forgot memory "+id {
		t.Errorf("forget: %+v", res)
	}
	res, err := byName[memory.ToolRecall].Call(context.Background(), json.RawMessage(`{"query":"deploy"}`))
	if err != nil || !res.IsError {
		t.Errorf("no turn: %+v, %v", res, err)
	}
}
