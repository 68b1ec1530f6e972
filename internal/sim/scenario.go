package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/persona-runtime/agent/internal/sim/scripted"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Scenario is one transcript file (interfaces.md "Simulation scenarios").
type Scenario struct {
	File          string
	Name          string // default: the file's base name without extension
	Layer         string // trusted, allowed, restricted, dm (default dm)
	As            string // a role or a user id (default manager)
	AgentBehavior string // one of Behaviors (default reply)
	// AgentView: the platform takes agent sessions (agents.sessions.setStatus,
	// the stop button); without it the platform refuses them, as a workspace
	// without the agent view does, and turns show the assistant status line.
	AgentView bool
	Soul      *SoulOverride
	// Model are a recorded thread's model answers, turn by turn (`model:`,
	// written by `agent sim record`): the scripted model plays them
	// (AgentBehavior is scripted.Recorded).
	Model [][]scripted.Answer
	// Tasks: the platform shows a turn's tool calls as tasks of a
	// streamed message (AgentView does too); without either it refuses
	// them and turns show the status line.
	Tasks bool
	// SignIn names tool servers of the world that each person signs in
	// to ("auth": "oauth"): /connect gives a link; nobody has connected.
	SignIn []string
	// ToolServers are tool servers with per-person sign-in that the
	// simulator serves (`tool_servers`, toolservers.go).
	ToolServers []ToolServer
	Steps       []Step
	// Personas are the other personas of a team (`personas:`, issue 38):
	// each runs as a service of its own on the same platform, with its
	// own bot, SOUL.md, store and scripted model. The scenario's own
	// persona (the sim world's, Simbot) is the first; none: it runs alone.
	Personas []Persona
}

// Persona is another persona of a scenario's team (`personas:`).
type Persona struct {
	Line int    // the line of its name in the file
	Name string // its SOUL.md's name, what steps call it by (`persona:`)
	User string // its bot user id (U…); its bot id is B and the rest
	// Soul are its sim world's keys, over the default world's, as the
	// scenario's `soul:` (its peers name the personas it hears).
	Soul *SoulOverride
	// AgentBehavior and Model are its scripted model's, as the scenario's.
	AgentBehavior string
	Model         [][]scripted.Answer
}

// SoulOverride are the sim world keys a scenario replaces. A nil field was
// not given; a list given empty is a non-nil pointer to an empty list, and
// "backup: null" (or "") a pointer to "": no backup manager.
type SoulOverride struct {
	Manager   *string
	Backup    *string
	Approvers *[]string // "U… : scope, scope"
	Trusted   *[]string
	Allowed   *[]string
	Blocked   *[]string
	Redaction *[]string // "regex ; description"
	Peers     *[]string // other personas' user ids (## Peers)
	Mandate   *string
}

// Step is one step of a scenario.
type Step struct {
	Line int    // the line of the step's kind in the file
	Kind string // one of the Step… constants

	Text string // send
	As   string // send, click: a role or a user id; "" is the scenario's actor
	// Channel is send's conversation id; a layer name in the file is
	// replaced by that layer's channel (LayerChannel).
	Channel  string
	Thread   string // send: a label; sends with one label share a thread
	DM       bool   // send: in the DM
	Contains string // expect_reply, expect_card
	CardKind string // expect_card (default approval)
	Reason   string // expect_drop: one of pipeline.DropReasons or MoreDropReasons
	Action   string // click: approve, deny, always, stop
	// Files are send's attachments, by name: each is made from its
	// extension (SampleFile).
	Files []string

	// Mention is send's choice of the bot's mention: nil is the default
	// (a channel thread's root mentions the bot, a later send does not);
	// false posts a root without it (people talk, the bot is not called
	// in), true prefixes it to a reply (calling the bot into the thread).
	Mention *bool
	Bot     bool // send: another app posts it (a bot message: it carries a bot id)
	// Peer is send's: a peer persona (soul peers) posts it, as the
	// platform delivers another app's post: its bot user, a bot id, no
	// subtype, one message event (no app_mention twin).
	Peer bool

	// Advance is advance's duration: the simulated clock moves it on; and
	// restart's, the time the service is down (zero: it starts again at
	// once).
	Advance time.Duration
	// When, Prompt and Target are schedule's: a schedule made by As in
	// the thread labelled Thread (in Channel, or the scenario's place),
	// written to the store as the schedule commands would.
	When, Prompt, Target string
	// Button and Value are home's: the button clicked in As's Home tab
	// and what it acts on (none: As opens the tab).
	Button, Value string
	// Persona names a persona of the team (Scenario.Personas; "": the
	// scenario's own): send's mention calls it, expect_reply wants its
	// post, expect_drop its drop.
	Persona string
}

