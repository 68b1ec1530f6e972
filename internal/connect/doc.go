// Package connect is acting as the person asking: each person's own
// sign-in to the tool servers of mcp.json marked "auth": "oauth", and the
// token of the turn's sender on each call of such a server's tools.
//
// It owns the whole feature, in the feature template: what a connection
// and a pending sign-in are (Record, State), their sealing at rest with
// AGENT_SECRET_KEY (seal.go: AES-GCM, a nonce per write, bound to the
// person and the server), the sign-in (flow.go: the server's 401, its
// protected-resource metadata, the authorization server's metadata,
// dynamic client registration, PKCE S256, the code's exchange; through
// the tool-server SDK's oauthex helpers and golang.org/x/oauth2), the
// routes /oauth/start and /oauth/callback (http.go), the sender's token
// per call with refresh (tokens.go), revocation (revoke.go), the pinned
// texts (text.go) and the commands' adapter (commands.go: internal/commands
// declares only the interface). The store keeps the rows (SQL in
// internal/store/connections.go, with this package's types); the service
// wires it.
package connect
