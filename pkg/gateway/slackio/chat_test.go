package slackio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

func newTestChat(t *testing.T) (*Chat, *fake.Slack) {
	t.Helper()
	s := fake.NewSlack(t)
	client := NewClient(fake.DefaultBotToken, fake.DefaultAppToken, strings.TrimSuffix(s.URL(), "/"), nil)
	return NewChat(client, fake.DefaultBotToken, s.URL(), slog.New(slog.NewTextHandler(io.Discard, nil))), s
}

// wireBlock is the part of a Block Kit block the tests look at.
type wireBlock struct {
	Type     string `json:"type"`
	BlockID  string `json:"block_id"`
	Text     *struct{ Type, Text string }
	Elements []struct {
		Type     string `json:"type"`
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
		Style    string `json:"style"`
		Text     json.RawMessage
	} `json:"elements"`
}

func decodeBlocks(t *testing.T, raw json.RawMessage) []wireBlock {
	t.Helper()
	var blocks []wireBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("blocks %s: %v", raw, err)
	}
	return blocks
}

func TestChatPostsACardWithButtons(t *testing.T) {
	chat, s := newTestChat(t)
	card := &pipeline.Card{Kind: "approval", ID: "ap-7", Category: "Bash", Summary: "run `ls`", Digest: "d1g3st",
		Actions: []string{pipeline.ActionApprove, pipeline.ActionDeny, pipeline.ActionAlways}}
	ts, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C1", ThreadTS: "1.0", Card: card})
	if err != nil {
		t.Fatal(err)
	}
	posts := s.Posts()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	p := posts[0]
	if p.TS != ts || p.Channel != "C1" || p.ThreadTS != "1.0" {
		t.Errorf("post ts=%q channel=%q thread=%q; Post returned ts %q", p.TS, p.Channel, p.ThreadTS, ts)
	}
	if !strings.Contains(p.Text, "Bash") {
		t.Errorf("fallback text %q does not name the category", p.Text)
	}
	var actions *wireBlock
	for _, b := range decodeBlocks(t, p.Blocks) {
		if b.Type == "actions" {
			actions = &b
		}
	}
	if actions == nil {
		t.Fatalf("no actions block in %s", p.Blocks)
	}
	if actions.BlockID != "approval:ap-7" {
		t.Errorf("block_id = %q, want approval:ap-7", actions.BlockID)
	}
	want := [][3]string{{"approve", "ap-7", "primary"}, {"deny", "ap-7", "danger"}, {"always", "ap-7", ""}}
	var got [][3]string
	for _, e := range actions.Elements {
		if e.Type != "button" {
			t.Errorf("element type %q, want button", e.Type)
		}
		got = append(got, [3]string{e.ActionID, e.Value, e.Style})
	}
	if !slices.Equal(got, want) {
		t.Errorf("buttons (action_id, value, style) = %v, want %v", got, want)
	}
}

func TestChatUpdatesAResolvedCard(t *testing.T) {
	chat, s := newTestChat(t)
	ts, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C1", Text: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	card := &pipeline.Card{ID: "ap-1", Category: "skills", Summary: "sync", Digest: "abc", Outcome: "approved by <@U0APP>"}
	if err := chat.Update(t.Context(), ts, pipeline.Message{ChannelID: "C1", Text: "approved", Card: card}); err != nil {
		t.Fatal(err)
	}
	u := s.Updates()[0]
	if u.TS != ts || u.Text != "approved" {
		t.Errorf("update ts=%q text=%q, want %q %q", u.TS, u.Text, ts, "approved")
	}
	for _, b := range decodeBlocks(t, u.Blocks) {
		if b.Type == "actions" {
			t.Errorf("a resolved card still has buttons: %s", u.Blocks)
		}
	}
	var decoded any
	if err := json.Unmarshal(u.Blocks, &decoded); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(decoded), "approved by <@U0APP>") {
		t.Errorf("outcome missing from %s", u.Blocks)
	}

	err = chat.Update(t.Context(), "9.9", pipeline.Message{ChannelID: "C1", Text: "x"})
	if err == nil || err.Error() != "chat.update: message_not_found" {
		t.Errorf("update of an unknown ts = %v, want chat.update: message_not_found", err)
	}
}