// The step kinds.
const (
	StepSend          = "send"
	StepExpectReply   = "expect_reply"
	StepExpectCard    = "expect_card"
	StepExpectPending = "expect_pending"
	StepExpectDrop    = "expect_drop"
	StepClick         = "click"
	// StepAdvance moves the simulated clock (`advance: 90s`): the
	// schedules due by then run.
	StepAdvance = "advance"
	// StepRestart stops the service and starts it again on the same
	// database, home and platform (`restart: 2h`): the simulated clock
	// moves on by the time it is down, so that the runs it missed are
	// caught up at start.
	StepRestart = "restart"
	// StepSchedule makes a schedule (sim only, until the scenario can say
	// /schedule): `schedule: {when: "in 1m", prompt: ..., target: channel}`.
	StepSchedule = "schedule"
	// StepHome opens As's App Home tab (`home: {as: member}`), or clicks
	// a button of it (`home: {as: member, button: home_remove_schedule,
	// value: saaaaaaab}`).
	StepHome = "home"
)

// HomeButtons are the buttons of the Home tab (internal/home's action ids).
var HomeButtons = []string{"home_remove_schedule", "home_forget_memory", "home_disconnect", "home_lift_mute"}

// ActionStop is click's action on the platform's stop button of the agent
// session of the newest thread whose turn is at work (running, or waiting
// on a card), rather than on a card's button.
const ActionStop = "stop"

// The values scenarios may name, in the order messages list them.
var (
	Layers    = []string{"trusted", "allowed", "restricted", "dm"}
	Roles     = []string{"manager", "backup", "approver", "member", "outsider"}
	Behaviors = scripted.Behaviours
	Actions   = []string{pipeline.ActionApprove, pipeline.ActionDeny, pipeline.ActionAlways, ActionStop}
	CardKinds = []string{"approval"}
)

// stepFields are the fields of each step kind, in the order messages list them.
var stepFields = map[string][]string{
	StepSend:          {"text", "as", "channel", "thread", "dm", "files", "mention", "bot", "peer", "persona"},
	StepExpectReply:   {"contains", "persona"},
	StepExpectCard:    {"kind", "contains"},
	StepExpectPending: {},
	StepExpectDrop:    {"reason", "persona"},
	StepClick:         {"action", "as"},
	StepSchedule:      {"when", "prompt", "target", "as", "channel", "thread"},
	StepHome:          {"as", "button", "value"},
}

var stepKinds = []string{StepSend, StepExpectReply, StepExpectCard, StepExpectPending, StepExpectDrop, StepClick, StepAdvance, StepRestart, StepSchedule, StepHome}

// dropReasons are what expect_drop may name: the drop stage's reasons.
var dropReasons = append(slices.Clone(pipeline.DropReasons), pipeline.MoreDropReasons...)

