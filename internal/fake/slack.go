package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Defaults of the Slack fake's credentials and identity, used for every
// empty field of [Slack] and by the payload builders.
const (
	DefaultBotToken  = "xoxb-test-token"
	DefaultAppToken  = "xapp-test-token"
	DefaultBotUserID = "U0BOT"
	DefaultBotID     = "B0BOT"
	DefaultTeamID    = "T0TEAM"
	DefaultAppID     = "A0APP"
)

// Slack is an in-process fake of the Slack Web API and of Socket Mode.
//
// Web API methods are answered at URL()+method, form-encoded or JSON, with
// the token in the body or as Authorization: Bearer, like the platform:
// auth.test, apps.connections.open, chat.postMessage, chat.update,
// chat.postEphemeral, assistant.threads.setStatus, agents.sessions.setStatus
// and assistant.threads.setSuggestedPrompts (ClickStop is the sessions'
// stop button), files.getUploadURLExternal
// (its upload URL lives on the fake) and files.completeUploadExternal,
// users.info and conversations.replies (a thread's messages, oldest first,
// paged: the bot's posts with their metadata, and the messages of people
// and other bots that the fake sent over the socket or was given with
// AddMessage); files registered with AddFile or uploaded are served at
// their url_private_download (Bearer bot token required). Fail queues
// one-time failures (error codes, HTTP statuses, rate limits, hang-ups). Socket Mode is served at
// the address apps.connections.open returns: the fake sends hello, pings,
// sends the envelopes of Send and records the acks.
//
// The zero value is ready to use: it serves as an [http.Handler], and URL
// starts a server on first use. [NewSlack] starts one bound to a test. Set
// the exported fields before the code under test calls the fake, or change
// them later with Script. All methods are safe for concurrent use.
//
// An unknown method or path, a Web API call without the bot token, a
// download without it, an ack of an envelope never sent and an unknown
// socket ticket fail T (when set) and are answered as the platform answers
// them. Wrong credentials at auth.test and apps.connections.open are a
// platform answer, not a test failure: startup code is expected to meet them.
type Slack struct {
	// T is failed (with Errorf) for every request the fake does not
	// recognise. Nil: such requests are only answered, not reported.
	T testing.TB

	BotToken  string // default DefaultBotToken
	AppToken  string // default DefaultAppToken
	BotUserID string // default DefaultBotUserID
	BotID     string // default DefaultBotID
	TeamID    string // default DefaultTeamID
	AppID     string // default DefaultAppID

	// AuthError, when set, is the error code ("invalid_auth", ...) that
	// auth.test and apps.connections.open answer, whatever the token.
	AuthError string
	// EchoPosts makes every chat.postMessage come back over the socket as a
	// message event carrying the bot's bot_id, as the platform does.
	EchoPosts bool
	// Errors maps a Web API method to the error code it answers
	// ({"ok":false,"error":code}) instead of succeeding.
	Errors map[string]string
	// Warnings maps a Web API method to the warning its successful
	// answers carry ({"ok":true,"warning":…}).
	Warnings map[string]string
	// Scopes, when set, are the bot token's granted scopes: every Web API
	// answer carries them in X-OAuth-Scopes, as the platform's do. Set
	// without files:read, a file download answers the platform's HTML
	// sign-in page (status 200, text/html) instead of the file, as the
	// platform does.
	Scopes []string
	// PingInterval is how often the fake pings each socket; default 5 s,
	// well inside slack-go's 30 s dead-connection interval.
	PingInterval time.Duration
	// Spread sends envelopes to every open socket in turn, as the platform
	// spreads them over an app's connections (replicas), and sends the
	// envelopes a socket took but never acknowledged again, as retries, on
	// another when it closes. Unset: all go to the newest socket.
	Spread bool
	// Searchable are the messages assistant.search.context finds (by a
	// word of the query), each as the person an action token acts for
	// may see it (slack_search.go).
	Searchable []SearchMessage

	mu         sync.Mutex
	srv        *httptest.Server
	conns      Conns // connections the clients opened (HTTPConnections)
	closed     bool
	changed    chan struct{} // closed and replaced whenever a record changes
	seq        int           // ts, file ids, envelope ids and tickets
	calls      []string
	requests   []Request
	posts      []Post
	updates    []Post
	ephemerals []Post
	uploads    []Upload
	statuses   []Status
	streams    []Post                         // chat.startStream, appendStream, stopStream calls, in order
	halted     map[string]bool                // channel+"/"+ts of streams the stop button stopped
	sessions   []SessionStatus                // agents.sessions.setStatus calls, in order
	renames    []SessionStatus                // agents.sessions.rename calls, in order
	views      []View                         // views.publish calls, in order
	session    map[string]*SessionStatus      // channel+"/"+thread → the session as it stands
	prompts    []SuggestedPrompts             // assistant.threads.setSuggestedPrompts calls, in order
	pending    map[string]*slackPendingUpload // by file id
	files      map[string][]byte              // file id → content served for download
	redirects  map[string]string              // file id → where its download is redirected (AddFileRedirect)
	messages   map[string]bool                // channel+"/"+ts of the bot's posts
	history    map[string][]slackStored       // by channel: people's messages (slack_read.go)
	people     map[string]Person              // by user id
	convs      map[string]Conversation        // by conversation id
	reactions  map[string][]string            // channel+"/"+ts → the bot's reactions
	faults     map[string][]string            // by method: one-time failures of the next calls (Fail)
	socket     slackSocket
	wg         sync.WaitGroup // socket goroutines
	others     []*Slack       // the other apps of its workspace (Workspace)
	tsSeq      *atomic.Int64  // the workspace's ts sequence; nil on its own
}

