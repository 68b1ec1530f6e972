package connect

import (
	"errors"
	"html"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// page writes what the browser shows at the end of a sign-in, its texts
// escaped. Not html/template: executing a template makes the linker keep
// every exported method of every type the binary holds (text/template
// reaches reflect's MethodByName), which made the runtime's binary half
// again as large and slowed every start for one page of three fields.
func page(w io.Writer, title, text, closing string) {
	_, _ = io.WriteString(w, `<!doctype html>
<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>`+html.EscapeString(title)+`</title></head>
<body><p>`+html.EscapeString(text)+`</p><p>`+html.EscapeString(closing)+`</p></body></html>
`)
}

// Routes mounts /oauth/start and /oauth/callback on the HTTP port.
func (c *Connect) Routes(r chi.Router) {
	if c == nil || len(c.servers) == 0 {
		return
	}
	r.Get(StartPath, c.handleStart)
	r.Get(CallbackPath, c.handleCallback)
}

// handleStart sends the browser to the authorization server.
func (c *Connect) handleStart(w http.ResponseWriter, r *http.Request) {
	to, err := c.Start(r.Context(), r.URL.Query().Get("state"))
	if err != nil {
		c.show(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusFound)
}

// handleCallback completes the sign-in.
func (c *Connect) handleCallback(w http.ResponseWriter, r *http.Request) {
	text, err := c.Callback(r.Context(), r.URL.Query())
	if err != nil {
		c.show(w, r, err)
		return
	}
	render(w, http.StatusOK, "Connected", text)
}

// show answers a link that did nothing with its reason (400), and any
// other failure with a generic line (500; the detail is logged).
func (c *Connect) show(w http.ResponseWriter, r *http.Request, err error) {
	var le *linkError
	if errors.As(err, &le) {
		c.log.InfoContext(r.Context(), "sign-in link refused", "path", r.URL.Path, "why", le.msg)
		render(w, http.StatusBadRequest, "Sign-in", le.msg)
		return
	}
	c.log.ErrorContext(r.Context(), "sign-in failed", "path", r.URL.Path, "error", err.Error())
	render(w, http.StatusInternalServerError, "Sign-in", "sign-in failed on our side: try /connect again later")
}

func render(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	page(w, title, text, msgClose)
}
