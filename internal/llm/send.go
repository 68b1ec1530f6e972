package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Send sends one Messages API call and returns the complete message, with its
// usage. A params without a model gets the client's. The call always streams,
// since the SDK refuses large max_tokens without streaming, and returns the
// message accumulated from the stream.
//
// Failed attempts are retried as [Config.MaxRetries] says. Errors match
// [ErrUnavailable] (overloaded, rate limited, 5xx, no connection, a stream that
// failed or broke off), [ErrAuth] or [ErrInvalidRequest] (with
// [ErrContextTooLong] for a prompt over the window); once ctx is done the
// error wraps ctx's. Every error except ctx's is an [*Error].
func (c *Client) Send(ctx context.Context, params anthropic.MessageNewParams) (*anthropic.Message, error) {
	if params.Model == "" {
		params.Model = anthropic.Model(c.model)
	}
	start := time.Now()
	ctx, span := c.tracer.Start(ctx, "llm.request",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.provider.name", "anthropic"),
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", string(params.Model)),
			attribute.Int64("gen_ai.request.max_tokens", params.MaxTokens),
		))
	defer span.End()

	st := &callState{stream: true}
	msg, err := c.stream(ctx, st, params)
	attempts := int(st.attempts.Load())
	span.SetAttributes(attribute.Int("llm.attempts", attempts))
	elapsed := time.Since(start)

	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Attempts = attempts
		}
		span.SetAttributes(attribute.String("error.type", outcome(err)))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		c.metrics.observe(err, elapsed.Seconds(), nil, string(params.Model))
		return nil, err
	}
	u := msg.Usage
	span.SetAttributes(
		attribute.String("gen_ai.response.id", msg.ID),
		attribute.String("gen_ai.response.model", string(msg.Model)),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(msg.StopReason)}),
		attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
		attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CacheReadInputTokens),
		attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheCreationInputTokens),
	)
	c.metrics.observe(nil, elapsed.Seconds(), &u, cmp.Or(string(msg.Model), string(params.Model)))
	c.log.DebugContext(ctx, "llm call done",
		slog.String("model", string(msg.Model)),
		slog.String("stop_reason", string(msg.StopReason)),
		slog.Int64("input_tokens", u.InputTokens),
		slog.Int64("output_tokens", u.OutputTokens),
		slog.Int64("cache_read_tokens", u.CacheReadInputTokens),
		slog.Int64("cache_write_tokens", u.CacheCreationInputTokens),
		slog.Int("attempts", attempts),
		slog.Duration("duration", elapsed),
	)
	return msg, nil
}

// stream sends params as a streaming call and accumulates the message. st
// follows the call's attempts.
func (c *Client) stream(ctx context.Context, st *callState, params anthropic.MessageNewParams) (*anthropic.Message, error) {
	body, err := encodeParams(params)
	if err != nil {
		return nil, &Error{Op: "messages", Message: "encode the request: " + c.scrub(err.Error()), err: err,
			kinds: []error{ErrInvalidRequest}}
	}
	// What Messages.NewStreaming does, with the body ours: posted as it
	// is, the response read as a stream of events.
	var opts []option.RequestOption
	if !param.IsOmitted(params.UserProfileID) {
		opts = append(opts, option.WithHeader("anthropic-user-profile-id", params.UserProfileID.Value))
	}
	if !param.IsOmitted(params.WorkspaceID) {
		opts = append(opts, option.WithHeader("anthropic-workspace-id", params.WorkspaceID.Value))
	}
	var raw *http.Response
	err = c.api.Post(withCall(ctx, st), "v1/messages", body, &raw, opts...)
	if err != nil {
		return nil, c.convert(ctx, "messages", st, err)
	}
	dec := ssestream.NewDecoder(raw)
	defer func() { _ = dec.Close() }()

	var acc accumulator
	var events [][]byte // the data of each event, should the SDK have to accumulate them
	watch := newStreamWatch(ctx)
	for dec.Next() {
		e := dec.Event()
		switch e.Type {
		case "", "ping":
			continue
		case "error":
			return nil, c.convert(ctx, "messages", st, streamError(raw, e.Data))
		}
		if len(bytes.TrimSuffix(e.Data, []byte("\n"))) == 0 {
			continue
		}
		var ev streamEvent
		if err := json.Unmarshal(e.Data, &ev); err != nil {
			if ctx.Err() == nil {
				return nil, &Error{Op: "messages", Message: "malformed stream event: " + c.scrub(err.Error()), err: err}
			}
			return nil, c.convert(ctx, "messages", st, err)
		}
		if err := acc.add(&ev); err != nil {
			return nil, &Error{Op: "messages", Message: "malformed stream: " + c.scrub(err.Error()), err: err}
		}
		events = append(events, e.Data)
		watch.event(&ev, acc.blocks)
	}
	if err := dec.Err(); err != nil {
		return nil, c.convert(ctx, "messages", st, err)
	}
	if !acc.stopped {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llm messages: %w", err)
		}
		// The body ended cleanly but the message did not: a proxy or the
		// provider cut the stream. Not the request's fault.
		return nil, &Error{Op: "messages", Message: "stream ended before message_stop", kinds: []error{ErrUnavailable}}
	}
	msg, err := acc.message()
	if err != nil {
		// What the parts do not make into JSON, the SDK accumulates as
		// it would have.
		if msg, err = sdkAccumulate(events); err != nil {
			return nil, &Error{Op: "messages", Message: "malformed stream: " + c.scrub(err.Error()), err: err}
		}
	}
	return msg, nil
}

// sdkAccumulate decodes each event with the SDK and accumulates them with
// Message.Accumulate.
func sdkAccumulate(events [][]byte) (*anthropic.Message, error) {
	var msg anthropic.Message
	for _, data := range events {
		var ev anthropic.MessageStreamEventUnion
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, err
		}
		if err := msg.Accumulate(ev); err != nil {
			return nil, err
		}
	}
	return &msg, nil
}

// isDecodeError reports whether err is an event that is not valid JSON, as
// opposed to a body that failed to arrive.
func isDecodeError(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &typ)
}

// CountTokens returns the input tokens params would use, asking the provider's
// token counting endpoint. A params without a model gets the client's. Errors
// are classified as for [Client.Send].
func (c *Client) CountTokens(ctx context.Context, params anthropic.MessageCountTokensParams) (int64, error) {
	if params.Model == "" {
		params.Model = anthropic.Model(c.model)
	}
	ctx, span := c.tracer.Start(ctx, "llm.count_tokens",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.provider.name", "anthropic"),
			attribute.String("gen_ai.request.model", string(params.Model)),
		))
	defer span.End()

	st := &callState{}
	res, err := c.api.Messages.CountTokens(withCall(ctx, st), params)
	if err != nil {
		err = c.convert(ctx, "count_tokens", st, err)
		span.SetAttributes(attribute.String("error.type", outcome(err)))
		span.SetStatus(codes.Error, err.Error())
		return 0, err
	}
	span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", res.InputTokens))
	return res.InputTokens, nil
}