// Error is a problem with a scenario file; it renders as
// "<file>:<line>: <message>" ("<file>: <message>" when Line is 0).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// yamlLine finds the line in the YAML library's error texts ("yaml: line 3: …").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// ParseScenario reads and validates a scenario. file names it in errors,
// which are *Error: unknown keys anywhere, unknown step kinds, layers,
// roles, behaviours, actions, card kinds and drop reasons, values of the
// wrong type, missing fields, and soul values the SOUL.md parser would not
// take as they are.
func ParseScenario(file string, data []byte) (*Scenario, error) {
	p := &parser{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.fail(nil, "empty scenario")
		}
		return nil, p.yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.fail(&extra, "more than one YAML document")
	} else if !errors.Is(err, io.EOF) {
		return nil, p.yamlError(err)
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = resolve(root.Content[0])
	}
	sc := &Scenario{File: file, Layer: "dm", As: "manager", AgentBehavior: "reply"}
	var steps *yaml.Node
	err := p.mapping(root, "", "a scenario", func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "name":
			sc.Name, err = p.str(k, v, "")
		case "layer":
			sc.Layer, err = p.oneOf(k, v, "", "layer", Layers)
		case "as":
			sc.As, err = p.actor(k, v, "")
		case "agent_behavior":
			sc.AgentBehavior, err = p.oneOf(k, v, "", "agent_behavior", Behaviors)
		case "tasks":
			if v.Kind != yaml.ScalarNode || v.Decode(&sc.Tasks) != nil {
				err = p.fail(v, "tasks is true or false")
			}
		case "agent_view":
			if v.Kind != yaml.ScalarNode || v.Decode(&sc.AgentView) != nil {
				err = p.fail(v, "agent_view is true or false")
			}
		case "sign_in":
			if v.Kind != yaml.SequenceNode || v.Decode(&sc.SignIn) != nil {
				err = p.fail(v, "sign_in is a list of tool server names")
			}
		case "tool_servers":
			sc.ToolServers, err = p.toolServers(v)
		case "soul":
			sc.Soul, err = p.soul(v)
		case "model":
			sc.Model, err = p.model(v)
		case "steps":
			steps = v
		case "personas":
			sc.Personas, err = p.personas(v)
		default:
			return p.fail(k, "unknown key %q (want name, layer, as, agent_behavior, agent_view, tasks, sign_in, tool_servers, soul, model, personas or steps)", k.Value)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if steps == nil {
		return nil, p.fail(nil, "no steps")
	}
	if steps.Kind == yaml.ScalarNode && steps.Tag == "!!null" || steps.Kind == yaml.SequenceNode && len(steps.Content) == 0 {
		return nil, p.fail(steps, "no steps")
	}
	if steps.Kind != yaml.SequenceNode {
		return nil, p.fail(steps, "steps is a list")
	}
	for i, n := range steps.Content {
		st, err := p.step(resolve(n), i+1)
		if err != nil {
			return nil, err
		}
		sc.Steps = append(sc.Steps, st)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if sc.Model != nil {
		if sc.AgentBehavior != "reply" && sc.AgentBehavior != scripted.Recorded {
			return nil, p.fail(nil, "model: the recorded answers are the agent's behaviour: leave agent_behavior out")
		}
		sc.AgentBehavior = scripted.Recorded
	}
	if err := p.stepPersonas(sc); err != nil {
		return nil, err
	}
	return sc, nil
}

// model reads `model:`: a list of turns, each a list of answers
// `{text: …, tools: [{name: …, input: {…}}]}`.
func (p *parser) model(n *yaml.Node) ([][]scripted.Answer, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.fail(n, "model is a list of turns, each a list of answers")
	}
	turns := make([][]scripted.Answer, 0, len(n.Content))
	for i, tn := range n.Content {
		tn = resolve(tn)
		if tn.Kind != yaml.SequenceNode {
			return nil, p.fail(tn, "model: turn %d is a list of answers", i+1)
		}
		turn := make([]scripted.Answer, 0, len(tn.Content))
		for j, an := range tn.Content {
			where := fmt.Sprintf(" in model turn %d answer %d", i+1, j+1)
			var a scripted.Answer
			err := p.mapping(resolve(an), where, "an answer", func(k, v *yaml.Node) error {
				switch k.Value {
				case "text":
					var err error
					a.Text, err = p.str(k, v, where)
					return err
				case "tools":
					if v.Kind != yaml.SequenceNode {
						return p.fail(v, "tools%s is a list of {name, input}", where)
					}
					for _, cn := range v.Content {
						var c scripted.ToolCall
						err := p.mapping(resolve(cn), where, "a tool call", func(ck, cv *yaml.Node) error {
							switch ck.Value {
							case "name":
								var err error
								c.Name, err = p.str(ck, cv, where)
								return err
							case "input":
								var in any
								if err := cv.Decode(&in); err != nil {
									return p.fail(cv, "input%s: %v", where, err)
								}
								if _, isMap := in.(map[string]any); !isMap && in != nil {
									return p.fail(cv, "input%s must be a mapping", where)
								}
								b, err := json.Marshal(in)
								if err != nil {
									return p.fail(cv, "input%s: %v", where, err)
								}
								c.Input = b
								return nil
							}
							return p.fail(ck, "unknown key %q%s (want name or input)", ck.Value, where)
						})
						if err != nil {
							return err
						}
						if c.Name == "" {
							return p.fail(cn, "a tool call%s has no name", where)
						}
						a.Tools = append(a.Tools, c)
					}
					return nil
				}
				return p.fail(k, "unknown key %q%s (want text or tools)", k.Value, where)
			})
			if err != nil {
				return nil, err
			}
			turn = append(turn, a)
		}
		turns = append(turns, turn)
	}
	return turns, nil
}

