package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// slackMaxBody bounds what the fake reads of a request body.
const slackMaxBody = 64 << 20

// slackCall is one parsed Web API call.
type slackCall struct {
	method string
	token  string
	params url.Values // without the token
	base   string
	cfg    slackConfig
}

// slackMethod answers one Web API method; it runs without the lock and
// returns the fields of a successful answer ("ok" is added), or an error
// code. after, when set, runs once the answer is written.
type slackMethod func(s *Slack, c *slackCall) (answer map[string]any, code string, after func())

var slackMethods = map[string]slackMethod{
	"auth.test":                   (*Slack).authTest,
	"apps.connections.open":       (*Slack).connectionsOpen,
	"chat.postMessage":            (*Slack).postMessage,
	"chat.update":                 (*Slack).updateMessage,
	"chat.postEphemeral":          (*Slack).postEphemeral,
	"assistant.threads.setStatus": (*Slack).setStatus,
	// The agent surface: slack_agentview.go.
	"agents.sessions.setStatus":             (*Slack).setSessionStatus,
	"agents.sessions.rename":                (*Slack).renameSession,
	"views.publish":                         (*Slack).publishView,
	"assistant.threads.setSuggestedPrompts": (*Slack).setSuggestedPrompts,
	"files.getUploadURLExternal":            (*Slack).getUploadURL,
	"files.completeUploadExternal":          (*Slack).completeUpload,
	"users.info":                            (*Slack).usersInfo,
	"conversations.replies":                 (*Slack).conversationsReplies,
	"conversations.history":                 (*Slack).conversationsHistory,
	"conversations.info":                    (*Slack).conversationsInfo,
	"conversations.members":                 (*Slack).conversationsMembers,
	"reactions.add":                         (*Slack).reactionsAdd,
	"reactions.remove":                      (*Slack).reactionsRemove,
	"chat.startStream":                      (*Slack).startStream,
	"chat.appendStream":                     (*Slack).appendStream,
	"chat.stopStream":                       (*Slack).stopStream,
	"assistant.search.context":              (*Slack).searchContext,
}

func (s *Slack) serveMethod(w http.ResponseWriter, r *http.Request, method string) {
	token, params, err := slackParseRequest(r)
	s.mu.Lock()
	s.calls = append(s.calls, method)
	s.requests = append(s.requests, Request{Method: method, Params: params})
	c := &slackCall{method: method, token: token, params: params, base: slackBase(r), cfg: s.cfg()}
	fault := ""
	if err == nil && token == c.cfg.botToken {
		fault = s.nextFault(method)
	}
	s.notify()
	s.mu.Unlock()

	if c.cfg.scopes != nil && token == c.cfg.botToken {
		w.Header().Set("X-OAuth-Scopes", strings.Join(c.cfg.scopes, ","))
	}
	handler, ok := slackMethods[method]
	switch {
	case !ok:
		s.failf("fake slack: unknown Web API method %q", method)
		slackWriteError(w, "unknown_method")
		return
	case err != nil:
		s.failf("fake slack: %s: unreadable request: %v", method, err)
		slackWriteError(w, "invalid_form_data")
		return
	}
	if method != "auth.test" && method != "apps.connections.open" && token != c.cfg.botToken {
		s.failf("fake slack: %s called without the bot token", method)
		slackWriteError(w, slackTokenError(c.cfg, token))
		return
	}
	if code := c.cfg.errors[method]; code != "" {
		slackWriteMethodError(w, c, code)
		return
	}
	status, landed := 0, false
	switch {
	case fault == "":
	case fault == "hangup":
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		http.Error(w, "hangup", http.StatusBadGateway)
		return
	case strings.HasPrefix(fault, "ratelimited:"):
		slackWriteRateLimited(w, strings.TrimPrefix(fault, "ratelimited:"))
		return
	case strings.HasPrefix(fault, "http:"):
		code, rest, _ := strings.Cut(strings.TrimPrefix(fault, "http:"), ":")
		status, _ = strconv.Atoi(code)
		if status == 0 {
			s.failf("fake slack: bad fault %q", fault)
			status = http.StatusInternalServerError
		}
		if landed = rest == "landed"; !landed {
			slackWriteStatus(w, status)
			return
		}
	default:
		slackWriteMethodError(w, c, fault)
		return
	}
	answer, code, after := handler(s, c)
	if status != 0 {
		slackWriteStatus(w, status)
		return
	}
	if code != "" {
		slackWriteError(w, code)
		return
	}
	if answer == nil {
		answer = map[string]any{}
	}
	answer["ok"] = true
	if warning := c.cfg.warnings[method]; warning != "" {
		answer["warning"] = warning
	}
	slackWriteJSON(w, answer)
	if after != nil {
		after()
	}
}

