package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// bookStore is a BookStore in memory; fail fails every call while set.
type bookStore struct {
	rows map[string]Schedule
	fail error
}

func (s *bookStore) CreateSchedule(_ context.Context, sc Schedule, max int) (Schedule, error) {
	if s.fail != nil {
		return Schedule{}, s.fail
	}
	if len(s.rows) >= max {
		return Schedule{}, LimitError(max)
	}
	s.rows[sc.ID] = sc
	return sc, nil
}

func (s *bookStore) Schedules(context.Context) ([]Schedule, error) {
	if s.fail != nil {
		return nil, s.fail
	}
	var out []Schedule
	for _, sc := range s.rows {
		out = append(out, sc)
	}
	return out, nil
}

func (s *bookStore) Schedule(_ context.Context, id string) (Schedule, error) {
	if s.fail != nil {
		return Schedule{}, s.fail
	}
	sc, ok := s.rows[id]
	if !ok {
		return Schedule{}, ErrNotFound
	}
	return sc, nil
}

func (s *bookStore) RemoveSchedule(_ context.Context, id string) error {
	if _, ok := s.rows[id]; !ok {
		return ErrNotFound
	}
	delete(s.rows, id)
	return nil
}

func (s *bookStore) ResumeSchedule(context.Context, string, string, time.Time) (bool, error) {
	return false, errors.New("not used")
}

// The tools act for the turn's sender in the turn's conversation, with
// the book's rules and texts: a refusal or a mistake is a one-line error
// result, a failure the call's error, a call outside a turn a refusal.
func TestTools(t *testing.T) {
	st := &bookStore{rows: map[string]Schedule{}}
	book := &Book{Store: st, Now: func() time.Time { return due }, NewID: func() string { return "saaaaaaab" }}
	reg := tools.NewRegistry()
	reg.Add(book.Tools()...)
	turn := func(user string, role pipeline.Role) context.Context {
		return tools.NewContextWithTurn(context.Background(), &pipeline.Turn{
			Event:  &pipeline.Event{ChannelID: "C1", TS: "1.0", ThreadTS: "1.0", UserID: user},
			Access: pipeline.Access{UserID: user, Role: role}})
	}
	mgrTurn := turn(mgr, pipeline.RoleManager)

	res, err := reg.Call(mgrTurn, ToolAdd, json.RawMessage(`{"when":"@daily","prompt":"p","target":"channel","tz":"Europe/Berlin","name":"n"}`))
	if err != nil || res.IsError || res.Text != "cron job created: saaaaaaab, next run 2026-01-06 00:00 Europe/Berlin (posts at the channel root)" {
		t.Fatalf("add: %+v %v", res, err)
	}
	if sc := st.rows["saaaaaaab"]; sc.Creator != mgr || sc.Channel != "C1" || sc.ThreadTS != "1.0" || sc.Name != "n" || sc.Target != TargetChannel {
		t.Errorf("stored %+v", sc)
	}
	res, err = reg.Call(mgrTurn, ToolList, nil)
	if err != nil || res.IsError || !strings.HasPrefix(res.Text, "Active cron jobs:\n- saaaaaaab `@daily` [channel]") {
		t.Fatalf("list: %+v %v", res, err)
	}
	res, err = reg.Call(turn(alice, pipeline.RoleMember), ToolList, nil)
	if err != nil || !res.IsError || res.Text != "only manager or approver can schedule work" {
		t.Fatalf("a member's list: %+v %v", res, err)
	}
	res, err = reg.Call(mgrTurn, ToolAdd, json.RawMessage(`{"when":"every day","prompt":"p"}`))
	if err != nil || !res.IsError || !strings.HasPrefix(res.Text, "invalid cron expression: ") {
		t.Fatalf("a bad when: %+v %v", res, err)
	}
	res, err = reg.Call(mgrTurn, ToolRemove, json.RawMessage(`{"id":"saaaaaaab"}`))
	if err != nil || res.IsError || res.Text != "cron job saaaaaaab removed" {
		t.Fatalf("remove: %+v %v", res, err)
	}
	failure := errors.New("list schedules: database is locked")
	st.fail = failure
	if _, err = reg.Call(mgrTurn, ToolList, nil); !errors.Is(err, failure) {
		t.Fatalf("a failed list: %v", err)
	}
	res, err = reg.Call(context.Background(), ToolAdd, json.RawMessage(`{"when":"@daily","prompt":"p"}`))
	if err != nil || !res.IsError || res.Text != "no chat conversation to schedule in" {
		t.Fatalf("no turn: %+v %v", res, err)
	}
	res, _ = reg.Call(mgrTurn, ToolAdd, json.RawMessage(`{"when":3}`))
	if !res.IsError || !strings.HasPrefix(res.Text, "invalid input: ") {
		t.Fatalf("bad input: %+v", res)
	}
}