func (p *parser) step(n *yaml.Node, index int) (Step, error) {
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return Step{}, p.fail(n, "step %d is not a single-key mapping (like `- send: {text: hi}`)", index)
	}
	k, v := resolve(n.Content[0]), resolve(n.Content[1])
	if k.Value == StepAdvance || k.Value == StepRestart {
		return p.advance(k, v, index)
	}
	fields, ok := stepFields[k.Value]
	if !ok {
		return Step{}, p.fail(k, "unknown step %q in step %d (want %s)", k.Value, index, orList(stepKinds))
	}
	st := Step{Line: k.Line, Kind: k.Value}
	where := fmt.Sprintf(" in step %d (%s)", index, st.Kind)
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		v = &yaml.Node{Kind: yaml.MappingNode, Line: v.Line, Column: v.Column}
	}
	if v.Kind != yaml.MappingNode {
		return Step{}, p.fail(v, "step %d (%s) takes a mapping of fields, like `%s: {%s}`", index, st.Kind, st.Kind, example(st.Kind))
	}
	channelNode := (*yaml.Node)(nil)
	err := p.mapping(v, where, "", func(fk, fv *yaml.Node) error {
		if !slices.Contains(fields, fk.Value) {
			want := "no fields"
			if len(fields) > 0 {
				want = orList(fields)
			}
			return p.fail(fk, "unknown key %q%s (want %s)", fk.Value, where, want)
		}
		var err error
		switch fk.Value {
		case "text":
			st.Text, err = p.str(fk, fv, where)
		case "as":
			st.As, err = p.actor(fk, fv, where)
		case "channel":
			channelNode = fk
			st.Channel, err = p.channel(fk, fv, where)
		case "thread":
			st.Thread, err = p.str(fk, fv, where)
		case "dm":
			if fv.Kind != yaml.ScalarNode || fv.Decode(&st.DM) != nil {
				err = p.fail(fv, "dm%s is true or false", where)
			}
		case "mention":
			var m bool
			if fv.Kind != yaml.ScalarNode || fv.Decode(&m) != nil {
				err = p.fail(fv, "mention%s is true or false", where)
			}
			st.Mention = &m
		case "bot":
			if fv.Kind != yaml.ScalarNode || fv.Decode(&st.Bot) != nil {
				err = p.fail(fv, "bot%s is true or false", where)
			}
		case "peer":
			if fv.Kind != yaml.ScalarNode || fv.Decode(&st.Peer) != nil {
				err = p.fail(fv, "peer%s is true or false", where)
			}
		case "contains":
			st.Contains, err = p.str(fk, fv, where)
		case "kind":
			st.CardKind, err = p.oneOf(fk, fv, where, "card kind", CardKinds)
		case "reason":
			st.Reason, err = p.oneOf(fk, fv, where, "drop reason", dropReasons)
		case "action":
			st.Action, err = p.oneOf(fk, fv, where, "action", Actions)
		case "files":
			st.Files, err = p.fileNames(fk, fv, where)
		case "when":
			st.When, err = p.str(fk, fv, where)
		case "prompt":
			st.Prompt, err = p.str(fk, fv, where)
		case "target":
			st.Target, err = p.oneOf(fk, fv, where, "target", []string{"thread", "channel"})
		case "button":
			st.Button, err = p.oneOf(fk, fv, where, "button", HomeButtons)
		case "value":
			st.Value, err = p.str(fk, fv, where)
		case "persona":
			st.Persona, err = p.str(fk, fv, where)
			if err == nil && st.Persona == "" {
				err = p.fail(fv, "persona%s is empty (want a persona's name)", where)
			}
		}
		return err
	})
	if err != nil {
		return Step{}, err
	}
	switch {
	case st.Kind == StepSend && st.Text == "":
		return Step{}, p.fail(k, "step %d (send) needs text", index)
	case st.Kind == StepSend && st.DM && channelNode != nil:
		return Step{}, p.fail(channelNode, "channel%s: a send goes to a channel or to the DM (dm: true), not both", where)
	case st.Kind == StepExpectReply && st.Contains == "":
		return Step{}, p.fail(k, "step %d (expect_reply) needs contains", index)
	case st.Kind == StepExpectDrop && st.Reason == "":
		return Step{}, p.fail(k, "step %d (expect_drop) needs reason (%s)", index, orList(dropReasons))
	case st.Kind == StepClick && st.Action == "":
		return Step{}, p.fail(k, "step %d (click) needs action (%s)", index, orList(Actions))
	case st.Kind == StepSchedule && (st.When == "" || st.Prompt == ""):
		return Step{}, p.fail(k, "step %d (schedule) needs when and prompt", index)
	case st.Kind == StepExpectCard && st.CardKind == "":
		st.CardKind = "approval"
	}
	return st, nil
}