func TestChatErrorsNameMethodAndCode(t *testing.T) {
	chat, s := newTestChat(t)
	s.Errors = map[string]string{"chat.postMessage": "channel_not_found", "auth.test": "invalid_auth"}
	_, err := chat.Post(t.Context(), pipeline.Message{ChannelID: "C404", Text: "hi"})
	if err == nil || err.Error() != "chat.postMessage: channel_not_found" {
		t.Fatalf("Post = %v, want chat.postMessage: channel_not_found", err)
	}
	if resp, ok := errors.AsType[slack.SlackErrorResponse](err); !ok || resp.Err != "channel_not_found" {
		t.Errorf("the platform's error is not reachable with errors.As: %#v", err)
	}
	if _, err := chat.AuthTest(t.Context()); err == nil || err.Error() != "auth.test: invalid_auth" {
		t.Errorf("AuthTest = %v, want auth.test: invalid_auth", err)
	}
	tokenChat := NewChat(slack.New("xoxb-secret"), "xoxb-secret", "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	scrubbed := tokenChat.wrap("chat.postMessage", errors.New("bad request with xoxb-secret inside"))
	if strings.Contains(scrubbed.Error(), "xoxb-secret") {
		t.Errorf("token not scrubbed: %q", scrubbed)
	}
}

func TestChatUploadsInThreeSteps(t *testing.T) {
	chat, s := newTestChat(t)
	content := []byte("report body")
	err := chat.Upload(t.Context(), pipeline.Upload{ChannelID: "C1", ThreadTS: "1.0", Filename: "report.md",
		Title: "Report", Comment: "here it is", Content: content})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"files.getUploadURLExternal", "(upload)", "files.completeUploadExternal"}
	if got := s.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	ups := s.Uploads()
	if len(ups) != 1 {
		t.Fatalf("%d uploads, want 1", len(ups))
	}
	u := ups[0]
	if string(u.Content) != string(content) || u.Filename != "report.md" || u.Title != "Report" ||
		u.Channel != "C1" || u.ThreadTS != "1.0" || u.InitialComment != "here it is" {
		t.Errorf("upload = %+v", u)
	}

	if err := chat.Upload(t.Context(), pipeline.Upload{ChannelID: "C1", Filename: "empty.txt"}); err == nil ||
		!strings.Contains(err.Error(), "empty") {
		t.Errorf("empty upload = %v, want an error about empty content", err)
	}
	s.Script(func(s *fake.Slack) { s.Errors = map[string]string{"files.completeUploadExternal": "channel_not_found"} })
	err = chat.Upload(t.Context(), pipeline.Upload{ChannelID: "C404", Filename: "a.txt", Content: []byte("a")})
	if err == nil || err.Error() != "upload: files.completeUploadExternal: channel_not_found" {
		t.Errorf("failed upload = %v, want upload: files.completeUploadExternal: channel_not_found", err)
	}
}

// attached is f as a message event carries it.
func attached(f fake.File) pipeline.File {
	return pipeline.File{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Size: f.Size, URL: f.URLPrivateDownload}
}

func TestChatDownloadRespectsLimit(t *testing.T) {
	chat, s := newTestChat(t)
	f := attached(s.AddFile("data.csv", []byte("0123456789")))
	got, err := chat.Download(t.Context(), f, 10)
	if err != nil || string(got) != "0123456789" {
		t.Fatalf("Download at the limit = %q, %v", got, err)
	}
	if _, err := chat.Download(t.Context(), f, 9); !errors.Is(err, gateway.ErrFileTooLarge) {
		t.Errorf("Download over the limit = %v, want gateway.ErrFileTooLarge", err)
	}
	// The token goes only to the platform or the Web API's host.
	f.URL = "http://elsewhere.invalid/file"
	if _, err := chat.Download(t.Context(), f, 10); err == nil {
		t.Error("Download from a foreign host succeeded")
	}
}

