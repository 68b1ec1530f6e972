package connect_test

import "github.com/persona-runtime/agent/pkg/pipeline"

func fakeAccess() pipeline.Access { return pipeline.Access{} }

func event(user string) *pipeline.Event {
	return &pipeline.Event{UserID: user, ChannelID: "D1", ChannelType: pipeline.ChannelIM, TS: "1.1"}
}