// Post is a chat.postMessage, chat.update or chat.postEphemeral call the fake
// received.
type Post struct {
	Method   string // "chat.postMessage", "chat.update" or "chat.postEphemeral"
	Channel  string
	TS       string // the ts the fake gave a post or ephemeral; the edited ts of an update
	ThreadTS string
	Text     string
	Blocks   json.RawMessage // nil when the call carried none
	Chunks   json.RawMessage // a stream call's chunks; nil when it carried none
	User     string          // the recipient of an ephemeral message
	Params   url.Values      // every parameter of the call but the token
	At       time.Time       // when the fake received it
}

// Upload is a file uploaded through files.getUploadURLExternal, the upload
// URL and files.completeUploadExternal.
type Upload struct {
	FileID         string
	Filename       string
	Title          string
	Content        []byte
	Channel        string
	ThreadTS       string
	InitialComment string
	URL            string // where the fake now serves it (url_private_download)
}

// Status is an assistant.threads.setStatus call.
type Status struct {
	Channel         string
	ThreadTS        string
	Status          string // "" clears the status
	LoadingMessages []string
}

// NewSlack returns a Slack fake reporting to t, served by a started server
// that is closed when the test ends.
func NewSlack(t testing.TB) *Slack {
	t.Helper()
	s := &Slack{T: t}
	s.URL()
	return s
}

// URL returns the Web API base address, ending with "/" (what
// slack.OptionAPIURL and CHAT_API_URL take). It starts the fake's server on
// first use and, when T is set, registers Close as a test cleanup.
func (s *Slack) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		s.srv = httptest.NewUnstartedServer(s)
		s.conns.watch(s.srv)
		s.srv.Start()
		if s.T != nil {
			s.T.Cleanup(s.Close)
		}
	}
	return s.srv.URL + "/"
}

// HTTPConnections returns how many connections the clients opened to the
// fake's server: the Web API calls', the file transfers' and the sockets'
// (Connections counts the sockets alone).
func (s *Slack) HTTPConnections() int { return int(s.conns.Opened()) }

// Close closes the sockets and stops the server, waiting for the requests
// and socket goroutines in flight. Calling it again does nothing.
func (s *Slack) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	srv := s.srv
	conns := s.socket.all()
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
	if srv != nil {
		srv.Close()
	}
	s.wg.Wait()
}

// Script runs f with the fake locked, to change its exported fields while
// the code under test is calling it. f must not call the fake's methods.
func (s *Slack) Script(f func(s *Slack)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// Calls returns the Web API methods called so far, in order. The POST of an
// upload URL appears as "(upload)" and a file download as "(download)".
func (s *Slack) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Request is a Web API call the fake received: its method and every
// parameter but the token.
type Request struct {
	Method string
	Params url.Values
}

// Requests returns the Web API calls so far, in order, with their
// parameters (what a test checks a call was confined to).
func (s *Slack) Requests() []Request { return slackCopy(s, &s.requests) }

// ForgetCalls drops the records of the Web API calls made so far (Calls,
// Requests, Updates, Statuses, Streams, SessionStatuses), keeping the
// posts and what the workspace holds: a test that measures its own
// process's memory counts the service, not the fake's growing logs.
func (s *Slack) ForgetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls, s.requests, s.updates, s.statuses, s.streams, s.sessions = nil, nil, nil, nil, nil, nil
}

// Posts returns the chat.postMessage calls so far, in order.
func (s *Slack) Posts() []Post { return slackCopy(s, &s.posts) }

// Updates returns the chat.update calls so far, in order.
func (s *Slack) Updates() []Post { return slackCopy(s, &s.updates) }

// Streams returns the chat.startStream, chat.appendStream and
// chat.stopStream calls, in order; Text is the call's markdown_text.
func (s *Slack) Streams() []Post { return slackCopy(s, &s.streams) }

