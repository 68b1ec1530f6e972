package main

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// Files the model can see (issue 25, part 3), through the real service
// against the platform's fake: downloaded with the bot token, saved in the
// thread's workspace, images and PDFs in the model's request.

// pngImage is a w×h PNG.
func pngImage(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// onePagePDF is a one-page PDF.
const onePagePDF = "%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n" +
	"2 0 obj <</Type /Pages /Kids [3 0 R] /Count 1>> endobj\n" +
	"3 0 obj <</Type /Page /Parent 2 0 R /MediaBox [0 0 200 200]>> endobj\n" +
	"trailer <</Root 1 0 R>>\n%%EOF\n"

// lastUserBlocks returns the blocks of the first request's last user
// message.
func (h *harness) lastUserBlocks() []fake.AnthropicContent {
	h.t.Helper()
	msgs := h.model.Requests()[0].ParsedMessages()
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" {
		h.t.Fatalf("the first request ends with no user message: %+v", msgs)
	}
	return msgs[len(msgs)-1].Content
}

// A message with three files, an image and a PDF among them: all three are
// on disk in the thread's workspace, and the model's request carries the
// image and the PDF as image and document blocks after the envelope, which
// lists all three.
func TestAttachmentsImageAndPDFReachTheModel(t *testing.T) {
	h := newHarness(t, rulesSoul)
	ws := abuseWorkspace(t, h)
	h.script(sayText("r1", "seen"))
	h.start()
	chart := pngImage(t, 4, 3)
	h.attachAndWait(
		h.slack.AddFile("chart.png", chart),
		h.slack.AddFile("spec.pdf", []byte(onePagePDF)),
		h.slack.AddFile("notes.txt", []byte("the notes\n")),
	)
	for name, want := range map[string]string{"chart.png": string(chart), "spec.pdf": onePagePDF, "notes.txt": "the notes\n"} {
		if got := fake.ReadFile(t, filepath.Join(ws, "attachments", name)); got != want {
			t.Errorf("attachments/%s on disk = %.40q", name, got)
		}
	}
	blocks := h.lastUserBlocks()
	var types []string
	for _, b := range blocks {
		types = append(types, b.Type)
	}
	if want := []string{"text", "text", "image", "text", "document"}; !slices.Equal(types, want) {
		t.Fatalf("the user message's blocks = %q, want %q", types, want)
	}
	if !strings.Contains(blocks[0].Text, "- attachments/notes.txt (10 bytes, text/plain") ||
		!strings.Contains(blocks[0].Text, "- attachments/chart.png (") {
		t.Errorf("the envelope does not list the files:\n%s", blocks[0].Text)
	}
	if !bytes.Equal(blocks[2].Data(), chart) || blocks[2].ParsedSource().MediaType != "image/png" {
		t.Errorf("the image block does not carry the chart: %.100s", blocks[2].Source)
	}
	if string(blocks[4].Data()) != onePagePDF || blocks[4].ParsedSource().MediaType != "application/pdf" {
		t.Errorf("the document block does not carry the PDF: %.100s", blocks[4].Source)
	}
}

// Without the files:read scope the platform answers a download with its
// HTML sign-in page: the file is not saved, not shown, and the turn's input
// names the missing scope; the operator's log says it too.
func TestAttachmentSignInPage(t *testing.T) {
	h := newHarness(t, rulesSoul)
	ws := abuseWorkspace(t, h)
	h.slack.Scopes = []string{"chat:write", "files:write", "im:history"} // no files:read
	h.script(sayText("r1", "seen"))
	h.start()
	input := h.attachAndWait(h.slack.AddFile("chart.png", pngImage(t, 2, 2)))
	if want := "- chart.png: not saved (the platform answered its sign-in page, not the file: the app lacks the files:read scope)"; !strings.Contains(input, want) {
		t.Errorf("the turn's input lacks %q:\n%s", want, input)
	}
	if _, err := os.Lstat(filepath.Join(ws, "attachments", "chart.png")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the sign-in page was saved as the file: %v", err)
	}
	for _, b := range h.lastUserBlocks() {
		if b.Type != "text" || strings.Contains(b.Text, "Sign in") {
			t.Errorf("the sign-in page reached the model: %+v", b)
		}
	}
	h.waitLog("add the files:read scope")
}
