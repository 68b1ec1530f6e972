package connect

import (
	"fmt"
	"strings"
)

// Texts people read. The pinned ones are interfaces.md's "Acting as the
// person asking"; keep them exactly.
const (
	// MsgNoKey refuses a start with an "auth": "oauth" server and no key.
	MsgNoKey = `AGENT_SECRET_KEY is required for tool servers with "auth": "oauth"`
	// msgNone answers /connections with nothing connected.
	msgNone = "no connections"
	// msgStateUnknown, msgStateUsed, msgStateExpired answer a sign-in
	// link that does nothing, and say why.
	msgStateUnknown = "this sign-in link is not valid: run /connect again for a new one"
	msgStateUsed    = "this sign-in link was already used: run /connect again for a new one"
	msgStateOther   = "this sign-in link belongs to another person's sign-in: nothing was changed"
	msgNoPublicURL  = "sign-in is not available: AGENT_PUBLIC_URL is not set"
	msgClose        = "You can close this tab and go back to the chat."
)

func msgSignIn(server, url string) string { return "sign in to " + server + ": " + url }

func msgConnected(server, account string) string {
	return "connected to " + server + " as " + account
}

func msgDisconnected(server string) string { return "disconnected from " + server }

func msgNotConnected(server, user string) string {
	return fmt.Sprintf("not connected to %s: ask <@%s> to run /connect %s", server, user, server)
}

func msgNotConnectedYou(server string) string { return "not connected to " + server }

func msgStateExpired(server string) string {
	return "this sign-in link expired: run /connect " + server + " again for a new one"
}

func msgRefreshRefused(server string) string {
	return server + " refused to renew your sign-in, so I forgot it: run /connect " + server + " to sign in again"
}

func msgSignInFailed(server, why string) string {
	return "sign-in to " + server + " failed: " + why
}

func msgUnknownServer(server string, known []string) string {
	if len(known) == 0 {
		return "no tool server here signs in per person"
	}
	return fmt.Sprintf("`%s` is not a tool server with per-person sign-in (those here: %s)", server, strings.Join(known, ", "))
}

func usage(cmd string, known []string) string {
	return fmt.Sprintf("usage: %s <server> (servers: %s)", cmd, strings.Join(known, ", "))
}

// line is one connection in /connections.
func line(r Record) string {
	return fmt.Sprintf("%s as %s (since %s)", r.Server, r.Account, r.Created.UTC().Format("2006-01-02"))
}