// Ephemerals returns the chat.postEphemeral calls so far, in order.
func (s *Slack) Ephemerals() []Post { return slackCopy(s, &s.ephemerals) }

// Uploads returns the completed uploads so far, in order.
func (s *Slack) Uploads() []Upload { return slackCopy(s, &s.uploads) }

// Statuses returns the assistant.threads.setStatus calls so far, in order.
func (s *Slack) Statuses() []Status { return slackCopy(s, &s.statuses) }

// WaitForPost returns the first chat.postMessage, in order, that match
// accepts (nil accepts any), waiting for one until ctx is done.
func (s *Slack) WaitForPost(ctx context.Context, match func(Post) bool) (Post, error) {
	return slackWait(ctx, s, "post", &s.posts, match)
}

// WaitForUpdate is WaitForPost for chat.update calls.
func (s *Slack) WaitForUpdate(ctx context.Context, match func(Post) bool) (Post, error) {
	return slackWait(ctx, s, "update", &s.updates, match)
}

// WaitForEphemeral is WaitForPost for chat.postEphemeral calls.
func (s *Slack) WaitForEphemeral(ctx context.Context, match func(Post) bool) (Post, error) {
	return slackWait(ctx, s, "ephemeral message", &s.ephemerals, match)
}

// WaitForUpload is WaitForPost for completed uploads.
func (s *Slack) WaitForUpload(ctx context.Context, match func(Upload) bool) (Upload, error) {
	return slackWait(ctx, s, "upload", &s.uploads, match)
}

// WaitForStream is WaitForPost for the chat.startStream,
// chat.appendStream and chat.stopStream calls.
func (s *Slack) WaitForStream(ctx context.Context, match func(Post) bool) (Post, error) {
	return slackWait(ctx, s, "stream call", &s.streams, match)
}

// WaitForStatus is WaitForPost for assistant.threads.setStatus calls.
func (s *Slack) WaitForStatus(ctx context.Context, match func(Status) bool) (Status, error) {
	return slackWait(ctx, s, "status", &s.statuses, match)
}

// AddFile registers a file the fake serves at its url_private_download to
// the bot token, and returns it for a message's Files.
func (s *Slack) AddFile(name string, content []byte) File {
	base := s.URL()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextFileID()
	s.storeFile(id, content)
	return File{ID: id, Name: name, Title: name, MimeType: slackMimeType(name), Size: int64(len(content)),
		URLPrivateDownload: slackFileURL(base, s.cfg().teamID, id, name)}
}

// AddFileRedirect registers a file whose url_private_download, on the
// fake, answers the bot token with a redirect (302) to to: a platform that
// sends a download elsewhere.
func (s *Slack) AddFileRedirect(name, to string) File {
	f := s.AddFile(name, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redirects == nil {
		s.redirects = map[string]string{}
	}
	s.redirects[f.ID] = to
	return f
}

// slackCopy returns a copy of the records at p under the lock.
func slackCopy[T any](s *Slack, p *[]T) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(*p)
}

// slackWait waits for the first record at p that match accepts.
func slackWait[T any](ctx context.Context, s *Slack, what string, p *[]T, match func(T) bool) (T, error) {
	seen := 0
	for {
		s.mu.Lock()
		items := slices.Clone((*p)[seen:])
		ch := s.changedCh()
		s.mu.Unlock()
		for _, it := range items {
			if match == nil || match(it) {
				return it, nil
			}
		}
		seen += len(items)
		select {
		case <-ch:
		case <-ctx.Done():
			var zero T
			return zero, fmt.Errorf("fake slack: waiting for a matching %s (%d seen): %w", what, seen, ctx.Err())
		}
	}
}

