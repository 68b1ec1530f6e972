package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/persona-runtime/agent/internal/sim"
	simchat "github.com/persona-runtime/agent/internal/sim/platform"
	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// liveSettle bounds the wait for a live model's turn: a turn with tools
// takes minutes, and the transcript shows its progress meanwhile.
const liveSettle = 3 * time.Minute

// replModel is the REPL. Only Update touches it; the commands it returns
// touch the simWorld, never the model (the observer's Send would deadlock
// an Update that injects).
type replModel struct {
	ctx         context.Context
	w           *simWorld
	scenarioDir string
	roles       map[string]string // role → user id
	who         map[string]string // user id → role
	layers      map[string]string // layer → channel id

	actor, actorName string // user id; the role or id typed
	channel, layer   string
	thread           string   // root ts of the current conversation; "" starts one
	rooting          bool     // a root is on its way: its ts decides the thread
	held             []string // lines typed meanwhile, handled once it is known

	lines   []string        // the transcript, rendered
	cards   []string        // card ts by number - 1
	threads map[string]int  // channel/root ts → conversation number
	shown   map[string]bool // channel/ts of the inbound messages shown
	busy    int
	history []string
	histPos int

	width, height int
	vp            viewport.Model
	in            textinput.Model
}

var (
	replHeaderStyle = lipgloss.NewStyle().Bold(true).Reverse(true).Inline(true)
	replNoteStyle   = lipgloss.NewStyle().Faint(true)
	replBadStyle    = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	replGoodStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	replCardStyle   = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	simRoles        = []string{"manager", "backup", "approver", "member", "outsider"}
)

func newREPLModel(ctx context.Context, w *simWorld, scenarioDir string) *replModel {
	m := &replModel{ctx: ctx, w: w, scenarioDir: scenarioDir, threads: map[string]int{}, shown: map[string]bool{},
		width: 80, height: 24, who: map[string]string{}}
	// Roles and layers follow the running persona where it names them
	// (shared config, --soul), the sim world's otherwise.
	m.roles = map[string]string{"manager": sim.Manager, "backup": sim.Backup, "approver": sim.Approver,
		"member": sim.Member, "outsider": sim.Outsider}
	m.layers = map[string]string{"trusted": sim.TrustedChannel, "allowed": sim.AllowedChannel,
		"restricted": sim.RestrictedChannel, "dm": sim.DMChannel}
	if p := w.svc.persona; p != nil {
		set := func(m map[string]string, k, v string) {
			if v != "" {
				m[k] = v
			}
		}
		set(m.roles, "manager", p.Manager.UserID)
		set(m.roles, "backup", p.BackupManager.UserID)
		if len(p.Approvers) > 0 {
			set(m.roles, "approver", p.Approvers[0].UserID)
		}
		if len(p.Trusted) > 0 {
			set(m.layers, "trusted", p.Trusted[0].ID)
		}
		if len(p.Allowed) > 0 {
			set(m.layers, "allowed", p.Allowed[0].ID)
		}
	}
	for i := len(simRoles) - 1; i >= 0; i-- { // the first role wins an id named twice
		m.who[m.roles[simRoles[i]]] = simRoles[i]
	}
	m.actorName, m.actor = "manager", m.roles["manager"]
	m.setChannel(m.layers["dm"])
	m.vp = viewport.New(m.width, m.height-2)
	m.in = textinput.New()
	m.in.Placeholder = "a message, or /help"
	m.in.Focus()
	return m
}

func (m *replModel) Init() tea.Cmd { return textinput.Blink }

