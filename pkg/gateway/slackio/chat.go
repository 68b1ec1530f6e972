package slackio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Chat makes the bot's calls on the chat platform's Web API: posts,
// edits, ephemeral messages, uploads, the assistant status, the agent
// sessions' status and suggested prompts (agentview.go), file downloads,
// auth.test, and the reads and reactions of the agent's chat tools
// (read.go). Its errors name the Web API method and the platform's
// error code ("chat.postMessage: channel_not_found") and never contain the
// token.
type Chat struct {
	api       *slack.Client
	botToken  string
	apiURL    *url.URL // the Web API's address: downloads there get the token too (mayReceiveToken)
	log       *slog.Logger
	onFailure func(DeliveryFailure)
	backoff   time.Duration // first wait between tries; 0 means deliveryBackoff
	streams   noStream      // where the platform refused streaming
	clock     clock.Clock   // what the reads' rate-limit waits run on; nil means clock.System
	agentView refusals      // the agent surface's methods the platform refused

	// loading are the persona's loading messages (loading.go).
	loading atomic.Pointer[[]string]
}

var _ pipeline.Poster = (*Chat)(nil)

// NewChat returns a Chat over client (NewClient). botToken is the token
// client carries, scrubbed from every error; apiURL is the Web API base
// client was made with ("" means the platform's own). A download is made
// with the token only from the platform's hosts or the Web API's own host
// (mayReceiveToken), never from an address a message made up, and a
// redirect elsewhere drops it (NewClient).
func NewChat(client *slack.Client, botToken, apiURL string, log *slog.Logger) *Chat {
	if client == nil || log == nil {
		panic("slackio: NewChat needs a client and a logger")
	}
	if apiURL == "" {
		apiURL = slack.APIURL
	}
	api, _ := url.Parse(apiURL) // nil when it does not parse: the platform's hosts only
	return &Chat{api: client, botToken: botToken, apiURL: api, log: log}
}

// Post posts m (chat.postMessage) in its thread, or at top level when
// ThreadTS is empty, and returns the new message's ts. A card is rendered
// as Block Kit; the text stays as the notification fallback. A post that
// answers an event carries the event's id as message metadata. A failure
// that may pass is retried with backoff; one that leaves unknown whether
// the post landed is retried only when the thread shows it did not. A post
// that failed for good is an *UndeliveredError, logged and reported.
func (c *Chat) Post(ctx context.Context, m pipeline.Message) (string, error) {
	if m.ChannelID == "" {
		return "", errors.New("chat.postMessage: no channel")
	}
	opts := messageOptions(m)
	if m.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(m.ThreadTS))
	}
	var landed func() (bool, error)
	if m.For != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: replyMetaType,
			EventPayload: map[string]any{replyMetaEvent: m.For}}))
		if m.ThreadTS != "" {
			landed = func() (bool, error) { return c.landed(ctx, m) }
		}
	}
	var ts string
	err := c.deliver(ctx, "chat.postMessage", m.ChannelID, func() error {
		var err error
		_, ts, err = c.api.PostMessageContext(ctx, m.ChannelID, opts...)
		return err
	}, landed)
	if err != nil {
		return "", err
	}
	c.log.DebugContext(ctx, "chat message posted", "channel_id", m.ChannelID, "thread_ts", m.ThreadTS, "ts", ts,
		"card", m.Card != nil)
	return ts, nil
}

// Update replaces the message at ts with m (chat.update): its text and, for
// a card, its blocks.
func (c *Chat) Update(ctx context.Context, ts string, m pipeline.Message) error {
	if m.ChannelID == "" || ts == "" {
		return errors.New("chat.update: no channel or ts")
	}
	// An edit is idempotent: an ambiguous failure is retried like any other.
	err := c.deliver(ctx, "chat.update", m.ChannelID, func() error {
		_, _, _, err := c.api.UpdateMessageContext(ctx, m.ChannelID, ts, messageOptions(m)...)
		return err
	}, func() (bool, error) { return false, nil })
	if err != nil {
		return err
	}
	c.log.DebugContext(ctx, "chat message updated", "channel_id", m.ChannelID, "ts", ts, "card", m.Card != nil)
	return nil
}

// messageOptions are the text and blocks of m.
func messageOptions(m pipeline.Message) []slack.MsgOption {
	text := m.Text
	var opts []slack.MsgOption
	if m.Card != nil {
		if text == "" {
			text = cardFallbackText(m.Card)
		}
		opts = append(opts, slack.MsgOptionBlocks(cardBlocks(m.Card)...))
	} else if m.Table != nil {
		opts = append(opts, slack.MsgOptionBlocks(tableBlocks(m.Table, m.Feedback)...))
	} else if m.Feedback && strings.TrimSpace(text) != "" {
		opts = append(opts, slack.MsgOptionBlocks(feedbackBlocks(text)...))
	}
	return append(opts, slack.MsgOptionText(text, false))
}

// PostEphemeral shows text to userID only (chat.postEphemeral), in the
// thread at threadTS or at top level when it is empty.
func (c *Chat) PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	if _, err := c.api.PostEphemeralContext(ctx, channelID, userID, opts...); err != nil {
		return c.wrap("chat.postEphemeral", err)
	}
	return nil
}

// Upload uploads a file into its thread with the platform's three steps:
// files.getUploadURLExternal, the upload itself, files.completeUploadExternal.
func (c *Chat) Upload(ctx context.Context, u pipeline.Upload) error {
	if err := u.Check(); err != nil {
		return err
	}
	_, err := c.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Reader: bytes.NewReader(u.Content), FileSize: len(u.Content), Filename: u.Filename, Title: u.Title,
		Channel: u.ChannelID, ThreadTimestamp: u.ThreadTS, InitialComment: u.Comment,
	})
	if err != nil {
		return fmt.Errorf("upload: %w", c.wrap(uploadStep(err)))
	}
	c.log.DebugContext(ctx, "chat file uploaded", "channel_id", u.ChannelID, "thread_ts", u.ThreadTS, "bytes", len(u.Content))
	return nil
}

