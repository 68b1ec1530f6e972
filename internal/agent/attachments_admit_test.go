package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/store"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// admitBudget admits turns or not, and notes whether the message's file
// was already on disk when it was first asked.
type admitBudget struct {
	ok           bool
	file         string // the path the file is saved at
	admits       int
	savedAtFirst bool
}

func (b *admitBudget) Admit(context.Context, *pipeline.Turn, func()) (bool, error) {
	if b.admits++; b.admits == 1 {
		_, err := os.Stat(b.file)
		b.savedAtFirst = err == nil
	}
	return b.ok, nil
}

func (b *admitBudget) Spent(t *pipeline.Turn, model string, u store.Usage) store.UsageRecord {
	return store.UsageRecord{At: time.Now(), ThreadKey: t.Event.ThreadKey(), ChannelID: t.Event.ChannelID, Model: model, Usage: u}
}

// The budgets are asked before a message's files are saved: a refused turn
// writes nothing to disk and stores the message with its files named as
// not saved; an admitted one saves them and is not asked twice before its
// first model call (once per call, as without files).
func TestAttachmentsSavedOnlyForAdmittedTurns(t *testing.T) {
	for _, ok := range []bool{false, true} {
		name := map[bool]string{false: "refused", true: "admitted"}[ok]
		t.Run(name, func(t *testing.T) {
			ws, files := t.TempDir(), &platform.Chat{}
			a := &tools.Attachments{Download: files, Workspace: func(key string) (string, error) {
				dir := filepath.Join(ws, strings.ReplaceAll(key, ":", "_"))
				return dir, os.MkdirAll(dir, 0o700)
			}}
			b := &admitBudget{ok: ok, file: filepath.Join(ws, "C1_1.0", "attachments", "notes.txt")}
			e := newEnv(t, config{attach: a, budget: b})
			e.fake.Enqueue(reply("seen"), fake.TextReply(""))
			turn, _ := e.turn(t, "1.0", "have a look", pipeline.RoleMember)
			turn.Event.Files = []pipeline.File{files.AddFile("notes.txt", "text/plain", []byte("the notes\n"))}
			if err := e.engine.Turn(t.Context(), turn); err != nil {
				t.Fatalf("Turn: %v", err)
			}
			if b.savedAtFirst {
				t.Fatal("the file was saved before the budgets admitted the turn")
			}
			_, err := os.Stat(b.file)
			history, herr := e.store.History(t.Context(), turn.Session.ID())
			if herr != nil || len(history) == 0 {
				t.Fatalf("history %v, %v", history, herr)
			}
			stored := string(history[0].Content)
			switch {
			case !ok && err == nil:
				t.Error("a refused turn saved its message's file")
			case !ok && !strings.Contains(stored, "- notes.txt: not saved (a budget stopped this turn before it ran"):
				t.Errorf("the stored message: %s", stored)
			case !ok && (len(e.fake.Requests()) != 0 || b.admits != 1):
				t.Errorf("a refused turn: %d model calls, asked %d times", len(e.fake.Requests()), b.admits)
			case ok && err != nil:
				t.Errorf("an admitted turn did not save its file: %v", err)
			case ok && (len(e.fake.Requests()) != 2 || b.admits != 2):
				t.Errorf("an admitted turn: %d model calls, the budgets asked %d times, want 2 and 2", len(e.fake.Requests()), b.admits)
			}
		})
	}
}
