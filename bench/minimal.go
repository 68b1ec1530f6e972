package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/internal/fake"
)

// minimalBot is the yardstick: the least a bot can do with an event — ack
// it, make one model call, post the answer in the thread — on the same
// libraries and fakes as the runtime. It returns the event-to-reply times
// of n events sent one at a time.
func minimalBot(n int) ([]time.Duration, error) {
	sl := &fake.Slack{}
	defer sl.Close()
	model := httptest.NewServer(&fake.Anthropic{Respond: instant, Key: benchKey})
	defer model.Close()
	api := slack.New(fake.DefaultBotToken, slack.OptionAppLevelToken(fake.DefaultAppToken), slack.OptionAPIURL(sl.URL()))
	sock := socketmode.New(api)
	web := slack.New(fake.DefaultBotToken, slack.OptionAPIURL(sl.URL()))
	llm := anthropic.NewClient(option.WithAPIKey(benchKey), option.WithBaseURL(model.URL))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = sock.RunContext(ctx) }()
	go func() {
		for evt := range sock.Events {
			if evt.Type != socketmode.EventTypeEventsAPI || evt.Request == nil {
				continue
			}
			sock.Ack(*evt.Request)
			ev, ok := evt.Data.(slackevents.EventsAPIEvent)
			if !ok {
				continue
			}
			msg, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
			if !ok {
				continue
			}
			go answer(ctx, web, llm, msg)
		}
	}()
	wait, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := sl.WaitConnections(wait, 1); err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := range n + 20 {
		text := fmt.Sprintf("minimal %d", i)
		sent := time.Now()
		sl.SendEvent(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: fmt.Sprintf("%d.%06d", 5000+i, i), Text: text}.Payload())
		post, err := sl.WaitForPost(wait, func(p fake.Post) bool { return p.Text == "ack "+text })
		if err != nil {
			return nil, err
		}
		if i >= 20 { // after the warm-up
			out = append(out, post.At.Sub(sent))
		}
	}
	return out, nil
}

func answer(ctx context.Context, api *slack.Client, llm anthropic.Client, msg *slackevents.MessageEvent) {
	resp, err := llm.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(msg.Text))},
	})
	if err != nil || len(resp.Content) == 0 {
		return
	}
	_, _, _ = api.PostMessageContext(ctx, msg.Channel, slack.MsgOptionText(resp.Content[0].Text, false), slack.MsgOptionTS(msg.TimeStamp))
}
