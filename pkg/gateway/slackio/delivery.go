package slackio

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// What a post that answers an event carries as message metadata: the
// event's id, so that whether the answer landed can be read back from the
// thread (Delivered) when a crash or an ambiguous error leaves it unknown.
const (
	replyMetaType  = "agent_reply"
	replyMetaEvent = "event_id"
)

// Delivery retries: a post or an edit the platform did not take for a
// reason that may pass (its servers, the network) is tried again after
// deliveryBackoff, then twice that, deliveryTries times in all. A rate
// limit is waited out by the client itself (NewClient's 429 retries,
// after the platform's Retry-After); past those it is final.
const (
	deliveryTries   = 4
	deliveryBackoff = 500 * time.Millisecond
)

// DeliveryFailure is a post or an edit that failed for good.
type DeliveryFailure struct {
	Method    string // "chat.postMessage", "chat.update"
	Error     string // the platform's error code ("not_in_channel"), or "rate_limited", "http_503", "network"
	ChannelID string
	Tries     int
}

// delivery is how one failed call is handled.
type delivery int

const (
	deliveryFinal     delivery = iota // the call cannot succeed as it is
	deliveryRetry                     // nothing was done: trying again is safe
	deliveryAmbiguous                 // the platform may have done it: retry only a post known not to have landed
)

// classify names err by the platform's error code and says whether trying
// again can help.
func classify(err error) (string, delivery) {
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	var ue *url.Error
	var ne net.Error
	switch {
	case errors.As(err, &rl):
		// The client has waited out the platform's Retry-After already.
		return "rate_limited", deliveryFinal
	case errors.As(err, &se):
		switch se.Err {
		case "ratelimited", "rate_limited", "service_unavailable", "request_timeout", "team_added_to_org":
			return se.Err, deliveryRetry
		case "internal_error", "fatal_error":
			return se.Err, deliveryAmbiguous
		}
		return se.Err, deliveryFinal
	case errors.As(err, &sc):
		code := "http_" + strconv.Itoa(sc.Code)
		if sc.Code >= 500 {
			return code, deliveryAmbiguous
		}
		return code, deliveryFinal
	case errors.As(err, &ue), errors.As(err, &ne):
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return "network", deliveryRetry // never reached the platform
		}
		return "network", deliveryAmbiguous
	}
	return "unknown", deliveryFinal
}

// OnDeliveryFailure sets what is told of each post or edit that failed for
// good (a metric); the failure is logged either way.
func (c *Chat) OnDeliveryFailure(f func(DeliveryFailure)) { c.onFailure = f }

// deliver runs call, a post or an edit, until it succeeds, fails for a
// reason that retrying cannot help, or runs out of tries. landed, when
// set, says whether an ambiguous failure did post after all; without it an
// ambiguous failure is final (a second try could post twice).
func (c *Chat) deliver(ctx context.Context, method, channel string, call func() error,
	landed func() (bool, error)) error {
	wait := c.backoff
	if wait <= 0 {
		wait = deliveryBackoff
	}
	var err error
	tries := 0
	for tries < deliveryTries {
		tries++
		if err = call(); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return c.wrap(method, err)
		}
		code, kind := classify(err)
		if kind == deliveryAmbiguous && landed != nil {
			ok, lerr := landed()
			switch {
			case lerr != nil:
				c.log.WarnContext(ctx, "chat: could not tell whether a failed post landed", "method", method,
					"channel_id", channel, "error", code, "err", c.wrap("conversations.replies", lerr))
			case ok:
				c.log.InfoContext(ctx, "chat: a post answered with an error had landed", "method", method,
					"channel_id", channel, "error", code)
				return nil
			default:
				kind = deliveryRetry
			}
		}
		if kind != deliveryRetry || tries == deliveryTries {
			break
		}
		c.log.WarnContext(ctx, "chat: call failed; retrying", "method", method, "channel_id", channel,
			"error", code, "try", tries, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return c.wrap(method, err)
		case <-t.C:
		}
		wait *= 2
	}
	werr := c.wrap(method, err)
	code, _ := classify(err)
	c.log.ErrorContext(ctx, "chat: message not delivered", "method", method, "channel_id", channel,
		"error", code, "tries", tries, "err", werr)
	if c.onFailure != nil {
		c.onFailure(DeliveryFailure{Method: method, Error: code, ChannelID: channel, Tries: tries})
	}
	return &UndeliveredError{Code: code, err: werr}
}

// UndeliveredError is a post or an edit the platform did not take; Code is
// its error code ("not_in_channel", "msg_too_long", "rate_limited",
// "network", ...).
type UndeliveredError struct {
	Code string
	err  error
}

func (e *UndeliveredError) Error() string { return e.err.Error() }

func (e *UndeliveredError) Unwrap() error { return e.err }

// Delivered reports whether the bot's answer to the event eventID is in the
// thread at threadTS (conversations.replies with the messages' metadata).
func (c *Chat) Delivered(ctx context.Context, channelID, threadTS, eventID string) (bool, error) {
	return c.landed(ctx, pipeline.Message{ChannelID: channelID, ThreadTS: threadTS, For: eventID})
}

// landed reports whether a post of m's event is in m's thread; with m.Text
// set, one with that text.
func (c *Chat) landed(ctx context.Context, m pipeline.Message) (bool, error) {
	if m.ChannelID == "" || m.ThreadTS == "" || m.For == "" {
		return false, errors.New("no thread or event to look for")
	}
	params := &slack.GetConversationRepliesParameters{ChannelID: m.ChannelID, Timestamp: m.ThreadTS,
		Limit: 200, IncludeAllMetadata: true}
	for range 20 { // 4,000 messages: far more than any thread the bot answers
		msgs, more, cursor, err := c.api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return false, err
		}
		for _, msg := range msgs {
			md := msg.Metadata
			if md.EventType != replyMetaType {
				continue
			}
			if id, _ := md.EventPayload[replyMetaEvent].(string); id != m.For {
				continue
			}
			if m.Text == "" || strings.TrimSpace(msg.Text) == strings.TrimSpace(m.Text) {
				return true, nil
			}
		}
		if !more || cursor == "" {
			return false, nil
		}
		params.Cursor = cursor
	}
	return false, nil
}
