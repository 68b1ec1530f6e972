package runner

import (
	"errors"
	"strings"

	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Injected is what one step handed to the service, for Settle and Drops.
type Injected struct {
	// TS is a message's ts (a click's is the card's).
	TS string
	// IDs are the step's events: a message, and at a channel's thread root
	// its app_mention twin; or a click.
	IDs []string
	// CardsBefore is how many cards were unresolved before the step, less
	// the card clicked: one more means a turn waits on a click.
	CardsBefore int
	click       bool
	// card, for a click on a card, is the approval it decides: a click the
	// gate took resumes the turn that waited on it, one it refused leaves
	// the card waiting (the card's own update may come after the click
	// was handled: the approval's state says which).
	card string
	// stopping, for a stop click, are the events of the thread's turn it
	// may stop.
	stopping []string
}

// SendOptions are a send's choices beyond its words.
type SendOptions struct {
	// Mention is whether the bot's mention is prefixed to the words: nil
	// is the usual way, a thread's root in a channel mentions the bot and
	// a reply does not; false posts a root without it (people talk among
	// themselves), true a reply with it (calling the bot into the thread).
	Mention *bool
	// Bot posts the message as another app: it carries a bot id.
	Bot bool
	// Peer posts it as a peer persona's app: its bot user and a bot id,
	// no subtype, one message event (another app's post on the platform).
	Peer bool
	// Files are attached by name, each made from its extension
	// (sim.SampleFile).
	Files []string
	// Persona is the persona of a team (Options.Personas) whose bot the
	// mention calls; "": the first's.
	Persona string
}

// Send injects user's message in channel: in the thread whose root is at
// thread, or as a new thread's root when thread is "". As on the platform,
// a thread's root in a channel (not a DM) mentions the bot and arrives
// twice, as message and as app_mention, with the same channel and ts.
func (s *Sim) Send(user, channel, thread, text string) (Injected, error) {
	return s.SendWith(user, channel, thread, text, SendOptions{})
}

// SendWith injects user's message as Send does, with o's choices. A
// message that mentions the bot in a channel arrives twice, as Send's
// root does.
func (s *Sim) SendWith(user, channel, thread, text string, o SendOptions) (Injected, error) {
	in := Injected{CardsBefore: unresolved(s.chat.Cards())}
	var attached []pipeline.File
	for _, name := range o.Files {
		mimeType, content := sim.SampleFile(name)
		attached = append(attached, s.chat.AddFile(name, mimeType, content))
	}
	ev := &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", UserID: user, ChannelID: channel, ThreadTS: thread, Text: text,
		Files: attached}
	if o.Bot {
		ev.BotID, ev.Subtype = "B"+strings.TrimPrefix(user, "U"), "bot_message"
	}
	if o.Peer {
		ev.BotID = "B" + strings.TrimPrefix(user, "U")
	}
	mention := thread == "" && !isDM(channel)
	if o.Mention != nil {
		mention = *o.Mention
	}
	called := bot.UserID
	var app *platform.App
	if m := s.member(o.Persona); m != nil {
		called, app = m.Bot.UserID, m.app
	}
	if mention {
		ev.Text = "<@" + called + "> " + text
	}
	var err error
	if mention && !isDM(channel) && !o.Peer {
		twin := &pipeline.Event{Kind: pipeline.KindMessage, Type: "app_mention", UserID: user, BotID: ev.BotID,
			ChannelID: channel, ThreadTS: thread, Text: ev.Text, Files: attached}
		if app != nil {
			err = s.injectMentionTo(app, ev, twin)
		} else {
			err = s.injectMention(ev, twin)
		}
		in.IDs = []string{ev.ID, twin.ID}
	} else {
		err = s.inject(ev)
		in.IDs = []string{ev.ID}
	}
	if err != nil {
		return Injected{CardsBefore: in.CardsBefore}, err
	}
	in.TS = ev.TS
	return in, nil
}

// Click injects user's click on the button action of card.
func (s *Sim) Click(user string, card platform.Card, action string) (Injected, error) {
	in := Injected{TS: card.TS, CardsBefore: unresolved(s.chat.Cards()) - 1, click: true, card: card.Card.ID} // this one may resolve
	ev := &pipeline.Event{Kind: pipeline.KindAction, Type: "block_actions", UserID: user, ChannelID: card.ChannelID,
		ThreadTS: card.ThreadTS, TS: card.TS, Action: &pipeline.Action{ActionID: action, Value: card.Card.ID, MessageTS: card.TS}}
	if err := s.inject(ev); err != nil {
		return in, err
	}
	in.IDs = []string{ev.ID}
	return in, nil
}

// Stop injects user's click on the stop button of the newest agent
// session that shows a turn at work (platform.Chat.Busy).
func (s *Sim) Stop(user string) (Injected, error) {
	channel, thread, ok := s.chat.Busy()
	if !ok {
		return Injected{}, errors.New("expected a turn at work, its session showing the stop button; saw none")
	}
	// A stopped turn's card is resolved (expired) by the turn itself:
	// until its end, as many cards wait as before the click; a refused
	// click leaves them waiting.
	in := Injected{CardsBefore: unresolved(s.chat.Cards()) - 1, click: true,
		stopping: s.pendingIn(pipeline.ThreadKey(channel, thread))}
	ev := &pipeline.Event{Kind: pipeline.KindStop, Type: "agent_session_stopped", UserID: user, ChannelID: channel,
		ThreadTS: thread, Stop: &pipeline.Stop{}}
	if err := s.inject(ev); err != nil {
		return in, err
	}
	in.IDs = []string{ev.ID}
	return in, nil
}

// HomeTab injects user's opening of their Home tab, or with button their
// click on it (value: what it acts on).
func (s *Sim) HomeTab(user, button, value string) (Injected, error) {
	in := Injected{CardsBefore: unresolved(s.chat.Cards()), click: true}
	ev := &pipeline.Event{Kind: pipeline.KindHome, Type: "app_home_opened", UserID: user, HomeTab: true}
	if button != "" {
		ev.Type, ev.Action = "block_actions", &pipeline.Action{ActionID: button, Value: value}
	}
	if err := s.inject(ev); err != nil {
		return in, err
	}
	in.IDs = []string{ev.ID}
	return in, nil
}

// newest returns the newest unresolved card offering action.
func newest(cards []platform.Card, action string) (platform.Card, bool) {
	for i := len(cards) - 1; i >= 0; i-- {
		if cards[i].Offers(action) {
			return cards[i], true
		}
	}
	return platform.Card{}, false
}

func isDM(channel string) bool { return strings.HasPrefix(channel, "D") }
