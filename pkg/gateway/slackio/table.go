package slackio

import (
	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// tableBlocks is a message around a native table: its text before in
// sections, the table block (a cell with style as rich text, else raw
// text), its text after, and the feedback buttons when asked. The
// message's text stays the whole reply (the table as text) for
// notifications and clients without tables.
func tableBlocks(t *pipeline.Table, feedback bool) []slack.Block {
	blocks := textBlocks(t.Before)
	table := slack.NewTableBlock("")
	for _, row := range t.Rows {
		cells := make([]slack.TableCell, len(row))
		for i, c := range row {
			cells[i] = tableCell(c)
		}
		table.AddRow(cells...)
	}
	settings := make([]slack.ColumnSetting, len(t.Align))
	aligned := false
	for i, a := range t.Align {
		settings[i] = slack.ColumnSetting{Align: slack.ColumnAlignment(a), IsWrapped: true}
		if a == "" {
			settings[i].Align = slack.ColumnAlignmentLeft
		} else {
			aligned = true
		}
	}
	if aligned {
		table.WithColumnSettings(settings...)
	}
	blocks = append(blocks, table)
	blocks = append(blocks, textBlocks(t.After)...)
	if feedback {
		blocks = append(blocks, feedbackActions())
	}
	return blocks
}

// tableCell is a cell as the table block takes it.
func tableCell(c pipeline.TableCell) slack.TableCell {
	if c.Plain() {
		text := c.Text()
		if text == "" {
			text = " " // an empty cell
		}
		return slack.NewTableRawTextCell(text)
	}
	elements := make([]slack.RichTextSectionElement, 0, len(c))
	for _, sp := range c {
		var style *slack.RichTextSectionTextStyle
		if sp.Bold || sp.Italic || sp.Strike || sp.Code {
			style = &slack.RichTextSectionTextStyle{Bold: sp.Bold, Italic: sp.Italic, Strike: sp.Strike, Code: sp.Code}
		}
		switch {
		case sp.User != "":
			elements = append(elements, slack.NewRichTextSectionUserElement(sp.User, style))
			continue
		case sp.Channel != "":
			elements = append(elements, slack.NewRichTextSectionChannelElement(sp.Channel, style))
			continue
		}
		if sp.URL != "" {
			elements = append(elements, slack.NewRichTextSectionLinkElement(sp.URL, sp.Text, style))
			continue
		}
		elements = append(elements, slack.NewRichTextSectionTextElement(sp.Text, style))
	}
	return slack.NewTableRichTextCell(slack.NewRichTextSection(elements...))
}