// await waits until ok, asked with s.mu held at each change, holds; it
// returns ctx's error if ctx is done first.
func (s *Slack) await(ctx context.Context, ok func() bool) error {
	for {
		s.mu.Lock()
		done := ok()
		ch := s.changedCh()
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// changedCh returns the channel closed at the next change; s.mu must be held.
func (s *Slack) changedCh() chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// notify wakes the waiters; s.mu must be held.
func (s *Slack) notify() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

func (s *Slack) failf(format string, args ...any) {
	if s.T != nil {
		s.T.Errorf(format, args...)
	}
}

// slackConfig is a snapshot of the exported fields with defaults applied.
type slackConfig struct {
	botToken, appToken, botUserID, botID, teamID, appID string
	authError                                           string
	echo                                                bool
	errors, warnings                                    map[string]string
	scopes                                              []string
	ping                                                time.Duration
}

// cfg snapshots the configuration; s.mu must be held.
func (s *Slack) cfg() slackConfig {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	ping := s.PingInterval
	if ping <= 0 {
		ping = 5 * time.Second
	}
	return slackConfig{
		botToken: or(s.BotToken, DefaultBotToken), appToken: or(s.AppToken, DefaultAppToken),
		botUserID: or(s.BotUserID, DefaultBotUserID), botID: or(s.BotID, DefaultBotID),
		teamID: or(s.TeamID, DefaultTeamID), appID: or(s.AppID, DefaultAppID),
		authError: s.AuthError, echo: s.EchoPosts, errors: maps.Clone(s.Errors), warnings: maps.Clone(s.Warnings), scopes: slices.Clone(s.Scopes), ping: ping,
	}
}

// Fail queues faults for the next calls of a Web API method, one per
// call, in order: an error code ("not_in_channel") is answered as
// {"ok":false,"error":code}; "http:503" answers that HTTP status without
// doing the call; "ratelimited:30" answers 429 with Retry-After: 30 (and
// the platform's body) without doing the call; "http:503:landed" does the call and then answers the
// status (the platform failed after posting); "hangup" closes the
// connection without an answer.
func (s *Slack) Fail(method string, faults ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.faults == nil {
		s.faults = map[string][]string{}
	}
	s.faults[method] = append(s.faults[method], faults...)
}

// nextFault pops the next fault queued for method; s.mu must be held.
func (s *Slack) nextFault(method string) string {
	q := s.faults[method]
	if len(q) == 0 {
		return ""
	}
	s.faults[method] = q[1:]
	return q[0]
}

// nextTS returns a fresh message ts: 1700000000.000100, .000200, ...; s.mu
// must be held.
func (s *Slack) nextTS() string {
	s.seq++
	if ts, ok := s.workspaceTS(); ok {
		return ts
	}
	micros := int64(s.seq) * 100
	return fmt.Sprintf("%d.%06d", 1700000000+micros/1e6, micros%1e6)
}

// nextFileID returns a fresh file id; s.mu must be held.
func (s *Slack) nextFileID() string {
	s.seq++
	return fmt.Sprintf("F%08d", s.seq)
}

// storeFile makes content downloadable under id; s.mu must be held.
func (s *Slack) storeFile(id string, content []byte) {
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	s.files[id] = slices.Clone(content)
}

// slackFileURL is the url_private_download of a file the fake serves.
func slackFileURL(base, team, id, name string) string {
	return base + "files-pri/" + team + "-" + id + "/download/" + url.PathEscape(name)
}

// ServeHTTP answers the Web API, the upload and download URLs and the
// socket.
func (s *Slack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	switch {
	case path == slackSocketPath:
		s.serveSocket(w, r)
	case strings.HasPrefix(path, "upload/"):
		s.serveUpload(w, r, strings.TrimPrefix(path, "upload/"))
	case strings.HasPrefix(path, "files-pri/"):
		s.serveDownload(w, r, strings.TrimPrefix(path, "files-pri/"))
	case path != "" && !strings.Contains(path, "/"):
		s.serveMethod(w, r, path)
	default:
		s.failf("fake slack: unknown path %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

// slackBase is the fake's base address as the client reached it.
func slackBase(r *http.Request) string {
	return "http://" + r.Host + "/"
}

func slackWriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func slackWriteStatus(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/plain")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "0") // the client's shortest wait
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(http.StatusText(status)))
}

// slackWriteRateLimited answers a rate limit as the platform does: 429,
// Retry-After in seconds, {"ok":false,"error":"ratelimited"}.
func slackWriteRateLimited(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Retry-After", retryAfter)
	w.WriteHeader(http.StatusTooManyRequests)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
}

func slackWriteError(w http.ResponseWriter, code string) {
	slackWriteJSON(w, map[string]any{"ok": false, "error": code})
}

// TaskUpdate is one task_update chunk of a stream call.
type TaskUpdate struct {
	Method  string // chat.startStream, chat.appendStream or chat.stopStream
	TS      string // the streamed message
	ID      string `json:"id"`
	Title   string `json:"title"`
	Status  string `json:"status"`
	Details string `json:"details"`
	Output  string `json:"output"`
}

// TaskUpdates returns the task_update chunks of the stream calls so far,
// in order.
func (s *Slack) TaskUpdates() []TaskUpdate {
	var out []TaskUpdate
	for _, p := range s.Streams() {
		var chunks []json.RawMessage
		_ = json.Unmarshal(p.Chunks, &chunks)
		for _, raw := range chunks {
			var u TaskUpdate
			var kind struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(raw, &kind) != nil || kind.Type != "task_update" || json.Unmarshal(raw, &u) != nil {
				continue
			}
			u.Method, u.TS = p.Method, p.TS
			out = append(out, u)
		}
	}
	return out
}
