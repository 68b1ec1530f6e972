package connect

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// pending is the sealed part of a sign-in state.
type pending struct {
	Verifier string `json:"verifier"`
	// Set when the browser opened the link (Start).
	Client   *client `json:"client,omitempty"`
	Resource string  `json:"resource,omitempty"`
}

// client is how the runtime talks to one authorization server for one
// tool server: its client and endpoints. It travels sealed with each
// token, so that a refresh or a revocation needs no discovery.
type client struct {
	ID         string `json:"client_id"`
	Secret     string `json:"client_secret,omitempty"`
	AuthURL    string `json:"auth_url"`
	TokenURL   string `json:"token_url"`
	AuthStyle  int    `json:"auth_style"`
	RevokeURL  string `json:"revoke_url,omitempty"`
	Issuer     string `json:"issuer,omitempty"`
	UserInfo   string `json:"userinfo_url,omitempty"`
	Registered bool   `json:"registered,omitempty"`
}

// config is the oauth2 configuration of c for srv.
func (c *Connect) config(cl *client, srv Server) *oauth2.Config {
	return &oauth2.Config{ClientID: cl.ID, ClientSecret: cl.Secret, RedirectURL: c.redirectURL(), Scopes: srv.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: cl.AuthURL, TokenURL: cl.TokenURL, AuthStyle: oauth2.AuthStyle(cl.AuthStyle)}}
}

// Begin makes a sign-in link for user to server, bound to them, single
// use, valid StateTTL; channel and thread are where they asked (told
// there once connected). It makes no network call: the discovery runs
// when the browser opens the link (Start).
func (c *Connect) Begin(ctx context.Context, user, server, channel, thread string) (string, error) {
	if c.o.PublicURL == "" {
		return "", &pipeline.UserError{Message: msgNoPublicURL}
	}
	state, hash := c.newState()
	p, err := json.Marshal(pending{Verifier: oauth2.GenerateVerifier()})
	if err != nil {
		return "", err
	}
	sealed, err := c.sealer.Seal(p, "state", user, server)
	if err != nil {
		return "", err
	}
	now := c.clk.Now()
	if err := c.o.Store.PutConnectState(ctx, State{Hash: hash, User: user, Server: server, Channel: channel, ThreadTS: thread,
		Sealed: sealed, Expires: now.Add(StateTTL)}, now); err != nil {
		return "", err
	}
	return strings.TrimRight(c.o.PublicURL, "/") + StartPath + "?state=" + url.QueryEscape(state), nil
}

// linkError is a sign-in link that does nothing, with the reason shown in
// the browser.
type linkError struct{ msg string }

func (e *linkError) Error() string { return e.msg }

// usable opens a state that is neither used nor expired.
func (c *Connect) usable(st State, ok bool) (pending, error) {
	switch {
	case !ok:
		return pending{}, &linkError{msgStateUnknown}
	case !st.Used.IsZero():
		return pending{}, &linkError{msgStateUsed}
	case !c.clk.Now().Before(st.Expires):
		return pending{}, &linkError{msgStateExpired(st.Server)}
	}
	if _, known := c.servers[st.Server]; !known {
		return pending{}, &linkError{msgStateUnknown}
	}
	plain, err := c.sealer.Open(st.Sealed, "state", st.User, st.Server)
	if err != nil {
		// Sealed for another person or server: a row tampered with.
		return pending{}, &linkError{msgStateOther}
	}
	var p pending
	if err := json.Unmarshal(plain, &p); err != nil {
		return pending{}, &linkError{msgStateUnknown}
	}
	return p, nil
}

// Start is the browser opening a sign-in link: the server's
// authorization is discovered, the client registered when the operator
// gave none, and the authorization server's address returned (with PKCE
// S256 and the resource). The state stays usable until the callback.
func (c *Connect) Start(ctx context.Context, state string) (string, error) {
	hash := hashState(state)
	st, ok, err := c.o.Store.ConnectState(ctx, hash)
	if err != nil {
		return "", err
	}
	p, err := c.usable(st, ok)
	if err != nil {
		return "", err
	}
	srv := c.servers[st.Server]
	cl, resource, err := c.discover(ctx, srv)
	if err != nil {
		c.log.WarnContext(ctx, "sign-in discovery failed", "server", srv.Name, "user_id", st.User, "error", err.Error())
		return "", &linkError{msgSignInFailed(srv.Name, "its authorization could not be discovered")}
	}
	p.Client, p.Resource = cl, resource
	plain, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	sealed, err := c.sealer.Seal(plain, "state", st.User, st.Server)
	if err != nil {
		return "", err
	}
	if updated, err := c.o.Store.UpdateConnectState(ctx, hash, sealed); err != nil {
		return "", err
	} else if !updated {
		return "", &linkError{msgStateUsed}
	}
	return c.config(cl, srv).AuthCodeURL(state, oauth2.S256ChallengeOption(p.Verifier),
		oauth2.SetAuthURLParam("resource", resource)), nil
}

