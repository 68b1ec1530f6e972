package slackio

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/slack-go/slack"
)

// BotCheck is what auth.test says of a bot token: who the bot is, and the
// scopes the install granted (ScopesKnown is false when the platform sent
// no X-OAuth-Scopes header, as some gateways do not).
type BotCheck struct {
	UserID, TeamID string
	Scopes         string
	ScopesKnown    bool
}

// Checker asks the platform about the tokens (`agent doctor`).
type Checker struct {
	client *slack.Client
	mu     sync.Mutex
	scopes string
	seen   bool
}

// NewChecker returns a Checker for the tokens at apiURL, its calls made
// with httpClient (whose timeout bounds each).
func NewChecker(botToken, appToken, apiURL string, httpClient *http.Client) *Checker {
	c := &Checker{}
	c.client = NewClient(botToken, appToken, apiURL, httpClient,
		slack.OptionOnResponseHeaders(func(path string, h http.Header) {
			if strings.HasSuffix(path, "auth.test") {
				c.mu.Lock()
				c.scopes, c.seen = h.Get("X-OAuth-Scopes"), h.Get("X-OAuth-Scopes") != ""
				c.mu.Unlock()
			}
		}))
	return c
}

// Bot calls auth.test with the bot token.
func (c *Checker) Bot(ctx context.Context) (BotCheck, error) {
	resp, err := c.client.AuthTestContext(ctx)
	if err != nil {
		return BotCheck{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return BotCheck{UserID: resp.UserID, TeamID: resp.TeamID, Scopes: c.scopes, ScopesKnown: c.seen}, nil
}

// SocketMode calls apps.connections.open with the app-level token, which
// succeeds only with socket mode on and the connections:write scope.
func (c *Checker) SocketMode(ctx context.Context) error {
	_, _, err := c.client.StartSocketModeContext(ctx)
	return err
}

// IsPlatformAnswer reports whether err is the platform's answer (an error
// code, a rate limit), not a failure to reach it.
func IsPlatformAnswer(err error) bool {
	var se slack.SlackErrorResponse
	var rl *slack.RateLimitedError
	return errors.As(err, &se) || errors.As(err, &rl)
}

// ErrorCode is the platform's error code in err ("invalid_auth",
// "missing_scope", …), "rate limited", or else err's text.
func ErrorCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return "rate limited"
	}
	return err.Error()
}

// HomeTab publishes an empty Home view for userID (the bot's own user: no
// person sees it), which fails with not_enabled when the app's Home tab
// is off.
func (c *Checker) HomeTab(ctx context.Context, userID string) error {
	_, err := c.client.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: userID,
		View: slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{}}}})
	return err
}
