// Package slackio is the Slack platform adapter: the gateway.Transport
// events come from (socket mode, or the HTTP ingress of the Events API),
// the one conversion of the platform's payloads into pipeline events both
// share, and the Web API client replies go to (posts with delivery retries,
// Block Kit cards, streaming, uploads and downloads).
//
// It is the only package under pkg/ and internal/ that imports slack-go.
// It imports the gateway for the Transport it implements, never the
// reverse; cmd wires the two together.
package slackio