// advance reads `advance: <duration>` (a Go duration, more than zero) and
// `restart: <duration>` (the time down: zero or more).
func (p *parser) advance(k, v *yaml.Node, index int) (Step, error) {
	d, err := time.ParseDuration(v.Value)
	switch {
	case k.Value == StepRestart && (v.Kind != yaml.ScalarNode || err != nil || d < 0):
		return Step{}, p.fail(v, "step %d (restart) takes the time the service is down, like `restart: 2h` (0s: at once)", index)
	case k.Value == StepAdvance && (v.Kind != yaml.ScalarNode || err != nil || d <= 0):
		return Step{}, p.fail(v, "step %d (advance) takes a duration, like `advance: 90s`", index)
	}
	return Step{Line: k.Line, Kind: k.Value, Advance: d}, nil
}

func example(kind string) string {
	switch kind {
	case StepSend:
		return "text: hi"
	case StepExpectReply:
		return "contains: ack"
	case StepExpectCard:
		return "kind: approval"
	case StepExpectDrop:
		return "reason: whitelist"
	case StepClick:
		return "action: approve"
	case StepSchedule:
		return `when: "in 1m", prompt: check the build`
	}
	return ""
}

// parser reports problems of one file.
type parser struct {
	file string
}

// fail returns an *Error at n's line (no line for a nil n).
func (p *parser) fail(n *yaml.Node, format string, args ...any) error {
	e := &Error{File: p.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// yamlError turns the YAML library's syntax error into an *Error.
func (p *parser) yamlError(err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: p.file, Line: line, Msg: m[2]}
	}
	return &Error{File: p.file, Msg: strings.TrimPrefix(msg, "yaml: ")}
}

