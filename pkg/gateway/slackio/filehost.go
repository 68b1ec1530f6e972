package slackio

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// platformDomains are the platform's own domains: a file's download
// address (url_private_download) is on files.slack.com, or files.slack-gov.com
// on GovSlack; the sign-in page a download may be redirected to is on the
// workspace's own subdomain.
var platformDomains = []string{"slack.com", "slack-gov.com"}

// maxRedirects is net/http's own default limit, kept where a redirect
// policy of ours replaces the default one.
const maxRedirects = 10

// mayReceiveToken reports whether a request to u may carry the bot token:
// u is an https address on the platform's domains (or a subdomain of
// them), or on the Web API's own scheme and host (CHAT_API_URL, where
// every call already sends it: a gateway, or the fakes of the tests). A
// file address an event names is otherwise whatever its author chose (a
// remote file's is), so it gets no token.
func mayReceiveToken(api, u *url.URL) bool {
	if u == nil {
		return false
	}
	if u.Scheme == "https" && u.User == nil {
		host := strings.ToLower(u.Hostname())
		for _, d := range platformDomains {
			if host == d || strings.HasSuffix(host, "."+d) {
				return true
			}
		}
	}
	return api != nil && api.Host != "" && strings.EqualFold(u.Scheme, api.Scheme) && strings.EqualFold(u.Host, api.Host)
}

// tokenRedirects is the redirect policy of the Web API client: a redirect
// to an address that may not receive the token (mayReceiveToken), or one
// that follows such a hop, is made without the Authorization header.
// net/http keeps that header on a redirect to the same host name on
// another port or scheme (http://files.slack.com, 127.0.0.1:other) or to a
// subdomain of the first host; this never does unless the address may have
// the token. next is the client's own policy, if any.
func tokenRedirects(api *url.URL, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		strip := !mayReceiveToken(api, req.URL)
		for i, v := range via { // via[0] is the first request, checked before it was sent
			strip = strip || i > 0 && !mayReceiveToken(api, v.URL)
		}
		if strip {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}
