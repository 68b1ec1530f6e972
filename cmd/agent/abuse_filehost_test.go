package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
)

// The abuse suite, file addresses: the bot token goes with a download only
// to the platform's file hosts (and the Web API's own host), never to an
// address a message names (a remote file's is whatever its author chose),
// nor along a redirect that leaves them.

// foreignFiles is a server that is not the platform's, recording whether a
// request brought an Authorization header.
type foreignFiles struct {
	*httptest.Server
	mu    sync.Mutex
	auth  []string // Authorization headers received
	fetch int      // requests received
}

func newForeignFiles(t *testing.T) *foreignFiles {
	t.Helper()
	f := &foreignFiles{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.fetch++
		if a := r.Header.Get("Authorization"); a != "" {
			f.auth = append(f.auth, a)
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("public bytes\n"))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *foreignFiles) seen() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetch, append([]string(nil), f.auth...)
}

// A file whose url_private_download is on another server is not fetched
// with the token (not fetched at all): the turn still answers, and its
// input names the file as skipped with the host.
func TestAbuseFileURLForeignHost(t *testing.T) {
	foreign := newForeignFiles(t)
	h := newHarness(t, rulesSoul)
	abuseWorkspace(t, h)
	h.script(sayText("r1", "seen"))
	h.start()
	leak := fake.File{ID: "F0LEAK", Name: "leak.txt", Title: "leak.txt", MimeType: "text/plain", Size: 13,
		URLPrivateDownload: foreign.URL + "/files-pri/T0-F0LEAK/download/leak.txt"}
	input := h.attachAndWait(h.slack.AddFile("ok.txt", []byte("fine\n")), leak)
	if n, auth := foreign.seen(); len(auth) != 0 || n != 0 {
		t.Fatalf("the foreign host got %d requests, with Authorization %q", n, auth)
	}
	for _, want := range []string{"- attachments/ok.txt (5 bytes", "- leak.txt: skipped (its address is on 127.0.0.1, not on the chat platform's file hosts)"} {
		if !strings.Contains(input, want) {
			t.Errorf("the turn's input lacks %q:\n%s", want, input)
		}
	}
	if strings.Contains(h.logs.String(), fake.DefaultBotToken) {
		t.Error("the bot token is in the logs")
	}
}

// A download the platform's host redirects to another server (here the
// same address on another port, which net/http would send the header to)
// reaches it without the token.
func TestAbuseFileURLRedirectToForeignHost(t *testing.T) {
	foreign := newForeignFiles(t)
	h := newHarness(t, rulesSoul)
	ws := abuseWorkspace(t, h)
	h.script(sayText("r1", "seen"))
	h.start()
	h.attachAndWait(h.slack.AddFileRedirect("moved.txt", foreign.URL+"/elsewhere/moved.txt"))
	n, auth := foreign.seen()
	if len(auth) != 0 {
		t.Fatalf("the redirect carried the token to the foreign host: %q", auth)
	}
	if n != 1 {
		t.Fatalf("the foreign host got %d requests, want the redirected one", n)
	}
	if got := fake.ReadFile(t, filepath.Join(ws, "attachments", "moved.txt")); got != "public bytes\n" {
		t.Errorf("attachments/moved.txt = %q", got)
	}
}