// slackTokenError is the platform's answer to a call with the wrong token.
func slackTokenError(cfg slackConfig, token string) string {
	switch token {
	case "":
		return "not_authed"
	case cfg.appToken, cfg.botToken:
		return "not_allowed_token_type"
	}
	return "invalid_auth"
}

// slackParseRequest reads the token and the parameters of a Web API call:
// from the query, a form body or a JSON body; a Bearer token wins over a
// token parameter.
func slackParseRequest(r *http.Request) (string, url.Values, error) {
	params := url.Values{}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType == "application/json" {
		body, err := io.ReadAll(io.LimitReader(r.Body, slackMaxBody))
		if err != nil {
			return "", nil, fmt.Errorf("read body: %w", err)
		}
		if b := bytes.TrimSpace(body); len(b) > 0 && string(b) != "null" {
			var fields map[string]any
			if err := json.Unmarshal(b, &fields); err != nil {
				return "", nil, fmt.Errorf("decode json body: %w", err)
			}
			for k, v := range fields {
				if str, ok := v.(string); ok {
					params.Set(k, str)
					continue
				}
				raw, _ := json.Marshal(v)
				params.Set(k, string(raw))
			}
		}
		for k, vs := range r.URL.Query() {
			params[k] = append(params[k], vs...)
		}
	} else {
		r.Body = http.MaxBytesReader(nil, r.Body, slackMaxBody)
		if err := r.ParseForm(); err != nil {
			return "", nil, fmt.Errorf("parse form: %w", err)
		}
		for k, vs := range r.Form {
			params[k] = vs
		}
	}
	token := params.Get("token")
	params.Del("token")
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token = bearer
	}
	return token, params, nil
}

func (s *Slack) authTest(c *slackCall) (map[string]any, string, func()) {
	switch {
	case c.cfg.authError != "":
		return nil, c.cfg.authError, nil
	case c.token != c.cfg.botToken:
		return nil, slackTokenError(c.cfg, c.token), nil
	}
	return map[string]any{
		"url": "https://fake-workspace.slack.com/", "team": "Fake Workspace", "user": "persona",
		"team_id": c.cfg.teamID, "user_id": c.cfg.botUserID, "bot_id": c.cfg.botID, "is_enterprise_install": false,
	}, "", nil
}

func (s *Slack) connectionsOpen(c *slackCall) (map[string]any, string, func()) {
	switch {
	case c.cfg.authError != "":
		return nil, c.cfg.authError, nil
	case c.token != c.cfg.appToken:
		return nil, slackTokenError(c.cfg, c.token), nil
	}
	s.mu.Lock()
	ticket := s.socket.newTicket(s)
	s.mu.Unlock()
	u := "ws" + strings.TrimPrefix(c.base, "http") + slackSocketPath + "?ticket=" + ticket + "&app_id=" + c.cfg.appID
	return map[string]any{"url": u}, "", nil
}

func (s *Slack) postMessage(c *slackCall) (map[string]any, string, func()) {
	channel, text, thread := c.params.Get("channel"), c.params.Get("text"), c.params.Get("thread_ts")
	if channel == "" {
		return nil, "channel_not_found", nil
	}
	if text == "" && c.params.Get("blocks") == "" && c.params.Get("attachments") == "" {
		return nil, "no_text", nil
	}
	if code := s.checkBlocks(c); code != "" {
		return nil, code, nil
	}
	s.mu.Lock()
	ts := s.nextTS()
	if s.messages == nil {
		s.messages = map[string]bool{}
	}
	s.messages[channel+"/"+ts] = true
	s.posts = append(s.posts, slackPost(c, ts, ""))
	s.notify()
	s.mu.Unlock()

	msg := map[string]any{"type": "message", "text": text, "user": c.cfg.botUserID, "bot_id": c.cfg.botID,
		"app_id": c.cfg.appID, "team": c.cfg.teamID, "ts": ts}
	if thread != "" {
		msg["thread_ts"] = thread
	}
	if b := c.params.Get("blocks"); b != "" {
		msg["blocks"] = json.RawMessage(b)
	}
	after := s.deliverToOthers(c, channel, ts, thread, text)
	if c.cfg.echo {
		others := after
		after = func() {
			s.SendEvent(Message{TeamID: c.cfg.teamID, User: c.cfg.botUserID, BotID: c.cfg.botID,
				Channel: channel, TS: ts, ThreadTS: thread, Text: text}.Payload())
			if others != nil {
				others()
			}
		}
	}
	return map[string]any{"channel": channel, "ts": ts, "message": msg}, "", after
}

