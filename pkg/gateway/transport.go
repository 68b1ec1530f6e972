package gateway

import (
	"context"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Transport is where inbound chat events come from: socket mode in production,
// an in-memory transport in the simulator.
type Transport interface {
	// Run connects and delivers every inbound event to deliver until ctx is
	// done, reconnecting as needed. The transport acknowledges each envelope
	// itself, at once, before deliver is called; deliver never blocks for long.
	// Run returns nil after ctx is cancelled and an error when it cannot
	// connect at all (for example invalid_auth).
	Run(ctx context.Context, deliver func(*pipeline.Event)) error
}