// Callback is the authorization server sending the browser back: the
// state is taken (once), the code exchanged with the verifier, the token
// sealed and stored for the state's person, and they are told in the
// conversation where they asked. The text is what the browser shows.
func (c *Connect) Callback(ctx context.Context, q url.Values) (string, error) {
	state := q.Get("state")
	if state == "" {
		return "", &linkError{msgStateUnknown}
	}
	st, ok, taken, err := c.o.Store.TakeConnectState(ctx, hashState(state), c.clk.Now())
	if err != nil {
		return "", err
	}
	if ok && !taken {
		return "", &linkError{msgStateUsed}
	}
	if ok {
		st.Used = time.Time{} // taken by this call: judge it as it was
	}
	p, err := c.usable(st, ok)
	if err != nil {
		return "", err
	}
	srv := c.servers[st.Server]
	if e := q.Get("error"); e != "" {
		return "", &linkError{msgSignInFailed(srv.Name, "the authorization server said "+e)}
	}
	if p.Client == nil || q.Get("code") == "" {
		return "", &linkError{msgStateUnknown}
	}
	cfg := c.config(p.Client, srv)
	tok, err := cfg.Exchange(c.httpContext(ctx), q.Get("code"), oauth2.VerifierOption(p.Verifier),
		oauth2.SetAuthURLParam("resource", p.Resource))
	if err != nil {
		c.log.WarnContext(ctx, "sign-in exchange failed", "server", srv.Name, "user_id", st.User, "error", oauthError(err))
		return "", &linkError{msgSignInFailed(srv.Name, "the authorization server refused the code")}
	}
	account := c.account(ctx, tok, p.Client)
	set := tokenSet{Access: tok.AccessToken, Type: tok.TokenType, Refresh: tok.RefreshToken, Expiry: tok.Expiry,
		Client: *p.Client, Resource: p.Resource}
	if err := c.putToken(ctx, st.User, srv.Name, account, set); err != nil {
		return "", err
	}
	c.log.InfoContext(ctx, "connected", "server", srv.Name, "user_id", st.User)
	if c.o.OnConnected != nil {
		c.o.OnConnected(ctx, st.User, srv.Name)
	}
	text := msgConnected(srv.Name, account)
	if c.o.Chat != nil && st.Channel != "" {
		if _, err := c.o.Chat.Post(ctx, pipeline.Message{ChannelID: st.Channel, ThreadTS: st.ThreadTS, Text: escape(text)}); err != nil {
			c.log.WarnContext(ctx, "tell connected", "server", srv.Name, "user_id", st.User, "error", err.Error())
		}
	}
	return text, nil
}

// httpContext carries the feature's HTTP client to golang.org/x/oauth2.
func (c *Connect) httpContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.o.HTTP)
}

// discover finds srv's authorization: its 401's WWW-Authenticate names
// the protected-resource metadata (else the well-known address), which
// names the authorization server, whose metadata gives the endpoints; a
// client is registered when the operator gave none.
func (c *Connect) discover(ctx context.Context, srv Server) (*client, string, error) {
	metaURL, err := c.resourceMetadataURL(ctx, srv.URL)
	if err != nil {
		return nil, "", err
	}
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, metaURL, srv.URL, c.o.HTTP)
	if err != nil {
		return nil, "", err
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, "", errors.New("protected-resource metadata names no authorization server")
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, c.o.HTTP)
	if err != nil {
		return nil, "", err
	}
	if asm == nil {
		return nil, "", fmt.Errorf("no authorization server metadata at %s", issuer)
	}
	cl := &client{ID: srv.ClientID, Secret: srv.ClientSecret, AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint,
		RevokeURL: asm.RevocationEndpoint, Issuer: asm.Issuer, AuthStyle: int(authStyle(asm.TokenEndpointAuthMethodsSupported))}
	if cl.ID == "" {
		reg, err := c.register(ctx, srv, asm)
		if err != nil {
			return nil, "", err
		}
		cl.ID, cl.Secret, cl.Registered = reg.ID, reg.Secret, true
		cl.AuthStyle = reg.AuthStyle
	}
	return cl, prm.Resource, nil
}