func (m *replModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.vp.Width, m.vp.Height = msg.Width, max(1, msg.Height-2)
		m.in.Width = max(1, msg.Width-len(m.in.Prompt)-1)
		m.refresh()
		return m, nil
	case tea.KeyMsg:
		switch msg.Type {
		case tea.KeyCtrlC, tea.KeyEsc:
			return m, tea.Quit
		case tea.KeyEnter:
			line := strings.TrimSpace(m.in.Value())
			m.in.Reset()
			if line == "" {
				return m, nil
			}
			m.history, m.histPos = append(m.history, line), len(m.history)+1
			return m, m.handle(line)
		case tea.KeyPgUp:
			m.vp.PageUp()
			return m, nil
		case tea.KeyPgDown:
			m.vp.PageDown()
			return m, nil
		case tea.KeyUp, tea.KeyDown:
			m.recall(msg.Type == tea.KeyUp)
			return m, nil
		}
	case entryMsg:
		m.entry(simchat.Entry(msg))
		return m, nil
	case injectedMsg:
		return m, m.injected(msg)
	case settledMsg:
		m.busy--
		if msg.err != nil && m.ctx.Err() == nil {
			m.note("  " + msg.err.Error())
		}
		m.drop(msg.ids)
		return m, nil
	case stepMsg:
		m.busy--
		return m, m.stepDone(msg)
	}
	var cmd tea.Cmd
	m.in, cmd = m.in.Update(msg)
	return m, cmd
}

func (m *replModel) recall(up bool) {
	switch {
	case up && m.histPos > 0:
		m.histPos--
	case !up && m.histPos < len(m.history):
		m.histPos++
	}
	m.in.Reset()
	if m.histPos < len(m.history) {
		m.in.SetValue(m.history[m.histPos])
	}
}

func (m *replModel) View() string {
	return m.header() + "\n" + m.vp.View() + "\n" + m.in.View()
}

// header is one line: version, agent, actor, channel and layer.
func (m *replModel) header() string {
	parts := []string{Name + " · v" + Version, m.agentMode(), m.actorName + " " + m.actor, m.channel + " " + m.layer}
	if m.actorName == m.actor {
		parts[2] = m.actor
	}
	if m.busy > 0 {
		parts = append(parts, "working…")
	}
	h := strings.Join(parts, " │ ")
	if pad := m.width - lipgloss.Width(h); pad > 0 {
		h += strings.Repeat(" ", pad)
	}
	return replHeaderStyle.MaxWidth(m.width).Render(h)
}

// agentMode is "stub (<behaviour>)", or "live" and the model's name.
func (m *replModel) agentMode() string {
	if m.w.stub != nil {
		return "stub (" + m.w.stub.Behaviour() + ")"
	}
	if name := m.w.model.Model(); name != "" {
		return "live · " + name
	}
	return "live"
}

// add appends a transcript line, following the end unless the reader
// scrolled up.
func (m *replModel) add(line string) {
	follow := m.vp.AtBottom()
	m.lines = append(m.lines, line)
	m.refresh()
	if follow {
		m.vp.GotoBottom()
	}
}

func (m *replModel) note(s string)  { m.add(replNoteStyle.Render(s)) }
func (m *replModel) fail(err error) { m.add(replBadStyle.Render("  " + err.Error())) }

func (m *replModel) refresh() {
	wrap := lipgloss.NewStyle().Width(max(1, m.width))
	out := make([]string, len(m.lines))
	for i, l := range m.lines {
		out[i] = wrap.Render(l)
	}
	m.vp.SetContent(strings.Join(out, "\n"))
}

// handle runs one line: a command, or a message from the actor.
func (m *replModel) handle(line string) tea.Cmd {
	if m.rooting {
		// Everything waits, commands too, until the root's ts is known: the
		// next message continues its thread, and order is kept.
		m.held = append(m.held, line)
		return nil
	}
	if !strings.HasPrefix(line, "/") {
		return m.send(line)
	}
	m.note("> " + line)
	name, rest, _ := strings.Cut(line, " ")
	args := strings.Fields(rest)
	var cmd tea.Cmd
	var err error
	switch name {
	case "/help":
		m.help()
	case "/quit", "/exit":
		return tea.Quit
	case "/scenario":
		cmd, err = m.scenario(args)
	case "/click":
		cmd, err = m.click(args)
	case "/as":
		err = m.as(args)
	case "/channel":
		if len(args) != 1 || !isChannelID(args[0]) {
			err = errors.New("usage: /channel <channel_id> (C…, G… or D…)")
		} else {
			m.setChannel(args[0])
		}
	case "/dm":
		m.setChannel(m.layers["dm"])
	case "/layer":
		if len(args) != 1 || m.layers[args[0]] == "" {
			err = errors.New("usage: /layer trusted|allowed|restricted|dm")
		} else {
			m.setChannel(m.layers[args[0]])
		}
	case "/behavior", "/behaviour":
		err = m.behaviour(args)
	default:
		err = fmt.Errorf("unknown command %s: /help lists the commands", name)
	}
	if err != nil {
		m.fail(err)
	}
	return cmd
}

