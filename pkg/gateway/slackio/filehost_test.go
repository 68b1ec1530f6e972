package slackio

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/persona-runtime/agent/internal/fake"
	"github.com/persona-runtime/agent/pkg/gateway"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

func TestMayReceiveToken(t *testing.T) {
	api, _ := url.Parse("http://gateway.internal:8080/api/")
	for addr, want := range map[string]bool{
		"https://files.slack.com/files-pri/T1-F1/download/a.txt": true,
		"https://acme.slack.com/?redir=/files-pri/T1-F1/a.txt":   true,
		"https://files.slack-gov.com/files-pri/T1-F1/a.txt":      true,
		"https://slack.com/api/files.info":                       true,
		"http://gateway.internal:8080/files-pri/T1-F1/a.txt":     true,  // the Web API's own host
		"http://files.slack.com/files-pri/T1-F1/a.txt":           false, // not https
		"https://files.slack.com.evil.example/a.txt":             false,
		"https://evilslack.com/a.txt":                            false,
		"https://slack.com@evil.example/a.txt":                   false,
		"https://files.slack.com:x@evil.example/a.txt":           false,
		"http://gateway.internal:9090/a.txt":                     false, // another port
		"https://gateway.internal:8080/a.txt":                    false, // another scheme
		"https://sub.gateway.internal:8080/a.txt":                false,
		"https://example.com/a.txt":                              false,
	} {
		u, err := url.Parse(addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := mayReceiveToken(api, u); got != want {
			t.Errorf("%s: %v, want %v", addr, got, want)
		}
	}
	if mayReceiveToken(nil, &url.URL{Scheme: "http", Host: "gateway.internal:8080"}) {
		t.Error("no API address: a foreign host gets the token")
	}
}

// A redirect off the token's hosts, or after one, drops the token; one
// within them keeps it; the default limit of 10 redirects holds.
func TestTokenRedirects(t *testing.T) {
	api, _ := url.Parse("https://slack.com/api/")
	policy := tokenRedirects(api, nil)
	req := func(addr string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, addr, nil)
		r.Header.Set("Authorization", "Bearer xoxb-1")
		return r
	}
	first := req("https://files.slack.com/files-pri/T1-F1/download/a.txt")
	for _, tt := range []struct {
		name string
		via  []*http.Request
		to   string
		keep bool
	}{
		{"to the workspace's sign-in page", []*http.Request{first}, "https://acme.slack.com/?redir=x", true},
		{"to plain http on the same host", []*http.Request{first}, "http://files.slack.com/a.txt", false},
		{"to another host", []*http.Request{first}, "https://cdn.example/a.txt", false},
		{"back to the platform after another host", []*http.Request{first, req("https://cdn.example/a.txt")}, "https://files.slack.com/b.txt", false},
	} {
		r := req(tt.to)
		if err := policy(r, tt.via); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := r.Header.Get("Authorization") != ""; got != tt.keep {
			t.Errorf("%s: token kept %v, want %v", tt.name, got, tt.keep)
		}
	}
	via := make([]*http.Request, 10)
	for i := range via {
		via[i] = first
	}
	if err := policy(req("https://files.slack.com/a"), via); err == nil {
		t.Error("an 11th redirect was followed")
	}
}

// A download whose address is not the platform's nor the Web API's is not
// made: it fails with gateway.ErrFileHost and the server never sees it.
func TestDownloadRefusesAForeignHost(t *testing.T) {
	hits := 0
	foreign := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer foreign.Close()
	s := fake.NewSlack(t)
	chat := NewChat(NewClient(fake.DefaultBotToken, fake.DefaultAppToken, s.URL(), nil), fake.DefaultBotToken, s.URL(),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	var out strings.Builder
	_, err := chat.DownloadTo(t.Context(), pipeline.File{ID: "F1", Name: "a.txt", URL: foreign.URL + "/a.txt"}, &out, 1<<20)
	if !errors.Is(err, gateway.ErrFileHost) || hits != 0 {
		t.Fatalf("err = %v, %d requests to the foreign host", err, hits)
	}
	if strings.Contains(err.Error(), fake.DefaultBotToken) {
		t.Errorf("the error shows the token: %v", err)
	}
}
