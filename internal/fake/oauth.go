package fake

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// LoginCookie is the cookie by which a test's browser says who is signed
// in at the [OAuth] server: its value is the account.
const LoginCookie = "fake_login"

// OAuth is an authorization server for tests (RFC 8414 metadata, dynamic
// client registration, authorization code with PKCE S256 only, refresh
// with rotation, revocation): what a tool server's sign-in meets. Who
// signs in is the browser's LoginCookie; without it /authorize answers
// access_denied. Codes work once; refresh tokens rotate and work once.
// The zero ExpiresIn gives tokens of an hour.
type OAuth struct {
	*httptest.Server
	// ExpiresIn is the lifetime of the access tokens it issues, in
	// seconds; set before the sign-in.
	ExpiresIn int
	// RefuseRefresh makes every refresh an invalid_grant.
	RefuseRefresh bool

	mu       sync.Mutex
	clients  map[string][]string // client id → redirect URIs
	codes    map[string]*oauthCode
	access   map[string]oauthToken
	refresh  map[string]string // refresh token → account
	revoked  []string
	counts   map[string]int
	accounts map[string]string // access token → account, also revoked/expired ones
	t        testing.TB
}

type oauthCode struct {
	account, client, redirect, challenge, resource string
	used                                           bool
}

type oauthToken struct {
	account string
	expires time.Time
}

// NewOAuth starts the server; it stops with the test.
func NewOAuth(t testing.TB) *OAuth {
	a := &OAuth{clients: map[string][]string{}, codes: map[string]*oauthCode{}, access: map[string]oauthToken{},
		refresh: map[string]string{}, counts: map[string]int{}, accounts: map[string]string{}, t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.meta)
	mux.HandleFunc("POST /register", a.register)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /token", a.token)
	mux.HandleFunc("POST /revoke", a.revoke)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("fake oauth: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

// Verify returns the account of a live access token.
func (a *OAuth) Verify(token string) (account string, expires time.Time, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tk, ok := a.access[token]
	if !ok || time.Now().After(tk.expires) {
		return "", time.Time{}, false
	}
	return tk.account, tk.expires, true
}

// Count is how many requests of a kind it answered: "register",
// "authorize", "code" (exchanges), "refresh", "refused" (refreshes
// refused), "revoke".
func (a *OAuth) Count(kind string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.counts[kind]
}

// Revoked are the tokens revoked, in order.
func (a *OAuth) Revoked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.revoked...)
}

// Issued are every access and refresh token it issued (live or not): a
// test looks for them where they must not be.
func (a *OAuth) Issued() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for tok := range a.accounts {
		out = append(out, tok)
	}
	return out
}

// Expire makes every live access token expired now (a token the server
// refuses before the client's clock says so).
func (a *OAuth) Expire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, tk := range a.access {
		tk.expires = time.Now().Add(-time.Second)
		a.access[k] = tk
	}
}

func (a *OAuth) meta(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
		"registration_endpoint": a.URL + "/register", "revocation_endpoint": a.URL + "/revoke",
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
	})
}

func (a *OAuth) register(w http.ResponseWriter, r *http.Request) {
	var m struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "client-" + randomHex(8)
	a.mu.Lock()
	a.clients[id] = m.RedirectURIs
	a.counts["register"]++
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs,
		"token_endpoint_auth_method": "none"})
}

func (a *OAuth) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a.mu.Lock()
	a.counts["authorize"]++
	redirects, known := a.clients[q.Get("client_id")]
	a.mu.Unlock()
	redirect := q.Get("redirect_uri")
	okRedirect := false
	for _, u := range redirects {
		okRedirect = okRedirect || u == redirect
	}
	if !known || !okRedirect || q.Get("response_type") != "code" {
		http.Error(w, "unknown client or redirect", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(redirect)
	v := url.Values{"state": {q.Get("state")}}
	login, err := r.Cookie(LoginCookie)
	switch {
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		v.Set("error", "invalid_request")
	case err != nil || login.Value == "":
		v.Set("error", "access_denied")
	default:
		code := randomHex(16)
		a.mu.Lock()
		a.codes[code] = &oauthCode{account: login.Value, client: q.Get("client_id"), redirect: redirect,
			challenge: q.Get("code_challenge"), resource: q.Get("resource")}
		a.mu.Unlock()
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (a *OAuth) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var account string
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := a.codes[r.PostForm.Get("code")]
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || c.used || c.client != r.PostForm.Get("client_id") || c.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			if ok {
				c.used = true
			}
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		c.used = true
		account = c.account
		a.counts["code"]++
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		acc, ok := a.refresh[rt]
		if !ok || a.RefuseRefresh {
			a.counts["refused"]++
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(a.refresh, rt) // rotation: each refresh token works once
		account = acc
		a.counts["refresh"]++
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	life := a.ExpiresIn
	if life == 0 {
		life = 3600
	}
	access, refresh := "at-"+randomHex(16), "rt-"+randomHex(16)
	a.access[access] = oauthToken{account: account, expires: time.Now().Add(time.Duration(life) * time.Second)}
	a.refresh[refresh] = account
	a.accounts[access], a.accounts[refresh] = account, account
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": life,
		"refresh_token": refresh, "account": account})
}

func (a *OAuth) revoke(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	tok := r.PostForm.Get("token")
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counts["revoke"]++
	a.revoked = append(a.revoked, tok)
	delete(a.access, tok)
	delete(a.refresh, tok)
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
