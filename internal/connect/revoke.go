package connect

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Connection is one person's connection as shown to people and operators:
// never a token.
type Connection struct {
	User    string `json:"user"`
	Server  string `json:"server"`
	Account string `json:"account"`
	Since   string `json:"since"`
	Updated string `json:"updated"`
}

func shown(r Record) Connection {
	return Connection{User: r.User, Server: r.Server, Account: r.Account,
		Since: r.Created.UTC().Format("2006-01-02T15:04:05Z"), Updated: r.Updated.UTC().Format("2006-01-02T15:04:05Z")}
}

// List is the connections of user (everyone's when user is ""): what the
// App Home shows, and `agent connections`.
func (c *Connect) List(ctx context.Context, user string) ([]Connection, error) {
	rs, err := c.o.Store.Connections(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]Connection, 0, len(rs))
	for _, r := range rs {
		out = append(out, shown(r))
	}
	return out, nil
}

// Disconnect removes user's own connection to server, revoking its tokens
// at the authorization server where it offers revocation; text is what to
// tell them (the App Home's button and /disconnect say the same).
func (c *Connect) Disconnect(ctx context.Context, user, server string) (string, error) {
	if !c.Has(server) {
		return msgUnknownServer(server, c.names), nil
	}
	gone, err := c.Remove(ctx, user, server)
	if err != nil {
		return "", err
	}
	if !gone {
		return msgNotConnectedYou(server), nil
	}
	return msgDisconnected(server), nil
}

// Remove forgets (user, server) and revokes its tokens (RFC 7009) where
// the authorization server has a revocation endpoint; a revocation that
// fails is logged, and the connection is forgotten anyway. It works on
// any stored connection, configured still or not (`agent connections
// remove`).
func (c *Connect) Remove(ctx context.Context, user, server string) (bool, error) {
	if c.sealer != nil {
		if _, set, ok, err := c.tokenOf(ctx, user, server); err == nil && ok {
			c.revoke(ctx, server, set)
		}
	}
	return c.o.Store.DeleteConnection(ctx, user, server)
}

// revoke asks the authorization server to revoke the refresh token (which
// revokes its access tokens too) and the access token.
func (c *Connect) revoke(ctx context.Context, server string, set tokenSet) {
	if set.Client.RevokeURL == "" {
		return
	}
	for _, t := range []struct{ tok, hint string }{{set.Refresh, "refresh_token"}, {set.Access, "access_token"}} {
		if t.tok == "" {
			continue
		}
		form := url.Values{"token": {t.tok}, "token_type_hint": {t.hint}}
		if set.Client.Secret == "" || set.Client.AuthStyle != 2 { // not AuthStyleInHeader
			form.Set("client_id", set.Client.ID)
			if set.Client.Secret != "" {
				form.Set("client_secret", set.Client.Secret)
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, set.Client.RevokeURL, strings.NewReader(form.Encode()))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if set.Client.Secret != "" && set.Client.AuthStyle == 2 {
			req.SetBasicAuth(url.QueryEscape(set.Client.ID), url.QueryEscape(set.Client.Secret))
		}
		resp, err := c.o.HTTP.Do(req)
		if err != nil {
			c.log.WarnContext(ctx, "revoke token", "server", server, "error", "request failed")
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			c.log.WarnContext(ctx, "revoke token", "server", server, "status", fmt.Sprint(resp.StatusCode))
		}
	}
}
