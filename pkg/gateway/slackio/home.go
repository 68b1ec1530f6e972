package slackio

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

var _ pipeline.HomePublisher = (*Chat)(nil)

// methodPublish publishes a person's Home tab.
const methodPublish = "views.publish"

// maxHomeBlocks is the most blocks a Home view takes.
const maxHomeBlocks = 100

// PublishHome publishes v as userID's Home tab (views.publish, type home).
// A platform that refuses it (not_enabled: the Home tab is off in the
// app's settings) is remembered: later calls fail without asking.
func (c *Chat) PublishHome(ctx context.Context, userID string, v pipeline.HomeView) error {
	if code := c.agentView.refused(methodPublish); code != "" {
		return fmt.Errorf("%s: refused (%s before)", methodPublish, code)
	}
	_, err := c.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: userID,
		View: slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: homeBlocks(v)}}})
	if err != nil {
		if taskRefusal(err) || isCode(err, "not_enabled") {
			c.agentView.remember(methodPublish, err)
			c.log.WarnContext(ctx, "chat: the Home tab is refused; enable it in the app's settings (features.app_home.home_tab_enabled)",
				"err", c.wrap(methodPublish, err))
		}
		return c.wrap(methodPublish, err)
	}
	return nil
}

// homeBlocks renders a view: the notice, then each section's title, its
// lines (a button beside those that have one) and its count of the rest
// or its empty text, within the platform's 100 blocks.
func homeBlocks(v pipeline.HomeView) []slack.Block {
	var blocks []slack.Block
	if v.Notice != "" {
		blocks = append(blocks, slack.NewSectionBlock(cardMrkdwn(cardTruncate(v.Notice, cardSectionMax)), nil, nil))
	}
	for _, s := range v.Sections {
		blocks = append(blocks, slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, cardTruncate(s.Title, 150), false, false)))
		for _, l := range s.Lines {
			var accessory *slack.Accessory
			if b := l.Button; b != nil {
				accessory = slack.NewAccessory(slack.NewButtonBlockElement(b.ActionID, b.Value,
					slack.NewTextBlockObject(slack.PlainTextType, b.Label, false, false)))
			}
			blocks = append(blocks, slack.NewSectionBlock(cardMrkdwn(cardTruncate(l.Text, cardSectionMax)), nil, accessory))
		}
		note := s.Empty
		if len(s.Lines) > 0 {
			note = ""
		}
		if s.More > 0 {
			note = fmt.Sprintf("… and %d more", s.More)
		}
		if note != "" {
			blocks = append(blocks, slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, note, false, false)))
		}
	}
	if len(blocks) > maxHomeBlocks {
		left := len(blocks) - (maxHomeBlocks - 1)
		blocks = append(blocks[:maxHomeBlocks-1], slack.NewContextBlock("",
			slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf("… %d more lines not shown", left), false, false)))
	}
	return blocks
}

// isCode reports whether err is the platform's error code.
func isCode(err error, code string) bool {
	var se slack.SlackErrorResponse
	return asSlackError(err, &se) && se.Err == code
}
