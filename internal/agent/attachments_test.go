package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// aPDF is a one-page PDF.
const aPDF = "%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n" +
	"2 0 obj <</Type /Pages /Kids [3 0 R] /Count 1>> endobj\n" +
	"3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 200 200]>> endobj\n" +
	"trailer <</Root 1 0 R>>\n%%EOF\n"

// pngOf returns a w×h PNG image.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// attachEnv is an env whose turns save their files in workspaces under a
// temporary folder, downloaded from the simulator's platform.
type attachEnv struct {
	*env
	files *platform.Chat
	ws    string // the workspaces' folder
}

func newAttachEnv(t *testing.T, maxFiles int) *attachEnv {
	t.Helper()
	ws, files := t.TempDir(), &platform.Chat{}
	a := &tools.Attachments{Download: files, MaxFiles: maxFiles, Workspace: func(key string) (string, error) {
		dir := filepath.Join(ws, strings.ReplaceAll(key, ":", "_"))
		return dir, os.MkdirAll(dir, 0o700)
	}}
	return &attachEnv{env: newEnv(t, config{attach: a}), files: files, ws: ws}
}

// workspace is the thread root's workspace.
func (e *attachEnv) workspace(root string) string {
	return filepath.Join(e.ws, "C1_"+root)
}

// run runs a turn of text with files in thread root, the model answering
// script.
func (e *attachEnv) run(t *testing.T, root, text string, files []pipeline.File, script ...fake.AnthropicResponse) *fake.Outbox {
	t.Helper()
	e.fake.Enqueue(script...)
	turn, out := e.turn(t, root, text, pipeline.RoleMember)
	turn.Event.Files = files
	if err := e.engine.Turn(t.Context(), turn); err != nil {
		t.Fatalf("Turn: %v", err)
	}
	return out
}

// userBlocks returns the types of message i's blocks in req, and the blocks.
func userBlocks(t *testing.T, req fake.AnthropicRequest, i int) ([]string, []fake.AnthropicContent) {
	t.Helper()
	msgs := req.ParsedMessages()
	if i < 0 {
		i += len(msgs)
	}
	if i < 0 || i >= len(msgs) || msgs[i].Role != "user" {
		t.Fatalf("request has no user message %d: %+v", i, msgs)
	}
	var types []string
	for _, c := range msgs[i].Content {
		types = append(types, c.Type)
	}
	return types, msgs[i].Content
}

// rawMessage returns message i of req as it was sent.
func rawMessage(t *testing.T, req fake.AnthropicRequest, i int) string {
	t.Helper()
	var msgs []json.RawMessage
	if err := json.Unmarshal(req.Messages, &msgs); err != nil || i >= len(msgs) {
		t.Fatalf("messages %s: %v", req.Messages, err)
	}
	return string(msgs[i])
}

// A message with three files, an image and a PDF among them: all three
// are saved, the image and the PDF follow the person's envelope as image
// and document blocks, each after its label, and the third is listed in
// the envelope. The history keeps the labels, not the files' bytes, and
// the next turn's request carries the same blocks, byte for byte (the
// prompt cache's prefix).
func TestAttachmentsReachTheModel(t *testing.T) {
	e := newAttachEnv(t, 0)
	chart := pngOf(t, 3, 2)
	files := []pipeline.File{
		e.files.AddFile("chart.png", "image/png", chart),
		e.files.AddFile("spec.pdf", "application/pdf", []byte(aPDF)),
		e.files.AddFile("notes.txt", "text/plain", []byte("the notes\n")),
	}
	e.run(t, "1.0", "have a look", files, reply("seen"), fake.TextReply("Done."))

	reqs := e.fake.Requests()
	types, blocks := userBlocks(t, reqs[0], -1)
	if want := []string{"text", "text", "image", "text", "document"}; !slices.Equal(types, want) {
		t.Fatalf("the user message's blocks = %q, want %q", types, want)
	}
	for _, want := range []string{"have a look", "- attachments/chart.png (" + fmt.Sprint(len(chart)) + " bytes, image/png; shown to you below)",
		"- attachments/spec.pdf (", "- attachments/notes.txt (10 bytes, text/plain)"} {
		if !strings.Contains(blocks[0].Text, want) {
			t.Errorf("the envelope lacks %q:\n%s", want, blocks[0].Text)
		}
	}
	if _, _, _, ok := pipeline.ParseEnvelope(blocks[0].Text); !ok {
		t.Errorf("the first block is not the person's envelope: %q", blocks[0].Text)
	}
	if !strings.HasPrefix(blocks[1].Text, "Attachment attachments/chart.png (image/png, ") ||
		!strings.HasPrefix(blocks[3].Text, "Attachment attachments/spec.pdf (application/pdf, ") {
		t.Errorf("labels = %q, %q", blocks[1].Text, blocks[3].Text)
	}
	if src := blocks[2].ParsedSource(); src.MediaType != "image/png" || !bytes.Equal(blocks[2].Data(), chart) {
		t.Errorf("image block = %s, want the chart as image/png", blocks[2].Source)
	}
	if src := blocks[4].ParsedSource(); src.MediaType != "application/pdf" || string(blocks[4].Data()) != aPDF {
		t.Errorf("document block = %s, want the PDF", blocks[4].Source)
	}
	for _, name := range []string{"chart.png", "spec.pdf", "notes.txt"} {
		if _, err := os.Stat(filepath.Join(e.workspace("1.0"), "attachments", name)); err != nil {
			t.Errorf("%s is not on disk: %v", name, err)
		}
	}

	// The history keeps references.
	turn, _ := e.turn(t, "1.0", "", pipeline.RoleMember)
	rows, err := e.store.History(t.Context(), turn.Session.ID())
	if err != nil || len(rows) == 0 {
		t.Fatalf("history: %d rows, %v", len(rows), err)
	}
	if got := e.history(t, turn.Session.ID())[0]; got != "user:text,text,text" {
		t.Errorf("stored user message = %s, want the envelope and two labels", got)
	}
	if c := string(rows[0].Content); strings.Contains(c, "source") || len(c) > 2000 {
		t.Errorf("the history stores the files' bytes (%d bytes): %.200s", len(c), c)
	}

	// The next turn shows them again, with the bytes of the turn before.
	e.run(t, "1.0", "and now?", nil, reply("again"), fake.TextReply("Done."))
	reqs = e.fake.Requests()
	if types, _ := userBlocks(t, reqs[2], 0); !slices.Equal(types, []string{"text", "text", "image", "text", "document"}) {
		t.Errorf("the next turn's first message = %q", types)
	}
	if a, b := rawMessage(t, reqs[1], 0), rawMessage(t, reqs[2], 0); a != b {
		t.Errorf("the message with the files changed between turns:\n%.300s\n%.300s", a, b)
	}
}

