package slackio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/slack-go/slack"
)

// The persona's loading messages go with each status line
// (assistant.threads.setStatus's loading_messages, at most ten). slack-go
// sends them form-encoded, joined by commas, which splits a message that
// holds one: this call sends a JSON body, a real array.

const (
	methodStatus       = "assistant.threads.setStatus"
	maxLoadingMessages = 10
	statusTimeout      = 10 * time.Second
)

// SetLoadingMessages sets the messages the platform rotates under the
// status line (the first ten); none sends none.
func (c *Chat) SetLoadingMessages(msgs []string) {
	msgs = append([]string(nil), msgs[:min(len(msgs), maxLoadingMessages)]...)
	c.loading.Store(&msgs)
}

func (c *Chat) loadingMessages() []string {
	if p := c.loading.Load(); p != nil {
		return *p
	}
	return nil
}

// setStatusLoading is SetStatus with loading messages, as JSON.
func (c *Chat) setStatusLoading(ctx context.Context, channelID, threadTS, status string, loading []string) error {
	if c.apiURL == nil {
		return fmt.Errorf("%s: no Web API address", methodStatus)
	}
	body, err := json.Marshal(map[string]any{"channel_id": channelID, "thread_ts": threadTS, "status": status,
		"loading_messages": loading})
	if err != nil {
		return fmt.Errorf("%s: %w", methodStatus, err)
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.apiURL.JoinPath(methodStatus).String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", methodStatus, err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+c.botToken)
	resp, err := (&http.Client{Transport: platformTransport()}).Do(req)
	if err != nil {
		return c.wrap(methodStatus, err)
	}
	defer resp.Body.Close()
	var answer slack.SlackResponse
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return c.wrap(methodStatus, fmt.Errorf("status %d: %w", resp.StatusCode, err))
	}
	if !answer.Ok {
		return c.wrap(methodStatus, slack.SlackErrorResponse{Err: answer.Error})
	}
	return nil
}
