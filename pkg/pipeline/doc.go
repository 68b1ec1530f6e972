// Package pipeline is the domain core of the runtime: the Event that every
// inbound chat event becomes, the Handler contract, and the middleware stages
// that every event passes through in order:
//
//	drop → engage → redact → auth → session → agent → markup → deliver
//
// The agent stage runs the model turn. Everything the agent says through its
// chat tools comes back into the chain as an outbound KindReply event that the
// agent stage hands to its next handler, so markup conversion sits after the
// agent turn and before delivery, as the design lists it.
//
// The package imports nothing from this module and no vendor SDK: the chat
// platform, the store, the model client and the metrics are reached through
// the small interfaces declared beside the stages that call them. Each stage
// is its rule alone; newStage wraps it in the span and metrics every stage
// owns, and a stage that treats kinds apart routes them with a kindRouter.
package pipeline
