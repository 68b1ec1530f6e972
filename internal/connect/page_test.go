package connect

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPageEscapes: the sign-in page carries its texts escaped (a server's
// name or account comes from outside), with its no-store and no-referrer
// headers.
func TestPageEscapes(t *testing.T) {
	w := httptest.NewRecorder()
	render(w, 400, "Sign-in", `connected to <script>x</script> as "a&b"`)
	body := w.Body.String()
	if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;x&lt;/script&gt; as &#34;a&amp;b&#34;") {
		t.Fatalf("texts not escaped:\n%s", body)
	}
	if !strings.Contains(body, "<title>Sign-in</title>") || !strings.Contains(body, "<p>"+msgClose+"</p>") {
		t.Fatalf("page:\n%s", body)
	}
	if w.Code != 400 || w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("status %d, headers %v", w.Code, w.Header())
	}
}