// Without files:read the platform answers a download with its HTML sign-in
// page: for a file that is not HTML, that is an error naming the scope,
// and nothing of the page reaches the writer. An HTML file is HTML.
func TestChatDownloadSignInPage(t *testing.T) {
	chat, s := newTestChat(t)
	png := attached(s.AddFile("chart.png", []byte("\x89PNG\r\n\x1a\nrest")))
	page := attached(s.AddFile("page.html", []byte("<!DOCTYPE html><p>mine</p>")))
	var buf bytes.Buffer
	if n, err := chat.DownloadTo(t.Context(), png, &buf, 1<<20); err != nil || n != 12 {
		t.Fatalf("DownloadTo with files:read = %d, %v", n, err)
	}
	s.Script(func(s *fake.Slack) { s.Scopes = []string{"chat:write", "files:write"} })
	buf.Reset()
	n, err := chat.DownloadTo(t.Context(), png, &buf, 1<<20)
	if !errors.Is(err, gateway.ErrFileSignIn) || !strings.Contains(err.Error(), "files:read") {
		t.Errorf("DownloadTo of the sign-in page = %v, want gateway.ErrFileSignIn naming files:read", err)
	}
	if n != 0 || buf.Len() != 0 {
		t.Errorf("the sign-in page reached the writer: %d bytes, %q", n, buf.String())
	}
	// The platform cannot be told from a real HTML file here: an HTML file
	// is downloaded as it is answered.
	if got, err := chat.Download(t.Context(), page, 1<<20); err != nil || !strings.Contains(string(got), "Sign in") {
		t.Errorf("Download of an HTML file = %q, %v", got, err)
	}
}

// chunkWriter records how it was written to.
type chunkWriter struct {
	n, biggest int
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	w.biggest = max(w.biggest, len(p))
	return len(p), nil
}

// DownloadTo streams: a file reaches the writer in pieces as it arrives,
// and past the limit no more than the limit is written.
func TestChatDownloadToStreams(t *testing.T) {
	chat, s := newTestChat(t)
	const size = 1 << 20
	f := attached(s.AddFile("big.bin", bytes.Repeat([]byte{'x'}, size)))
	w := &chunkWriter{}
	n, err := chat.DownloadTo(t.Context(), f, w, size)
	if err != nil || n != size || w.n != size {
		t.Fatalf("DownloadTo = %d, %v (%d written)", n, err, w.n)
	}
	if w.biggest >= size/4 {
		t.Errorf("the file came in a piece of %d bytes: not streamed", w.biggest)
	}
	w = &chunkWriter{}
	if _, err := chat.DownloadTo(t.Context(), f, w, size/2); !errors.Is(err, gateway.ErrFileTooLarge) || w.n > size/2 {
		t.Errorf("DownloadTo over the limit = %v with %d bytes written, want gateway.ErrFileTooLarge within %d", err, w.n, size/2)
	}
}

func TestChatAuthTest(t *testing.T) {
	chat, _ := newTestChat(t)
	id, err := chat.AuthTest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := pipeline.Identity{UserID: fake.DefaultBotUserID, BotID: fake.DefaultBotID, TeamID: fake.DefaultTeamID}
	if id != want {
		t.Errorf("AuthTest = %+v, want %+v", id, want)
	}
}

func TestChatEphemeralAndStatus(t *testing.T) {
	chat, s := newTestChat(t)
	if err := chat.PostEphemeral(t.Context(), "C1", "1.0", "U1", "only you"); err != nil {
		t.Fatal(err)
	}
	e := s.Ephemerals()[0]
	if e.Channel != "C1" || e.ThreadTS != "1.0" || e.User != "U1" || e.Text != "only you" {
		t.Errorf("ephemeral = %+v", e)
	}
	if err := chat.SetStatus(t.Context(), "D1", "2.0", "is thinking…"); err != nil {
		t.Fatal(err)
	}
	if err := chat.SetStatus(t.Context(), "D1", "2.0", ""); err != nil {
		t.Fatal(err)
	}
	got := s.Statuses()
	want := []fake.Status{{Channel: "D1", ThreadTS: "2.0", Status: "is thinking…"}, {Channel: "D1", ThreadTS: "2.0"}}
	if len(got) != 2 || got[0].Status != want[0].Status || got[1].Status != "" || got[1].Channel != "D1" || got[1].ThreadTS != "2.0" {
		t.Errorf("statuses = %+v, want %+v", got, want)
	}
}