// resolve follows aliases (*name) to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// mapping calls each for every key of n in order, refusing a node that is
// not a mapping (what names it then) and duplicate or non-scalar keys.
// where ends messages (" in soul", " in step 2 (send)").
func (p *parser) mapping(n *yaml.Node, where, what string, each func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		if what == "" {
			what = "this"
		}
		return p.fail(n, "%s%s must be a mapping of keys", what, where)
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return p.fail(k, "a key%s must be a plain word", where)
		}
		if first, dup := seen[k.Value]; dup {
			return p.fail(k, "duplicate key %q%s (first at line %d)", k.Value, where, first)
		}
		seen[k.Value] = k.Line
		if err := each(k, v); err != nil {
			return err
		}
	}
	return nil
}

// str reads a scalar as text; null is "".
func (p *parser) str(k, v *yaml.Node, where string) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", p.fail(v, "%s%s must be a string", k.Value, where)
	}
	if v.Tag == "!!null" {
		return "", nil
	}
	return v.Value, nil
}

// oneOf reads a string that must be one of values.
func (p *parser) oneOf(k, v *yaml.Node, where, what string, values []string) (string, error) {
	s, err := p.str(k, v, where)
	if err != nil {
		return "", err
	}
	if !slices.Contains(values, s) {
		return "", p.fail(v, "unknown %s %q%s (want %s)", what, s, where, orList(values))
	}
	return s, nil
}

// fileNames reads send's files: a list of plain file names.
func (p *parser) fileNames(k, v *yaml.Node, where string) ([]string, error) {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return nil, p.fail(v, "files%s is a list of file names, like [chart.png, spec.pdf]", where)
	}
	var names []string
	for _, n := range v.Content {
		n = resolve(n)
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Value == "" {
			return nil, p.fail(n, "files%s: each file is a name, like chart.png", where)
		}
		if strings.ContainsAny(n.Value, "/\\\n") {
			return nil, p.fail(n, "files%s: %q is a path; give a file name", where, n.Value)
		}
		names = append(names, n.Value)
	}
	return names, nil
}

func (p *parser) actor(k, v *yaml.Node, where string) (string, error) {
	s, err := p.str(k, v, where)
	if err != nil {
		return "", err
	}
	if _, ok := RoleUser(s); !ok {
		return "", p.fail(v, "unknown actor %q%s (want %s, or a user id such as U0ALICE)", s, where, orList(Roles))
	}
	return s, nil
}

// channel reads a conversation: a layer name (replaced by its channel) or
// a channel id (C…, G…) or DM id (D…).
func (p *parser) channel(k, v *yaml.Node, where string) (string, error) {
	s, err := p.str(k, v, where)
	if err != nil {
		return "", err
	}
	if c := LayerChannel(s); c != "" {
		return c, nil
	}
	if !isID(s, "CGD") {
		return "", p.fail(v, "channel %q%s is neither a layer (%s) nor a channel id (C…, G…, D…)", s, where, orList(Layers))
	}
	return s, nil
}

// orList renders values as "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// Discover lists the scenario files to run, sorted and unique: with no
// args every *.yaml directly in dir (none when dir does not exist); else
// each arg as a glob (a plain path is a glob matching itself), a directory
// standing for its *.yaml files. A pattern that matches nothing adds
// nothing, so a run may have no files at all; a malformed pattern is an
// error.
func Discover(dir string, args []string) ([]string, error) {
	if len(args) == 0 {
		args = []string{filepath.Join(dir, "*.yaml")}
	}
	seen := make(map[string]bool)
	var out []string
	add := func(path string) {
		if !seen[path] {
			seen[path] = true
			out = append(out, path)
		}
	}
	for _, pattern := range args {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return nil, fmt.Errorf("scenario pattern %q: %w", pattern, err)
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			switch {
			case err != nil:
				continue // a dangling link
			case st.IsDir():
				entries, err := os.ReadDir(m)
				if err != nil {
					return nil, fmt.Errorf("scenario directory: %w", err)
				}
				for _, e := range entries {
					f := filepath.Join(m, e.Name())
					if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && strings.HasSuffix(e.Name(), ".yaml") {
						add(f)
					}
				}
			case st.Mode().IsRegular():
				add(m)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
