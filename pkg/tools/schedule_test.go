package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// bookFunc is a ScheduleBook that records what it was asked and answers
// with answer.
type bookFunc struct {
	got    []string
	answer func() (string, error)
}

func (b *bookFunc) Add(_ context.Context, a pipeline.Access, ev *pipeline.Event, r tools.ScheduleRequest) (string, error) {
	b.got = append(b.got, "add "+a.UserID+" "+ev.ChannelID+" "+r.When+"|"+r.Prompt+"|"+r.Target+"|"+r.TZ+"|"+r.Name)
	return b.answer()
}

func (b *bookFunc) List(_ context.Context, a pipeline.Access, ev *pipeline.Event) (string, error) {
	b.got = append(b.got, "list "+a.UserID+" "+ev.ChannelID)
	return b.answer()
}

func (b *bookFunc) Remove(_ context.Context, a pipeline.Access, ev *pipeline.Event, id string) (string, error) {
	b.got = append(b.got, "remove "+a.UserID+" "+id)
	return b.answer()
}

// The tools pass the turn's sender and conversation to the book; a
// refusal is a one-line error result, a failure the call's error, a call
// outside a turn a refusal.
func TestScheduleTools(t *testing.T) {
	book := &bookFunc{}
	srv := &tools.ScheduleServer{Book: book}
	reg := tools.NewRegistry()
	reg.Add(srv.Tools()...)
	turn := &pipeline.Turn{Event: &pipeline.Event{ChannelID: "C1", TS: "1.0", UserID: "U0MGR"},
		Access: pipeline.Access{UserID: "U0MGR", Role: pipeline.RoleManager}}
	ctx := tools.NewContextWithTurn(context.Background(), turn)

	book.answer = func() (string, error) { return "cron job created: sabcdefgh, next run x", nil }
	res, err := reg.Call(ctx, tools.ScheduleAdd, json.RawMessage(`{"when":"@daily","prompt":"p","target":"channel","tz":"UTC","name":"n"}`))
	if err != nil || res.IsError || res.Text != "cron job created: sabcdefgh, next run x" {
		t.Fatalf("add: %+v %v", res, err)
	}
	book.answer = func() (string, error) {
		return "", &pipeline.UserError{Message: "only manager or approver\ncan schedule work"}
	}
	res, err = reg.Call(ctx, tools.ScheduleList, nil)
	if err != nil || !res.IsError || res.Text != "only manager or approver can schedule work" {
		t.Fatalf("refused list: %+v %v", res, err)
	}
	failure := errors.New("list schedules: database is locked")
	book.answer = func() (string, error) { return "", failure }
	if _, err = reg.Call(ctx, tools.ScheduleRemove, json.RawMessage(`{"id":"sabcdefgh"}`)); !errors.Is(err, failure) {
		t.Fatalf("failed remove: %v", err)
	}
	want := []string{"add U0MGR C1 @daily|p|channel|UTC|n", "list U0MGR C1", "remove U0MGR sabcdefgh"}
	if len(book.got) != len(want) {
		t.Fatalf("book asked %q", book.got)
	}
	for i := range want {
		if book.got[i] != want[i] {
			t.Errorf("call %d: %q, want %q", i, book.got[i], want[i])
		}
	}
	res, err = reg.Call(context.Background(), tools.ScheduleAdd, json.RawMessage(`{"when":"@daily","prompt":"p"}`))
	if err != nil || !res.IsError || res.Text != "no chat conversation to schedule in" {
		t.Fatalf("no turn: %+v %v", res, err)
	}
	res, _ = reg.Call(ctx, tools.ScheduleAdd, json.RawMessage(`{"when":3}`))
	if !res.IsError || len(book.got) != 3 {
		t.Fatalf("bad input: %+v, book asked %q", res, book.got)
	}
}