// resourceMetadataURL asks the server without a token and reads the
// resource_metadata of its 401's Bearer challenge; a server that says
// none is looked up at the well-known address (RFC 9728 §3.1).
func (c *Connect) resourceMetadataURL(ctx context.Context, serverURL string) (string, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},` +
		`"clientInfo":{"name":"persona-agent","version":"1"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.o.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if err == nil {
			for _, ch := range cs {
				if ch.Scheme == "bearer" && ch.Params["resource_metadata"] != "" {
					return ch.Params["resource_metadata"], nil
				}
			}
		}
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", err
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimRight(u.Path, "/")
	u.RawQuery = ""
	return u.String(), nil
}

// register registers a client for srv (RFC 7591), once per process.
func (c *Connect) register(ctx context.Context, srv Server, asm *oauthex.AuthServerMeta) (client, error) {
	c.clientsMu.Lock()
	defer c.clientsMu.Unlock()
	if cl, ok := c.clients[srv.Name]; ok && cl.Issuer == asm.Issuer {
		return cl, nil
	}
	if asm.RegistrationEndpoint == "" {
		return client{}, errors.New(`the authorization server offers no dynamic client registration: give "client_id" in mcp.json`)
	}
	name := c.o.ClientName
	if name == "" {
		name = "persona agent"
	}
	meta := &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{c.redirectURL()}, TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"}, ClientName: name,
		Scope: strings.Join(srv.Scopes, " ")}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, c.o.HTTP)
	if err != nil {
		return client{}, fmt.Errorf("register client: %w", err)
	}
	cl := client{ID: reg.ClientID, Secret: reg.ClientSecret, Issuer: asm.Issuer, AuthStyle: int(oauth2.AuthStyleInParams)}
	if reg.ClientSecret != "" {
		cl.AuthStyle = int(authMethod(reg.TokenEndpointAuthMethod))
	}
	c.clients[srv.Name] = cl
	return cl, nil
}

// authStyle picks how the client authenticates at the token endpoint
// from what the server supports (basic first, as RFC 8414 defaults).
func authStyle(supported []string) oauth2.AuthStyle {
	for _, m := range supported {
		if m == "client_secret_basic" {
			return oauth2.AuthStyleInHeader
		}
	}
	for _, m := range supported {
		if m == "client_secret_post" || m == "none" {
			return oauth2.AuthStyleInParams
		}
	}
	return oauth2.AuthStyleAutoDetect
}

func authMethod(m string) oauth2.AuthStyle {
	switch m {
	case "client_secret_post", "none":
		return oauth2.AuthStyleInParams
	case "client_secret_basic", "":
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// account is what the person signed in as, for them to read: a name the
// token response gives (account, username, login, email, name) or the
// claims of its id_token (read for display only, not verified), else the
// subject, else "an account".
func (c *Connect) account(ctx context.Context, tok *oauth2.Token, cl *client) string {
	for _, k := range []string{"account", "username", "login", "email", "preferred_username", "name", "sub"} {
		if v, ok := tok.Extra(k).(string); ok && strings.TrimSpace(v) != "" {
			return clip(v)
		}
	}
	if idt, ok := tok.Extra("id_token").(string); ok {
		if parts := strings.Split(idt, "."); len(parts) == 3 {
			if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
				var claims map[string]any
				if json.Unmarshal(b, &claims) == nil {
					for _, k := range []string{"email", "preferred_username", "name", "sub"} {
						if v, ok := claims[k].(string); ok && v != "" {
							return clip(v)
						}
					}
				}
			}
		}
	}
	return "an account"
}

// clip keeps an account name to one short line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// oauthError is a token endpoint's refusal without the response body
// (which may echo what was sent).
func oauthError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return "token endpoint: " + re.ErrorCode
		}
		if re.Response != nil {
			return "token endpoint: " + re.Response.Status
		}
	}
	return "token endpoint: request failed"
}
