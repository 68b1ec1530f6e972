package connect

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"golang.org/x/oauth2"

	"github.com/persona-runtime/agent/pkg/tools"
)

// refreshAhead is how long before its expiry a token is renewed: a call
// must not start with a token that dies on the way.
const refreshAhead = 30 * time.Second

// tokenSet is the sealed part of a connection.
type tokenSet struct {
	Access   string    `json:"access_token"`
	Type     string    `json:"token_type,omitempty"`
	Refresh  string    `json:"refresh_token,omitempty"`
	Expiry   time.Time `json:"expiry,omitzero"`
	Client   client    `json:"client"`
	Resource string    `json:"resource,omitempty"`
}

// putToken seals set for (user, server) and stores it.
func (c *Connect) putToken(ctx context.Context, user, server, account string, set tokenSet) error {
	plain, err := json.Marshal(set)
	if err != nil {
		return err
	}
	sealed, err := c.sealer.Seal(plain, "token", user, server)
	if err != nil {
		return err
	}
	return c.o.Store.PutConnection(ctx, Record{User: user, Server: server, Account: account, Sealed: sealed})
}

// tokenOf opens the stored token set of (user, server); ok is false when
// the person has not connected.
func (c *Connect) tokenOf(ctx context.Context, user, server string) (Record, tokenSet, bool, error) {
	r, ok, err := c.o.Store.Connection(ctx, user, server)
	if err != nil || !ok {
		return Record{}, tokenSet{}, false, err
	}
	plain, err := c.sealer.Open(r.Sealed, "token", user, server)
	if err != nil {
		return Record{}, tokenSet{}, false, err
	}
	var set tokenSet
	if err := json.Unmarshal(plain, &set); err != nil {
		return Record{}, tokenSet{}, false, ErrWrongKey
	}
	return r, set, true, nil
}

// Token is the access token of user (the turn's sender) for server, for
// one call of its tools; an expired one is renewed first, and so is the
// one the server just refused (stale: the token it refused). refusal is
// what the model gets instead, and the server is not called: the person
// has not connected, or the server refused the renewal (the connection is
// then forgotten and its owner told, once). err is a failure of the
// runtime (the database, the key).
func (c *Connect) Token(ctx context.Context, user, server, stale string) (token, refusal string, err error) {
	if !c.Has(server) {
		return "", "", errors.New("connect: " + server + " does not sign in per person")
	}
	if user == "" {
		return "", msgNotConnected(server, "someone"), nil
	}
	l := c.lock(user, server)
	l.Lock()
	defer l.Unlock()
	r, set, ok, err := c.tokenOf(ctx, user, server)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", msgNotConnected(server, user), nil
	}
	fresh := set.Expiry.IsZero() || c.clk.Now().Add(refreshAhead).Before(set.Expiry)
	if fresh && (stale == "" || stale != set.Access) {
		return set.Access, "", nil
	}
	if set.Refresh == "" {
		c.forget(ctx, user, server, "no refresh token")
		return "", msgNotConnected(server, user), nil
	}
	cfg := c.config(&set.Client, c.servers[server])
	tok, err := cfg.TokenSource(c.httpContext(ctx), &oauth2.Token{RefreshToken: set.Refresh}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
			c.forget(ctx, user, server, oauthError(err))
			return "", msgNotConnected(server, user), nil
		}
		c.log.WarnContext(ctx, "token refresh failed", "server", server, "user_id", user, "error", oauthError(err))
		return "", "", errors.New("renew the sign-in to " + server + ": the authorization server did not answer")
	}
	set.Access, set.Type, set.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" { // rotated
		set.Refresh = tok.RefreshToken
	}
	if err := c.putToken(ctx, user, server, r.Account, set); err != nil {
		return "", "", err
	}
	c.log.InfoContext(ctx, "token refreshed", "server", server, "user_id", user)
	return set.Access, "", nil
}

// forget drops a connection whose renewal the server refused, and tells
// its owner once (only to them, in the conversation of the turn that
// found out): the next call finds no connection and says not connected.
func (c *Connect) forget(ctx context.Context, user, server, why string) {
	gone, err := c.o.Store.DeleteConnection(ctx, user, server)
	if err != nil {
		c.log.WarnContext(ctx, "forget connection", "server", server, "user_id", user, "error", err.Error())
		return
	}
	c.log.InfoContext(ctx, "connection forgotten: renewal refused", "server", server, "user_id", user, "why", why)
	if !gone || c.o.Chat == nil {
		return
	}
	if t, ok := tools.TurnFromContext(ctx); ok {
		ev := t.Event
		if err := c.o.Chat.PostEphemeral(ctx, ev.ChannelID, ev.ThreadTS, user, msgRefreshRefused(server)); err != nil {
			c.log.WarnContext(ctx, "tell renewal refused", "server", server, "user_id", user, "error", err.Error())
		}
	}
}

// Users are the people connected to server (the service lists the
// server's tools with one of their tokens at start).
func (c *Connect) Users(ctx context.Context, server string) ([]string, error) {
	if !c.Has(server) {
		return nil, nil
	}
	rs, err := c.o.Store.Connections(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rs {
		if r.Server == server {
			out = append(out, r.User)
		}
	}
	return out, nil
}

// Seed stores user's connection to server as account with an access token
// that needs no renewal, sealed as a sign-in stores it: the simulator
// connects its people this way, the sign-in itself staying out of it.
func (c *Connect) Seed(ctx context.Context, user, server, account, token string) error {
	if !c.Has(server) {
		return errors.New("connect: " + server + " does not sign in per person")
	}
	if c.sealer == nil {
		return ErrNoKey
	}
	return c.putToken(ctx, user, server, account, tokenSet{Access: token, Type: "Bearer"})
}
