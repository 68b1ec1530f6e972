package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/persona-runtime/agent/internal/llm"
	"github.com/persona-runtime/agent/pkg/pipeline"
	"github.com/persona-runtime/agent/pkg/tools"
)

// Images and PDFs attached to a message reach the model as content blocks
// of the message's user turn, after the person's envelope. The history
// never stores their bytes: it stores, after the envelope, one label per
// file (its workspace path, type, size and digest: a reference), and each
// request the turn builds puts the file itself after its label, read back
// through the workspace's root (Options.Load). A file changed since it
// arrived, or past the request's budget, gets a line saying so instead.
// The bytes of a file that stays as it was are the same in every request,
// so the prompt cache's prefix holds across turns.

// The budget of files shown in one request, newest first; older ones get
// a note. The API takes requests up to 32 MB, and past 20 images in one
// request it wants each at most 2000 pixels on a side.
const (
	shownMaxBlocks  = 20
	shownMaxEncoded = 24 << 20 // bytes of base64
)

// labelPrefix starts a label; labelMarker is how a stored content array
// holding one reads (a cheap test before any decoding).
const labelPrefix = "Attachment " + "attachments/"

var labelMarker = []byte(`"` + labelPrefix)

// labelPattern parses a label (attachmentLabel). The path is the runtime's
// cleaned file name (tools.Attachments: one line, no envelope opener); the
// fields after it are the runtime's own, matched from the end. Compiled
// on first use: most processes never read a label.
var labelPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^Attachment (attachments/.+) \((image/png|image/jpeg|image/gif|image/webp|application/pdf), ` +
		`(\d+) bytes, sha256 ([0-9a-f]{64})\):$`)
})

// attachmentLabel is the text that stands for a shown file in the history,
// and precedes it in a request.
func attachmentLabel(s tools.Shown) string {
	return fmt.Sprintf("Attachment %s (%s, %d bytes, sha256 %s):", s.Path, s.Type, s.Size, s.SHA256)
}

// parseLabel reads a label back; ok is false for any other text.
func parseLabel(text string) (s tools.Shown, ok bool) {
	if len(text) < len(labelPrefix) || text[:len(labelPrefix)] != labelPrefix {
		return tools.Shown{}, false
	}
	m := labelPattern().FindStringSubmatch(text)
	if m == nil {
		return tools.Shown{}, false
	}
	size, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		return tools.Shown{}, false
	}
	return tools.Shown{Path: m[1], Type: m[2], Size: size, SHA256: m[4]}, true
}

// userMessage is the turn's user message as the history keeps it: the
// person's words and the note about their files in their envelope, then
// the label of each file shown (showAttachments puts the files after them).
func (e *Engine) userMessage(t *pipeline.Turn, a tools.Attached) anthropic.MessageParam {
	note := a.Note
	if note != "" {
		note = e.o.Redact(note)
	}
	blocks := []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(e.userText(t, note))}
	// The labels are not redacted: their path is made of the file's name,
	// which the pipeline redacted, and of the runtime's own fields (a
	// pattern matching a digest would leave a label that no longer
	// names its file).
	for _, s := range a.Shown {
		blocks = append(blocks, anthropic.NewTextBlock(attachmentLabel(s)))
	}
	return anthropic.NewUserMessage(blocks...)
}

// attachments is the Attach hook's result, with the note that replaces it
// when the files could not be saved at all.
func (e *Engine) attachments(ctx context.Context, t *pipeline.Turn) tools.Attached {
	if e.o.Attach == nil || len(t.Event.Files) == 0 {
		return tools.Attached{}
	}
	a, err := e.o.Attach(ctx, t)
	if err != nil {
		e.o.Log.WarnContext(ctx, "save attachments", "err", err)
		return tools.Attached{Note: "(The files attached to this message could not be saved.)"}
	}
	return a
}

// shower puts the shown files after their labels in the messages of one
// request, within the request's budget.
type shower struct {
	e   *Engine
	key string // the thread's key, whose workspace holds the files
	// refused, when set, is why no file is shown: the model's API refused
	// the request that carried them.
	refused string

	shown   int   // files shown so far
	encoded int64 // their base64 bytes
}

// showAttachments returns msgs with the files their labels name put after
// the labels (or, for each file not shown, a line saying why), and how
// many files it shows. The budget goes to the newest files first. refused
// is "" or why no file is shown at all.
func (e *Engine) showAttachments(ctx context.Context, t *pipeline.Turn, msgs []anthropic.MessageParam, refused string) ([]anthropic.MessageParam, int) {
	s := &shower{e: e, key: t.Event.ThreadKey(), refused: refused}
	out := make([]anthropic.MessageParam, len(msgs))
	copy(out, msgs)
	for i := len(out) - 1; i >= 0; i-- {
		switch {
		case isRaw(out[i]): // its role is in its JSON
			out[i] = s.raw(ctx, out[i])
		case out[i].Role == anthropic.MessageParamRoleUser:
			out[i].Content = s.blocks(ctx, out[i].Content)
		}
	}
	return out, s.shown
}

// blocks is content with the file of each label after it.
func (s *shower) blocks(ctx context.Context, content []anthropic.ContentBlockParamUnion) []anthropic.ContentBlockParamUnion {
	var out []anthropic.ContentBlockParamUnion
	for i, b := range content {
		f, ok := shownLabel(b)
		if !ok {
			if out != nil {
				out = append(out, b)
			}
			continue
		}
		if out == nil {
			out = append(make([]anthropic.ContentBlockParamUnion, 0, len(content)+4), content[:i]...)
		}
		out = append(out, b, s.file(ctx, f))
	}
	if out == nil {
		return content
	}
	return out
}

// shownLabel reads a label block.
func shownLabel(b anthropic.ContentBlockParamUnion) (tools.Shown, bool) {
	if b.OfText == nil {
		return tools.Shown{}, false
	}
	return parseLabel(b.OfText.Text)
}

// raw is a message passed on as its stored JSON (requestHistory) with the
// file of each label after it, spliced into that JSON: the blocks around
// keep their bytes, and each file's block has the bytes the encoder gives
// it in a decoded message.
func (s *shower) raw(ctx context.Context, m anthropic.MessageParam) anthropic.MessageParam {
	v, _ := m.Overrides()
	b, ok := v.(json.RawMessage)
	if !ok || !bytes.Contains(b, labelMarker) {
		return m
	}
	var wire struct {
		Content []json.RawMessage `json:"content"`
		Role    string            `json:"role"`
	}
	if err := json.Unmarshal(b, &wire); err != nil || wire.Role != string(anthropic.MessageParamRoleUser) {
		return m
	}
	var arr bytes.Buffer
	arr.WriteByte('[')
	changed := false
	for i, el := range wire.Content {
		if i > 0 {
			arr.WriteByte(',')
		}
		arr.Write(el)
		if !bytes.Contains(el, labelMarker) {
			continue
		}
		var block anthropic.ContentBlockParamUnion
		if json.Unmarshal(el, &block) != nil {
			continue
		}
		f, ok := shownLabel(block)
		if !ok {
			continue
		}
		enc, err := json.Marshal(s.file(ctx, f))
		if err != nil {
			continue
		}
		arr.WriteByte(',')
		arr.Write(enc)
		changed = true
	}
	if !changed {
		return m
	}
	arr.WriteByte(']')
	return param.Override[anthropic.MessageParam](rawMessage(wire.Role, []json.RawMessage{arr.Bytes()}))
}

// file is the block that follows f's label: the file itself, as an image
// or a document, or a line saying why it is not shown.
func (s *shower) file(ctx context.Context, f tools.Shown) anthropic.ContentBlockParamUnion {
	encoded := int64(base64.StdEncoding.EncodedLen(int(f.Size)))
	switch {
	case s.refused != "":
		return anthropic.NewTextBlock("(not shown: " + s.refused + ")")
	case s.e.o.Load == nil:
		return anthropic.NewTextBlock("(not shown: attachments are not read back here)")
	case s.shown >= shownMaxBlocks || s.encoded+encoded > shownMaxEncoded:
		return anthropic.NewTextBlock(fmt.Sprintf("(not shown in this request: it carries at most %d attachments and %d MB of them, "+
			"the newest first; the file is in your workspace)", shownMaxBlocks, shownMaxEncoded>>20))
	}
	data, err := s.e.o.Load(s.key, f)
	if err != nil {
		s.e.o.Log.InfoContext(ctx, "an attachment is not shown", "path", f.Path, "err", err)
		return anthropic.NewTextBlock("(not shown: " + err.Error() + ")")
	}
	s.shown++
	s.encoded += encoded
	b64 := base64.StdEncoding.EncodeToString(data)
	if f.IsPDF() {
		return anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: b64})
	}
	return anthropic.NewImageBlockBase64(f.Type, b64)
}

// refusedReason is the line shown in place of the files when the model's
// API refused a request carrying them (an image it cannot read, a PDF over
// its page limit, a request over its size): the turn goes on without them
// rather than fail, as every later turn of the thread would.
func refusedReason(err error) (string, bool) {
	if !errors.Is(err, llm.ErrInvalidRequest) {
		return "", false
	}
	msg := err.Error()
	var le *llm.Error
	if errors.As(err, &le) && le.Message != "" {
		msg = le.Message
	}
	return "the model's API refused the request carrying the attachments: " + msg, true
}
