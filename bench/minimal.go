package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/persona-runtime/agent/internal/fake"
)

// minimalBot is the yardstick: the least a bot can do with an event — ack
// it, make the same model call as the runtime's first (its system prompt,
// tools and streaming, with the event's text as the only message), read
// the answer to its end, post in the thread — on the same platform library
// and fakes, in a process of its own as the service is. Its events are sent
// between the service's, one for one, so that both are measured under the
// same load on the machine.
type minimalBot struct {
	sl    *fake.Slack
	model *httptest.Server
	cmd   *exec.Cmd
}

// newMinimalBot starts the bot as a process of its own, as the service
// is, against fakes of its own in this process; call is the runtime's
// recorded first model call.
func newMinimalBot(dir string, call []byte) (*minimalBot, error) {
	callFile := filepath.Join(dir, "minimal-call.json")
	if err := os.WriteFile(callFile, call, 0o600); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b := &minimalBot{sl: &fake.Slack{}, model: httptest.NewServer(&fake.Anthropic{Respond: instant, Key: benchKey})}
	b.cmd = exec.Command(self, minimalFlag, b.sl.URL(), b.model.URL, callFile)
	b.cmd.Stdout, b.cmd.Stderr = os.Stderr, os.Stderr
	if err := b.cmd.Start(); err != nil {
		b.sl.Close()
		b.model.Close()
		return nil, err
	}
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := b.sl.WaitConnections(wait, 1); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// minimalFlag makes the bench the minimal bot: slack URL, model URL, the
// file of the recorded model call.
const minimalFlag = "-minimal-bot"

// runMinimalBot is the bot's process: socket mode, ack, the model call,
// the post; until it is killed.
func runMinimalBot(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "minimal bot: want slack URL, model URL, call file")
		return 2
	}
	call, err := os.ReadFile(args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "minimal bot:", err)
		return 1
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(call, &req); err != nil {
		fmt.Fprintln(os.Stderr, "minimal bot: the recorded model call:", err)
		return 1
	}
	api := slack.New(fake.DefaultBotToken, slack.OptionAppLevelToken(fake.DefaultAppToken), slack.OptionAPIURL(args[0]))
	sock := socketmode.New(api)
	web := slack.New(fake.DefaultBotToken, slack.OptionAPIURL(args[0]))
	ctx := context.Background()
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
			go answer(ctx, web, args[1], req, msg)
		}
	}()
	if err := sock.RunContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "minimal bot:", err)
		return 1
	}
	return 0
}

// one sends event i and returns the time to its reply.
func (b *minimalBot) one(i int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text := fmt.Sprintf("minimal %d", i)
	sent := time.Now()
	b.sl.SendEvent(fake.Message{User: "U0MGR", Channel: "D0MGR", TS: fmt.Sprintf("%d.%06d", 5000+i, i), Text: text}.Payload())
	post, err := b.sl.WaitForPost(ctx, func(p fake.Post) bool { return p.Text == "ack "+text })
	if err != nil {
		return 0, err
	}
	return post.At.Sub(sent), nil
}

func (b *minimalBot) stop() {
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
	b.sl.Close()
	b.model.Close()
}

func answer(ctx context.Context, api *slack.Client, modelURL string, req map[string]json.RawMessage, msg *slackevents.MessageEvent) {
	body := make(map[string]json.RawMessage, len(req))
	for k, v := range req {
		body[k] = v
	}
	body["messages"], _ = json.Marshal([]map[string]string{{"role": "user", "content": msg.Text}})
	b, _ := json.Marshal(body)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, modelURL+"/v1/messages", bytes.NewReader(b))
	if err != nil {
		return
	}
	r.Header.Set("x-api-key", benchKey)
	r.Header.Set("anthropic-version", "2023-06-01")
	r.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, _, _ = api.PostMessageContext(ctx, msg.Channel, slack.MsgOptionText("ack "+msg.Text, false), slack.MsgOptionTS(msg.TimeStamp))
}
