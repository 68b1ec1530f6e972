package slackio

import (
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Block Kit limits (docs.slack.dev, "Reference: blocks"): a section's text
// ≤ 3,000 characters, a block_id ≤ 255, a button's value ≤ 2,000 and its
// text ≤ 75.
const (
	cardSectionMax = 3000
	cardBlockIDMax = 255
	cardValueMax   = 2000
	// cardFallbackMax keeps the notification text of a card short: the
	// blocks carry the content.
	cardFallbackMax = 300
	// cardSectionsMax is how many text sections a card may have: a
	// message holds at most 50 blocks, and a card adds a context and an
	// actions block.
	cardSectionsMax = 48
)

// cardButtons are the labels and styles of the known card actions.
var cardButtons = map[string]struct {
	label string
	style slack.Style
}{
	pipeline.ActionApprove: {"Approve", slack.StylePrimary},
	pipeline.ActionDeny:    {"Deny", slack.StyleDanger},
	pipeline.ActionAlways:  {"Always allow in this thread", ""},
}

// cardBlocks renders a card as Block Kit: sections with the category and
// the summary, then the details (as many sections as the text needs: a
// card's text is never cut to fit one), a context line with the digest of
// the call the card releases (and the outcome once decided), and, while
// the card is pending, an actions block whose block_id is
// "<kind>:<card id>" and whose buttons carry action_id = the action and
// value = the card id.
func cardBlocks(c *pipeline.Card) []slack.Block {
	head := "*" + cardTitle(c) + "*"
	if c.Category != "" {
		head += " · " + cardEscape(c.Category)
	}
	if c.ActsAs.Server != "" {
		// The runtime's line: the person stays a mention.
		head += "\n" + c.ActsAs.Sentence(cardEscape)
	}
	if c.Summary != "" {
		head += "\n" + cardEscape(c.Summary)
	}
	texts := cardSplit(head, cardSectionMax)
	if c.Details != "" {
		details := strings.ReplaceAll(cardEscape(c.Details), "```", "'''")
		texts = append(texts, cardSplit("```\n"+details+"\n```", cardSectionMax)...)
	}
	if len(texts) > cardSectionsMax {
		// Past what a message holds: said on the card, never silent.
		// The tool gate keeps its cards far below this.
		texts = append(texts[:cardSectionsMax-1], "✂ _The rest of this card's text is cut: a message holds at most 50 blocks._")
	}
	var blocks []slack.Block
	for _, t := range texts {
		blocks = append(blocks, cardSection(t))
	}
	var footer []slack.MixedElement
	if c.Digest != "" {
		footer = append(footer, cardMrkdwn("digest `"+cardTruncate(strings.ReplaceAll(c.Digest, "`", ""), 200)+"`"))
	}
	if c.Outcome != "" {
		// The outcome names people as <@U…>: not escaped.
		footer = append(footer, cardMrkdwn(cardTruncate(c.Outcome, cardSectionMax)))
	}
	if len(footer) > 0 {
		blocks = append(blocks, slack.NewContextBlock("", footer...))
	}
	if len(c.Actions) > 0 {
		blocks = append(blocks, cardActions(c))
	}
	return blocks
}

// cardActions is the actions block of a pending card; a repeated action is
// rendered once (action_ids must be unique in a block).
func cardActions(c *pipeline.Card) *slack.ActionBlock {
	value := cardTruncateBytes(c.ID, cardValueMax)
	seen := map[string]bool{}
	var buttons []slack.BlockElement
	for _, a := range c.Actions {
		if a == "" || seen[a] {
			continue
		}
		seen[a] = true
		spec, ok := cardButtons[a]
		if !ok {
			spec.label = a
		}
		b := slack.NewButtonBlockElement(a, value, slack.NewTextBlockObject(slack.PlainTextType, spec.label, false, false))
		if spec.style != "" {
			b = b.WithStyle(spec.style)
		}
		buttons = append(buttons, b)
	}
	return slack.NewActionBlock(cardTruncateBytes(cardKind(c)+":"+c.ID, cardBlockIDMax), buttons...)
}

// cardSplit cuts mrkdwn text into pieces of at most max characters, at
// line ends where it can; a code block cut in two is closed at the end of
// one piece and opened again at the start of the next, and a line too
// long for a piece is cut between characters, never inside an entity
// (&amp;).
func cardSplit(text string, max int) []string {
	const (
		open  = "```\n"
		close = "\n```"
	)
	var (
		out    []string
		cur    strings.Builder
		n      int  // characters in cur
		fenced bool // the text at the end of cur is in a code block
		fresh  = 0  // characters of a piece before any text: the reopened fence
	)
	flush := func() {
		piece := strings.TrimSuffix(cur.String(), "\n")
		if fenced {
			piece += close
		}
		out = append(out, piece)
		cur.Reset()
		n, fresh = 0, 0
		if fenced {
			cur.WriteString(open)
			n, fresh = len(open), len(open)
		}
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		toggles := strings.Count(line, "```")%2 == 1
		for line != "" {
			room := max - n - len(close) // a piece may need closing
			size := utf8.RuneCountInString(line)
			if size <= room {
				cur.WriteString(line)
				n += size
				break
			}
			if n > fresh && size <= max-len(open)-len(close) {
				flush() // the line fits whole in the next piece
				continue
			}
			head := cardCut(line, room)
			if head == "" {
				flush()
				continue
			}
			cur.WriteString(head)
			n += utf8.RuneCountInString(head)
			line = line[len(head):]
			flush()
		}
		if toggles {
			fenced = !fenced
		}
	}
	if n > fresh {
		out = append(out, strings.TrimSuffix(cur.String(), "\n"))
	}
	return out
}

// cardCut is the longest start of s with at most n characters that does
// not end inside an entity.
func cardCut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	if i := strings.LastIndexByte(s, '&'); i >= 0 && !strings.Contains(s[i:], ";") {
		s = s[:i]
	}
	return s
}

