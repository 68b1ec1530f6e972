// Package llm is the model client: every call to the Anthropic Messages API
// goes through [Client.Send].
//
// The client wraps anthropic-sdk-go with the choices the service needs:
//
//   - Configuration is explicit. The SDK reads ANTHROPIC_* variables from the
//     environment by itself (and with a key there sends it beside an OAuth
//     token); [New] turns that off and takes everything from [Config].
//   - Calls always stream: the SDK refuses large max_tokens without
//     streaming. Send accumulates the stream and returns the whole message,
//     with its usage. A gateway that answers a stream request with a plain JSON
//     message is handled too.
//   - Retries are the SDK's: 408, 409, 429, 5xx and 529 are retried with
//     backoff, honouring retry-after-ms and retry-after.
//   - Errors are classified with sentinels for the callers' decisions:
//     [ErrUnavailable] (try later), [ErrAuth], [ErrInvalidRequest] and
//     [ErrContextTooLong] (compact the history). No error text holds the
//     credential.
//   - Each call opens an llm.messages span with the injected tracer and
//     updates the injected [Metrics]; the SDK's own spans, which use the global
//     tracer provider, are off.
package llm