// A file changed in the workspace since it arrived is not shown again: a
// line after its label says why, and the other files are still shown.
func TestAttachmentChangedIsNotShown(t *testing.T) {
	e := newAttachEnv(t, 0)
	files := []pipeline.File{
		e.files.AddFile("chart.png", "image/png", pngOf(t, 2, 2)),
		e.files.AddFile("spec.pdf", "application/pdf", []byte(aPDF)),
	}
	e.run(t, "1.0", "have a look", files, reply("seen"), fake.TextReply("Done."))
	fake.WriteFile(t, filepath.Join(e.workspace("1.0"), "attachments", "chart.png"), string(pngOf(t, 4, 4)))
	e.run(t, "1.0", "and now?", nil, reply("again"), fake.TextReply("Done."))
	types, blocks := userBlocks(t, e.fake.Requests()[2], 0)
	if want := []string{"text", "text", "text", "text", "document"}; !slices.Equal(types, want) {
		t.Fatalf("blocks = %q, want %q", types, want)
	}
	if want := "(not shown: attachments/chart.png is no longer the file that was attached (changed since))"; blocks[2].Text != want {
		t.Errorf("after the label: %q, want %q", blocks[2].Text, want)
	}
}

// When the model's API refuses a request carrying attachments (a PDF over
// its page limit), the turn asks again without them, each named with the
// reason, rather than fail (as every later turn of the thread would).
func TestAttachmentsRefusedByTheModel(t *testing.T) {
	e := newAttachEnv(t, 0)
	files := []pipeline.File{
		e.files.AddFile("chart.png", "image/png", pngOf(t, 2, 2)),
		e.files.AddFile("long.pdf", "application/pdf", []byte(aPDF)),
	}
	refusal := "messages.0.content.4: A maximum of 100 PDF pages may be provided."
	out := e.run(t, "1.0", "have a look", files,
		fake.APIError(400, "invalid_request_error", refusal), reply("I could not open them"), fake.TextReply("Done."))
	if got := out.Posts(); !slices.Equal(got, []string{"I could not open them"}) {
		t.Errorf("posts = %q", got)
	}
	reqs := e.fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	for i := 1; i < 3; i++ {
		types, blocks := userBlocks(t, reqs[i], 0)
		if want := []string{"text", "text", "text", "text", "text"}; !slices.Equal(types, want) {
			t.Fatalf("request %d: blocks = %q, want %q", i, types, want)
		}
		if want := "(not shown: the model's API refused the request carrying the attachments: " + refusal + ")"; blocks[4].Text != want {
			t.Errorf("request %d: %q, want %q", i, blocks[4].Text, want)
		}
	}
	if !strings.Contains(e.logs.String(), "the model refused a request carrying attachments") {
		t.Errorf("the refusal is not logged:\n%s", e.logs.String())
	}
}

// A request shows at most 20 files, the newest first; the others are
// named with why.
func TestAttachmentsBudget(t *testing.T) {
	e := newAttachEnv(t, 30)
	var files []pipeline.File
	for i := range 22 {
		files = append(files, e.files.AddFile(fmt.Sprintf("shot-%02d.png", i), "image/png", pngOf(t, 1, 1)))
	}
	e.run(t, "1.0", "all of them", files, reply("seen"), fake.TextReply("Done."))
	types, blocks := userBlocks(t, e.fake.Requests()[0], -1)
	images := 0
	for _, typ := range types {
		if typ == "image" {
			images++
		}
	}
	if images != 20 || len(types) != 1+2*22 {
		t.Fatalf("%d images in %d blocks, want 20 in %d", images, len(types), 1+2*22)
	}
	if last := blocks[len(blocks)-1].Text; !strings.HasPrefix(last, "(not shown in this request: it carries at most 20 attachments") {
		t.Errorf("the 22nd file: %q", last)
	}
}