// uploadStep names the step of slack-go's UploadFileContext that failed,
// from the prefix it gives its errors.
func uploadStep(err error) (string, error) {
	msg := err.Error()
	for _, step := range [][2]string{
		{"GetUploadURLExternal: ", "files.getUploadURLExternal"},
		{"UploadToURL: ", "upload URL"},
		{"CompleteUploadExternal: ", "files.completeUploadExternal"},
	} {
		if rest, ok := strings.CutPrefix(msg, step[0]); ok {
			return step[1], &strippedError{text: rest, err: err}
		}
	}
	return "files.upload", err
}

// SetStatus sets the assistant thread's status line
// (assistant.threads.setStatus); an empty status clears it.
func (c *Chat) SetStatus(ctx context.Context, channelID, threadTS, status string) error {
	if loading := c.loadingMessages(); status != "" && len(loading) > 0 {
		return c.setStatusLoading(ctx, channelID, threadTS, status, loading)
	}
	err := c.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: channelID, ThreadTS: threadTS, Status: status,
	})
	if err != nil {
		return c.wrap("assistant.threads.setStatus", err)
	}
	return nil
}

// Download fetches a file attached to a message (its url_private_download)
// with the bot token, into memory. A file over maxBytes fails with
// gateway.ErrFileTooLarge, and is not read further than that. DownloadTo
// streams instead.
func (c *Chat) Download(ctx context.Context, f pipeline.File, maxBytes int64) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := c.DownloadTo(ctx, f, &buf, maxBytes); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DownloadTo fetches a file as Download does, streaming it to w as it
// arrives (nothing of it is held in memory), and returns the bytes
// written. A file over maxBytes fails with gateway.ErrFileTooLarge once
// maxBytes have been written: the caller discards what w received. An
// answer of type text/html for a file that is not HTML (pipeline.File.IsHTML)
// is the platform's sign-in page, served when the token lacks files:read:
// it fails with gateway.ErrFileSignIn before anything is written.
func (c *Chat) DownloadTo(ctx context.Context, f pipeline.File, w io.Writer, maxBytes int64) (int64, error) {
	if maxBytes <= 0 {
		return 0, errors.New("download: the limit must be positive")
	}
	if u, err := url.Parse(f.URL); f.URL != "" && (err != nil || !mayReceiveToken(c.apiURL, u)) {
		c.log.WarnContext(ctx, "a file's address is not on the platform's file hosts: not downloaded with the bot token",
			"file_id", f.ID, "host", fileHost(f.URL))
		return 0, fmt.Errorf("download: %w", gateway.ErrFileHost)
	}
	if !f.IsHTML() {
		ctx = withAnswerCheck(ctx, refuseHTML)
	}
	lw := &limitedWriter{w: w, max: maxBytes}
	if err := c.api.GetFileContext(ctx, f.URL, lw); err != nil {
		switch {
		case errors.Is(err, gateway.ErrFileTooLarge):
			return lw.n, fmt.Errorf("download: %w (limit %d bytes)", gateway.ErrFileTooLarge, maxBytes)
		case errors.Is(err, gateway.ErrFileSignIn):
			c.log.WarnContext(ctx, "a file download answered the sign-in page: add the files:read scope to the app",
				"file_id", f.ID)
			return lw.n, fmt.Errorf("download: %w", gateway.ErrFileSignIn)
		}
		return lw.n, c.wrap("download", err)
	}
	return lw.n, nil
}

// fileHost is the host of a file's address, for the log ("" when it does
// not parse).
func fileHost(addr string) string {
	u, err := url.Parse(addr)
	if err != nil {
		return ""
	}
	return u.Host
}

// refuseHTML refuses an answer of type text/html: the platform's sign-in
// page, where a file that is not HTML was asked for. (slack-go itself
// catches the sign-in page only when it comes by a redirect.)
func refuseHTML(h http.Header) error {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
		return gateway.ErrFileSignIn
	}
	return nil
}

// limitedWriter passes at most max bytes to w and refuses the write that
// would pass it. It only has Write: were it an io.ReaderFrom, io.Copy
// would bypass the limit.
type limitedWriter struct {
	w   io.Writer
	n   int64
	max int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n+int64(len(p)) > l.max {
		return 0, gateway.ErrFileTooLarge
	}
	n, err := l.w.Write(p)
	l.n += int64(n)
	return n, err
}

// AuthTest returns the bot's identity (auth.test).
func (c *Chat) AuthTest(ctx context.Context) (pipeline.Identity, error) {
	resp, err := c.api.AuthTestContext(ctx)
	if err != nil {
		return pipeline.Identity{}, c.wrap("auth.test", err)
	}
	return pipeline.Identity{UserID: resp.UserID, BotID: resp.BotID, TeamID: resp.TeamID}, nil
}

// wrap names the failed method and scrubs the token from err's text; the
// original error stays reachable with errors.As (*slack.RateLimitedError,
// slack.SlackErrorResponse, ...).
func (c *Chat) wrap(method string, err error) error {
	text := err.Error()
	if c.botToken != "" {
		text = strings.ReplaceAll(text, c.botToken, "[redacted]")
	}
	return &strippedError{text: method + ": " + text, err: err}
}

// strippedError shows text in place of err's own message.
type strippedError struct {
	text string
	err  error
}

func (e *strippedError) Error() string { return e.text }

func (e *strippedError) Unwrap() error { return e.err }