// cardFallbackText is the plain text of a card's message, shown in
// notifications and by clients without Block Kit.
func cardFallbackText(c *pipeline.Card) string {
	text := cardTitle(c)
	if c.Category != "" {
		text += ": " + c.Category
	}
	if c.Summary != "" {
		text += ": " + c.Summary
	}
	if c.Outcome != "" {
		text += " (" + c.Outcome + ")"
	}
	return cardTruncate(cardEscapeKeep(text, c.Outcome), cardFallbackMax)
}

func cardKind(c *pipeline.Card) string {
	if c.Kind == "" {
		return "approval"
	}
	return c.Kind
}

func cardTitle(c *pipeline.Card) string {
	if k := cardKind(c); k != "approval" {
		return cardEscape(k)
	}
	return "Approval needed"
}

func cardMrkdwn(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, false)
}

func cardSection(text string) *slack.SectionBlock {
	return slack.NewSectionBlock(cardMrkdwn(cardTruncate(text, cardSectionMax)), nil, nil)
}

// cardEscape escapes the three characters mrkdwn reserves.
func cardEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// cardEscapeKeep escapes s except for the trailing keep (the
// outcome, whose mentions must stay links).
func cardEscapeKeep(s, keep string) string {
	if keep != "" {
		if head, ok := strings.CutSuffix(s, " ("+keep+")"); ok {
			return cardEscape(head) + " (" + keep + ")"
		}
	}
	return cardEscape(s)
}

// cardTruncate cuts s to at most n characters, ending with "…" when cut,
// without leaving half an entity (&amp;) at the end.
func cardTruncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := string([]rune(s)[:n-1])
	if i := strings.LastIndexByte(cut, '&'); i >= 0 && len(cut)-i < len("&amp;") && !strings.Contains(cut[i:], ";") {
		cut = cut[:i]
	}
	return cut + "…"
}

// cardTruncateBytes cuts s to at most n bytes on a rune boundary.
func cardTruncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut
}

// feedbackBlocks is a final reply with the platform's feedback buttons:
// the text in sections (cut at line ends to fit a section's limit) and a
// context_actions block with a feedback_buttons element whose values are
// pipeline.FeedbackGood and FeedbackBad.
func feedbackBlocks(text string) []slack.Block {
	return append(textBlocks(text), feedbackActions())
}

// textBlocks is text in sections, cut at line ends to fit a section's
// limit.
func textBlocks(text string) []slack.Block {
	var blocks []slack.Block
	for rest := text; rest != ""; {
		part := rest
		if len(part) > cardSectionMax {
			part = part[:cardSectionMax]
			if i := strings.LastIndexByte(part, '\n'); i > cardSectionMax/2 {
				part = part[:i+1]
			}
		}
		rest = rest[len(part):]
		if strings.TrimSpace(part) != "" {
			blocks = append(blocks, slack.NewSectionBlock(cardMrkdwn(part), nil, nil))
		}
	}
	return blocks
}

// feedbackActions is the block of the feedback buttons.
func feedbackActions() slack.Block {
	good := slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "Good answer", false, false), pipeline.FeedbackGood)
	bad := slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "Bad answer", false, false), pipeline.FeedbackBad)
	return slack.NewContextActionsBlock("feedback",
		slack.NewFeedbackButtonsBlockElement(pipeline.ActionFeedback, good, bad))
}