func (s *Slack) updateMessage(c *slackCall) (map[string]any, string, func()) {
	channel, ts := c.params.Get("channel"), c.params.Get("ts")
	if code := s.checkBlocks(c); code != "" {
		return nil, code, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.messages[channel+"/"+ts] {
		return nil, "message_not_found", nil
	}
	s.updates = append(s.updates, slackPost(c, ts, ""))
	s.notify()
	return map[string]any{"channel": channel, "ts": ts, "text": c.params.Get("text")}, "", nil
}

func (s *Slack) postEphemeral(c *slackCall) (map[string]any, string, func()) {
	channel, user := c.params.Get("channel"), c.params.Get("user")
	switch {
	case channel == "":
		return nil, "channel_not_found", nil
	case user == "":
		return nil, "user_not_found", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.nextTS()
	s.ephemerals = append(s.ephemerals, slackPost(c, ts, user))
	s.notify()
	return map[string]any{"message_ts": ts}, "", nil
}

// Block Kit limits the platform enforces (docs.slack.dev, "Reference:
// blocks"): at most 50 blocks a message, 3,000 characters of a section's
// text.
const (
	slackMaxBlocks      = 50
	slackMaxSectionText = 3000
)

// checkBlocks refuses, as the platform does (invalid_blocks), blocks past
// its limits, and fails the test: the runtime must never send them.
func (s *Slack) checkBlocks(c *slackCall) string {
	raw := c.params.Get("blocks")
	if raw == "" {
		return ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		s.failf("fake slack: %s: blocks are not a JSON array: %v", c.method, err)
		return "invalid_blocks_format"
	}
	if len(blocks) > slackMaxBlocks {
		s.failf("fake slack: %s: %d blocks, the limit is %d", c.method, len(blocks), slackMaxBlocks)
		return "invalid_blocks"
	}
	for i, b := range blocks {
		if b.Type == "section" && b.Text != nil && len([]rune(b.Text.Text)) > slackMaxSectionText {
			s.failf("fake slack: %s: section %d has %d characters, the limit is %d", c.method, i, len([]rune(b.Text.Text)), slackMaxSectionText)
			return "invalid_blocks"
		}
	}
	return ""
}

// slackPost records a chat call.
func slackPost(c *slackCall, ts, user string) Post {
	p := Post{Method: c.method, Channel: c.params.Get("channel"), TS: ts, ThreadTS: c.params.Get("thread_ts"),
		Text: c.params.Get("text"), User: user, Params: c.params, At: time.Now()}
	if b := c.params.Get("blocks"); b != "" {
		p.Blocks = json.RawMessage(b)
	}
	return p
}

func (s *Slack) setStatus(c *slackCall) (map[string]any, string, func()) {
	channel, thread := c.params.Get("channel_id"), c.params.Get("thread_ts")
	if channel == "" || thread == "" {
		return nil, "invalid_arguments", nil
	}
	st := Status{Channel: channel, ThreadTS: thread, Status: c.params.Get("status")}
	if lm := c.params.Get("loading_messages"); strings.HasPrefix(lm, "[") {
		// A JSON body's array.
		if err := json.Unmarshal([]byte(lm), &st.LoadingMessages); err != nil {
			return nil, "invalid_arguments", nil
		}
	} else if lm != "" {
		st.LoadingMessages = strings.Split(lm, ",")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, st)
	s.notify()
	return nil, "", nil
}

// slackPendingUpload is a file announced by files.getUploadURLExternal and
// not yet completed.
type slackPendingUpload struct {
	name     string
	length   int
	content  []byte
	uploaded bool
}

func (s *Slack) getUploadURL(c *slackCall) (map[string]any, string, func()) {
	name := c.params.Get("filename")
	length, err := strconv.Atoi(c.params.Get("length"))
	if name == "" || err != nil || length <= 0 {
		return nil, "invalid_arguments", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextFileID()
	if s.pending == nil {
		s.pending = map[string]*slackPendingUpload{}
	}
	s.pending[id] = &slackPendingUpload{name: name, length: length}
	return map[string]any{"upload_url": c.base + "upload/" + id, "file_id": id}, "", nil
}

// serveUpload receives the bytes of an announced upload, as multipart field
// "file" (what slack-go sends) or as the raw body.
func (s *Slack) serveUpload(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	s.calls = append(s.calls, "(upload)")
	cfg := s.cfg()
	up := s.pending[id]
	s.mu.Unlock()
	if r.Method != http.MethodPost || up == nil {
		s.failf("fake slack: %s of unknown upload URL %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && bearer != cfg.botToken {
		s.failf("fake slack: upload URL called with a token that is not the bot token")
	}
	content, err := slackUploadContent(r)
	if err != nil {
		s.failf("fake slack: upload %s: %v", id, err)
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	if len(content) != up.length {
		s.failf("fake slack: upload %s: got %d bytes, files.getUploadURLExternal announced %d", id, len(content), up.length)
	}
	s.mu.Lock()
	up.content, up.uploaded = content, true
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	_, _ = fmt.Fprintf(w, "OK - %d", len(content))
}

func slackUploadContent(r *http.Request) ([]byte, error) {
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "multipart/form-data" {
		return io.ReadAll(io.LimitReader(r.Body, slackMaxBody))
	}
	if err := r.ParseMultipartForm(slackMaxBody); err != nil {
		return nil, fmt.Errorf("parse multipart: %w", err)
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		return nil, fmt.Errorf("multipart field file: %w", err)
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (s *Slack) completeUpload(c *slackCall) (map[string]any, string, func()) {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(c.params.Get("files")), &files); err != nil || len(files) == 0 {
		s.failf("fake slack: files.completeUploadExternal: bad files parameter %q", c.params.Get("files"))
		return nil, "invalid_arguments", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, f := range files {
		up := s.pending[f.ID]
		if up == nil || !up.uploaded {
			s.failf("fake slack: files.completeUploadExternal of file %q never uploaded", f.ID)
			return nil, "file_not_found", nil
		}
		delete(s.pending, f.ID)
		done := Upload{FileID: f.ID, Filename: up.name, Title: f.Title, Content: up.content,
			Channel: c.params.Get("channel_id"), ThreadTS: c.params.Get("thread_ts"),
			InitialComment: c.params.Get("initial_comment"),
			URL:            slackFileURL(c.base, c.cfg.teamID, f.ID, up.name)}
		s.storeFile(f.ID, up.content)
		s.uploads = append(s.uploads, done)
		out = append(out, map[string]any{"id": f.ID, "title": f.Title})
	}
	s.notify()
	return map[string]any{"files": out}, "", nil
}

// serveDownload serves files-pri/<team>-<id>/download/<name> to the bot
// token. A fetch of the file's url_private (files-pri/<team>-<id>/<name>)
// fails the test: the platform serves that address too, but the runtime
// downloads by url_private_download (issue 25), which this checks.
func (s *Slack) serveDownload(w http.ResponseWriter, r *http.Request, rest string) {
	s.mu.Lock()
	s.calls = append(s.calls, "(download)")
	cfg := s.cfg()
	dir, file, _ := strings.Cut(rest, "/")
	if !strings.HasPrefix(file, "download/") {
		s.mu.Unlock()
		s.failf("fake slack: %s fetched by its url_private, not its url_private_download", r.URL.Path)
		http.NotFound(w, r)
		return
	}
	id := strings.TrimPrefix(dir, cfg.teamID+"-")
	content, ok := s.files[id]
	redirect := s.redirects[id]
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodGet || !ok:
		s.failf("fake slack: %s of unknown file %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	case r.Header.Get("Authorization") != "Bearer "+cfg.botToken:
		s.failf("fake slack: download of %s without the bot token", id)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	if redirect != "" {
		http.Redirect(w, r, redirect, http.StatusFound)
		return
	}
	if cfg.scopes != nil && !slices.Contains(cfg.scopes, "files:read") {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, SlackSignInPage)
		return
	}
	w.Header().Set("Content-Type", slackMimeType(path.Base(r.URL.Path)))
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	_, _ = w.Write(content)
}

// SlackSignInPage is what the fake serves for a file download when the
// bot token lacks files:read (Slack.Scopes): like the platform, an HTML
// sign-in page with status 200.
const SlackSignInPage = "<!DOCTYPE html>\n<html lang=\"en-US\">\n<head><meta charset=\"utf-8\"><title>Slack</title></head>\n" +
	"<body><form id=\"signin_form\" action=\"/\" method=\"post\">Sign in to your workspace</form></body>\n</html>\n"

// slackMimeType guesses a file's type from its name, as the platform does.
func slackMimeType(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// startStream starts a streamed message (chat.startStream): a thread is
// required; the message can be appended to until it is stopped, and is a
// message chat.update can edit.
func (s *Slack) startStream(c *slackCall) (map[string]any, string, func()) {
	channel, thread := c.params.Get("channel"), c.params.Get("thread_ts")
	switch {
	case channel == "":
		return nil, "channel_not_found", nil
	case thread == "":
		return nil, "invalid_arguments", nil
	}
	chunks, code := streamChunks(c, false)
	if code != "" {
		return nil, code, nil
	}
	if mode := c.params.Get("task_display_mode"); mode != "" && mode != "timeline" && mode != "plan" && mode != "dense" {
		return nil, "invalid_arguments", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.nextTS()
	if s.messages == nil {
		s.messages = map[string]bool{}
	}
	s.messages[channel+"/"+ts] = true
	p := slackPost(c, ts, "")
	p.Text, p.Chunks = c.params.Get("markdown_text"), chunks
	s.streams = append(s.streams, p)
	s.notify()
	return map[string]any{"channel": channel, "ts": ts}, "", nil
}

func (s *Slack) appendStream(c *slackCall) (map[string]any, string, func()) {
	return s.streamCall(c, true)
}

func (s *Slack) stopStream(c *slackCall) (map[string]any, string, func()) {
	return s.streamCall(c, false)
}

// streamCall records an append to or the stop of a started stream.
func (s *Slack) streamCall(c *slackCall, appending bool) (map[string]any, string, func()) {
	channel, ts := c.params.Get("channel"), c.params.Get("ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	started, stopped, chunked := false, false, false
	for _, p := range s.streams {
		if p.Channel == channel && p.TS == ts {
			if p.Method == "chat.startStream" {
				started, chunked = true, p.Chunks != nil
			}
			stopped = stopped || p.Method == "chat.stopStream"
		}
	}
	chunks, code := streamChunks(c, appending)
	switch {
	case !started:
		return nil, "message_not_found", nil
	case stopped || s.halted[channel+"/"+ts]:
		return nil, "message_not_in_streaming_state", nil
	case code != "":
		return nil, code, nil
	case chunked && c.params.Get("markdown_text") != "", !chunked && chunks != nil:
		// The mode is fixed by the start (platform-notes).
		return nil, "streaming_mode_mismatch", nil
	case appending && !chunked && c.params.Get("markdown_text") == "":
		return nil, "no_text", nil
	}
	p := slackPost(c, ts, "")
	p.Text, p.Chunks = c.params.Get("markdown_text"), chunks
	s.streams = append(s.streams, p)
	s.notify()
	return map[string]any{"channel": channel, "ts": ts}, "", nil
}

// streamChunks reads and checks a stream call's chunks, as the platform
// does: an array of known chunk types, a task_update with an id, a title
// and a known status; not beside markdown_text; required on an append
// without markdown_text (required: the call must carry one or the other).
func streamChunks(c *slackCall, required bool) (json.RawMessage, string) {
	raw := c.params.Get("chunks")
	if raw == "" {
		if required && c.params.Get("markdown_text") == "" {
			return nil, "markdown_text_or_chunks_required"
		}
		return nil, ""
	}
	if c.params.Get("markdown_text") != "" {
		return nil, "cannot_provide_both_markdown_text_and_chunks"
	}
	var chunks []map[string]any
	if err := json.Unmarshal([]byte(raw), &chunks); err != nil || len(chunks) == 0 {
		return nil, "invalid_chunks"
	}
	for _, ch := range chunks {
		switch ch["type"] {
		case "markdown_text":
			if _, ok := ch["text"].(string); !ok {
				return nil, "invalid_chunks"
			}
		case "task_update":
			id, _ := ch["id"].(string)
			title, _ := ch["title"].(string)
			status, _ := ch["status"].(string)
			if id == "" || title == "" || !slices.Contains([]string{"pending", "in_progress", "complete", "error"}, status) {
				return nil, "invalid_chunks"
			}
		case "plan_update":
			if _, ok := ch["title"].(string); !ok {
				return nil, "invalid_chunks"
			}
		case "blocks":
			if b, ok := ch["blocks"].([]any); !ok || len(b) > 50 {
				return nil, "invalid_chunks"
			}
		default:
			return nil, "invalid_chunks"
		}
	}
	return json.RawMessage(raw), ""
}
