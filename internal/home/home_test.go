package home

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/memory"
	"github.com/persona-runtime/agent/internal/schedule"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// emptyStore has nothing: the tests below are about connections.
type emptyStore struct{}

func (emptyStore) ThreadsOf(context.Context, string, int) ([]store.PersonThread, error) {
	return nil, nil
}
func (emptyStore) Schedules(context.Context) ([]schedule.Schedule, error) { return nil, nil }
func (emptyStore) Schedule(context.Context, string) (schedule.Schedule, error) {
	return schedule.Schedule{}, schedule.ErrNotFound
}
func (emptyStore) MemoriesBy(context.Context, string) ([]memory.Memory, error) { return nil, nil }
func (emptyStore) Memory(context.Context, string) (memory.Memory, error) {
	return memory.Memory{}, memory.ErrNotFound
}
func (emptyStore) PendingApprovals(context.Context) ([]store.Approval, error) { return nil, nil }
func (emptyStore) ChannelModes(context.Context) ([]store.ChannelMode, error)  { return nil, nil }
func (emptyStore) Mutes(context.Context, time.Time) ([]store.Mute, error)     { return nil, nil }
func (emptyStore) RemoveIgnore(context.Context, string, string, time.Time) (bool, error) {
	return false, nil
}

// fakeConnections is what issue 36's connections would give: accounts by
// person; Disconnect forgets one.
type fakeConnections struct{ by map[string][]Connection }

func (f *fakeConnections) List(_ context.Context, user string) ([]Connection, error) {
	return f.by[user], nil
}
func (f *fakeConnections) Disconnect(_ context.Context, user, server string) (string, error) {
	var keep []Connection
	for _, c := range f.by[user] {
		if c.Server != server {
			keep = append(keep, c)
		}
	}
	f.by[user] = keep
	return "disconnected from " + server, nil
}

type published struct{ views map[string]pipeline.HomeView }

func (p *published) PublishHome(_ context.Context, user string, v pipeline.HomeView) error {
	p.views[user] = v
	return nil
}

func text(v pipeline.HomeView) string {
	var b strings.Builder
	b.WriteString(v.Notice + "\n")
	for _, s := range v.Sections {
		b.WriteString("## " + s.Title + "\n")
		for _, l := range s.Lines {
			b.WriteString(l.Text + "\n")
		}
	}
	return b.String()
}

// The connections section shows only with a Connections, each person
// their own accounts; Disconnect acts for who clicked, whoever's view it
// was, and the view is published again for them.
func TestConnections(t *testing.T) {
	conns := &fakeConnections{by: map[string][]Connection{
		"U0ALICE": {{Server: "github", Account: "alice@gh"}},
		"U0BOB":   {{Server: "github", Account: "bob@gh"}, {Server: "linear", Account: "bob@linear"}},
	}}
	pub := &published{views: map[string]pipeline.HomeView{}}
	h := &Home{Store: emptyStore{}, Access: func(u string) pipeline.Access { return pipeline.Access{UserID: u, Role: pipeline.RoleMember} },
		Chat: pub, Now: time.Now, Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	if err := h.Opened(ctx, "U0ALICE"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text(pub.views["U0ALICE"]), titleConnections) {
		t.Errorf("a connections section without Connections:\n%s", text(pub.views["U0ALICE"]))
	}
	h.Connections = conns
	if err := h.Opened(ctx, "U0ALICE"); err != nil {
		t.Fatal(err)
	}
	alice := text(pub.views["U0ALICE"])
	if !strings.Contains(alice, "github as alice@gh") || strings.Contains(alice, "bob@") {
		t.Errorf("alice's view:\n%s", alice)
	}
	// Alice's click names "linear", which only Bob has: it acts for Alice.
	if err := h.Click(ctx, "U0ALICE", ActionDisconnect, "linear"); err != nil {
		t.Fatal(err)
	}
	if len(conns.by["U0BOB"]) != 2 {
		t.Errorf("alice's click disconnected bob: %v", conns.by["U0BOB"])
	}
	if err := h.Click(ctx, "U0BOB", ActionDisconnect, "linear"); err != nil {
		t.Fatal(err)
	}
	bob := text(pub.views["U0BOB"])
	if !strings.HasPrefix(bob, "disconnected from linear\n") || strings.Contains(bob, "bob@linear") || !strings.Contains(bob, "bob@gh") {
		t.Errorf("bob's view after disconnecting:\n%s", bob)
	}
}