func (m *replModel) help() {
	ids := make([]string, len(simRoles))
	for i, r := range simRoles {
		ids[i] = r + " " + m.roles[r]
	}
	for _, l := range []string{
		"a line without / is a message from the actor in the current channel; in a channel",
		"  the first starts a thread (mentioning the bot) and the next ones continue it",
		"/help                  this list",
		"/scenario <name>       play " + filepath.Join(m.scenarioDir, "<name>.yaml") + " (no name: list)",
		"/as <role or user id>  change the actor",
		"/click <n> <action>    approve, deny or always on card n",
		"/channel <channel_id>  talk in a channel (a new conversation)",
		"/dm                    talk in the DM " + m.layers["dm"] + " (a new conversation)",
		"/layer <layer>         trusted " + m.layers["trusted"] + ", allowed " + m.layers["allowed"] +
			", restricted " + m.layers["restricted"] + ", dm " + m.layers["dm"],
		"/behavior <name>       the stub agent's behaviour",
		"/quit                  quit (also Esc, Ctrl+C); PgUp/PgDn scroll, ↑/↓ recall",
		"roles: " + strings.Join(ids, ", "),
		"behaviours: " + strings.Join(scripted.Behaviours, ", "),
	} {
		m.note("  " + l)
	}
}

func isChannelID(s string) bool {
	if len(s) < 2 || !strings.ContainsRune("CDG", rune(s[0])) {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// setChannel starts a new conversation in a channel.
func (m *replModel) setChannel(id string) {
	m.channel, m.thread = id, ""
	m.layer = string(pipeline.LayerRestricted)
	if p := m.w.svc.persona; p != nil {
		m.layer = string(p.Layer(id, isDMChannel(id)))
	}
}

func isDMChannel(id string) bool { return strings.HasPrefix(id, "D") }

func (m *replModel) as(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: /as <role or user id>")
	}
	id := m.roles[args[0]]
	if id == "" {
		u, ok := sim.RoleUser(args[0])
		if !ok {
			return fmt.Errorf("unknown actor %q (want a role: %s, or a user id)", args[0], strings.Join(simRoles, ", "))
		}
		id = u
	}
	m.actorName, m.actor = args[0], id
	return nil
}

func (m *replModel) behaviour(args []string) error {
	if m.w.stub == nil {
		return errors.New("/behavior needs the stub agent: this REPL runs the live model (--stub selects the stub)")
	}
	if len(args) != 1 {
		return fmt.Errorf("usage: /behavior <name> (one of %s)", strings.Join(scripted.Behaviours, ", "))
	}
	return m.w.stub.SetBehaviour(args[0])
}

// send injects a message from the actor in the current conversation.
func (m *replModel) send(text string) tea.Cmd {
	user, channel, thread, w := m.actor, m.channel, m.thread, m.w
	m.rooting = thread == ""
	m.busy++
	return func() tea.Msg {
		before := unresolvedCards(w.mem.Cards())
		ts, ids, err := injectMessage(w, user, channel, thread, text)
		return injectedMsg{root: thread == "", channel: channel, ts: ts, ids: ids, before: before, err: err}
	}
}

// injectMessage injects a person's message. A thread's root in a channel
// mentions the bot and arrives twice, as message and as app_mention, as on
// the platform (runScenario's send). It returns the message's ts and the
// events' ids.
func injectMessage(w *simWorld, user, channel, thread, text string) (string, []string, error) {
	twin := thread == "" && !isDMChannel(channel)
	if twin {
		text = "<@" + simBot.UserID + "> " + text
	}
	ev := &pipeline.Event{Kind: pipeline.KindMessage, Type: "message", UserID: user, ChannelID: channel, ThreadTS: thread, Text: text}
	if err := w.inject(ev); err != nil {
		return "", nil, err
	}
	ids := []string{ev.ID}
	if twin {
		mention := &pipeline.Event{Kind: pipeline.KindMessage, Type: "app_mention", UserID: user, ChannelID: channel, TS: ev.TS, Text: text}
		if err := w.inject(mention); err != nil {
			return "", nil, err
		}
		ids = append(ids, mention.ID)
	}
	return ev.TS, ids, nil
}

// injectClick injects user's click on a card's button.
func injectClick(w *simWorld, user string, c simchat.Card, action string) (string, error) {
	ev := &pipeline.Event{Kind: pipeline.KindAction, Type: "block_actions", UserID: user, ChannelID: c.ChannelID,
		ThreadTS: c.ThreadTS, TS: c.TS, Action: &pipeline.Action{ActionID: action, Value: c.Card.ID, MessageTS: c.TS}}
	err := w.inject(ev)
	return ev.ID, err
}

func (m *replModel) injected(msg injectedMsg) tea.Cmd {
	if msg.root {
		m.rooting = false
		if msg.err == nil && m.channel == msg.channel && m.thread == "" {
			m.thread = msg.ts
		}
	}
	var cmds []tea.Cmd
	if msg.err != nil {
		m.busy--
		m.fail(msg.err)
	} else {
		ctx, w := m.ctx, m.w
		cmds = append(cmds, func() tea.Msg { return settledMsg{ids: msg.ids, err: settleEvents(ctx, w, msg.before, msg.ids)} })
	}
	held := m.held
	m.held = nil
	for _, l := range held {
		cmds = append(cmds, m.handle(l)) // held again behind a new root
	}
	return tea.Batch(cmds...)
}

// settleEvents waits until the events ids were handled or a new card
// waits for a click. Unlike simWorld.settle it ignores other events: in a
// REPL an earlier turn may wait on a card for as long as nobody clicks.
func settleEvents(ctx context.Context, w *simWorld, cardsBefore int, ids []string) error {
	limit := stepTimeout
	if w.stub == nil {
		limit = liveSettle
	}
	timeout := time.After(limit)
	for {
		changed := w.mem.Changed()
		w.mu.Lock()
		pending, progress := 0, w.progress
		for _, id := range ids {
			if w.pending[id] {
				pending++
			}
		}
		w.mu.Unlock()
		if pending == 0 || unresolvedCards(w.mem.Cards()) > cardsBefore {
			return nil
		}
		select {
		case <-changed:
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return fmt.Errorf("no answer within %s: the thread may be waiting on a card", limit)
		}
	}
}

// drop shows why a send or click was dropped. A channel root arrives twice
// and one copy is dropped as a duplicate of the other: that is no drop.
func (m *replModel) drop(ids []string) {
	m.w.mu.Lock()
	reason := ""
	for i, id := range ids {
		r, ok := m.w.drops[id]
		if !ok {
			reason = ""
			break
		}
		if i == 0 || reason == pipeline.DropDuplicate {
			reason = r
		}
	}
	m.w.mu.Unlock()
	if reason != "" {
		m.add(replBadStyle.Render("  dropped: " + reason))
	}
}

func (m *replModel) click(args []string) (tea.Cmd, error) {
	if len(args) != 2 {
		return nil, errors.New("usage: /click <n> <action> (approve, deny or always)")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		return nil, errors.New("usage: /click <n> <action>: n is a card's number")
	}
	if n > len(m.cards) {
		return nil, fmt.Errorf("no card %d: %d card(s) posted", n, len(m.cards))
	}
	action, ts := args[1], m.cards[n-1]
	cards := m.w.mem.Cards()
	var card simchat.Card
	for _, c := range cards {
		if c.TS == ts {
			card = c
		}
	}
	switch {
	case card.Resolved:
		return nil, fmt.Errorf("card %d is resolved: %s", n, card.Card.Outcome)
	case !card.Offers(action):
		return nil, fmt.Errorf("card %d offers %s", n, strings.Join(card.Card.Actions, ", "))
	}
	user, w, ctx := m.actor, m.w, m.ctx
	before := unresolvedCards(cards) - 1 // this one may resolve
	m.busy++
	return func() tea.Msg {
		id, err := injectClick(w, user, card, action)
		if err != nil {
			return settledMsg{err: err}
		}
		return settledMsg{ids: []string{id}, err: settleEvents(ctx, w, before, []string{id})}
	}, nil
}

// entry renders one transcript entry.
func (m *replModel) entry(e simchat.Entry) {
	at := m.where(e)
	text := strings.ReplaceAll(e.Text, "\n", "\n    ")
	switch e.Op {
	case simchat.OpInbound:
		switch {
		case e.Action != nil:
			m.add(fmt.Sprintf("%s %s clicked %s%s", at, m.name(e.UserID), e.Action.ActionID, m.cardRef(e.TS)))
		case e.Kind == pipeline.KindMessage && m.shown[e.ChannelID+"/"+e.TS]:
			// the app_mention twin of a message shown
		default:
			m.shown[e.ChannelID+"/"+e.TS] = true
			m.add(fmt.Sprintf("%s %s: %s", at, m.name(e.UserID), text))
		}
	case simchat.OpPost, simchat.OpUpdate:
		who := "bot"
		if e.Op == simchat.OpUpdate {
			who = "bot (edited)"
		}
		if e.Card != nil {
			m.add(at + " bot: " + replCardStyle.Render(m.cardLine(e.TS, *e.Card)))
		} else {
			m.add(fmt.Sprintf("%s %s: %s", at, who, text))
		}
	case simchat.OpEphemeral:
		m.add(fmt.Sprintf("%s bot, to %s only: %s", at, m.name(e.To), text))
	case simchat.OpUpload:
		name := ""
		if len(e.Files) > 0 {
			name = e.Files[0].Name
		}
		m.add(fmt.Sprintf("%s bot uploaded %s: %s", at, name, text))
	case simchat.OpStatus:
		if e.Text != "" { // a cleared status is no news
			m.note(fmt.Sprintf("%s status: %s", at, e.Text))
		}
	default:
		m.add(fmt.Sprintf("%s %s: %s", at, e.Op, text))
	}
}

// where labels an entry's conversation: the channel and the thread's
// number in order of appearance.
func (m *replModel) where(e simchat.Entry) string {
	root := orDefault(e.ThreadTS, e.TS)
	if root == "" {
		return "[" + e.ChannelID + "]"
	}
	key := e.ChannelID + "/" + root
	n, ok := m.threads[key]
	if !ok {
		n = len(m.threads) + 1
		m.threads[key] = n
	}
	return fmt.Sprintf("[%s #%d]", e.ChannelID, n)
}

func (m *replModel) name(id string) string {
	if r, ok := m.who[id]; ok {
		return r
	}
	return id
}

// cardLine numbers cards in order of appearance:
// "[card 1] approval · deploy: deploy prod (approve, deny)", and once
// resolved "[card 1] approval · deploy: deploy prod: approved by <@U…>".
func (m *replModel) cardLine(ts string, c pipeline.Card) string {
	n := m.cardNumber(ts)
	if n == 0 {
		m.cards = append(m.cards, ts)
		n = len(m.cards)
	}
	state := " (" + strings.Join(c.Actions, ", ") + ")"
	if len(c.Actions) == 0 {
		state = ": " + orDefault(c.Outcome, "resolved")
	}
	return fmt.Sprintf("[card %d] %s · %s: %s%s", n, c.Kind, c.Category, c.Summary, state)
}

func (m *replModel) cardNumber(ts string) int {
	for i, t := range m.cards {
		if t == ts {
			return i + 1
		}
	}
	return 0
}

func (m *replModel) cardRef(ts string) string {
	if n := m.cardNumber(ts); n > 0 {
		return fmt.Sprintf(" on card %d", n)
	}
	return ""
}
