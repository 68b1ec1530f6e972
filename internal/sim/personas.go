package sim

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/persona-runtime/agent/internal/sim/scripted"
)

// A team of personas in one scenario (issue 38): `personas:` lists the
// other personas, each run as a service of its own on the same simulated
// platform; steps name one with `persona:` (the scenario's own persona,
// the sim world's, when they do not).

// BotUser is the bot user of the scenario's own persona in the simulator.
const BotUser = "U0BOT"

// personaKeys are a persona's keys, in the order messages list them.
var personaKeys = []string{"name", "user", "soul", "agent_behavior", "model"}

// World is the persona's sim world: the default world named Name, with
// its soul keys.
func (pr Persona) World() World {
	w := DefaultWorld()
	w.Name = pr.Name
	return w.Merge(pr.Soul)
}

// PersonaNames are the names steps may give `persona:`: the scenario's
// own persona's first, then its team's.
func (sc *Scenario) PersonaNames() []string {
	names := []string{DefaultWorld().Name}
	for _, pr := range sc.Personas {
		names = append(names, pr.Name)
	}
	return names
}

// personas reads `personas:`: a list of {name, user, soul, agent_behavior,
// model}, each a persona other than the scenario's own.
func (p *parser) personas(n *yaml.Node) ([]Persona, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, p.fail(n, "personas is a list of personas, like `- {name: Oncall, user: U0ONC}`")
	}
	var out []Persona
	names := map[string]bool{strings.ToLower(DefaultWorld().Name): true}
	users := map[string]bool{BotUser: true}
	for _, r := range Roles {
		if u, ok := RoleUser(r); ok {
			users[u] = true
		}
	}
	for i, item := range n.Content {
		item = resolve(item)
		where := fmt.Sprintf(" in persona %d", i+1)
		if item.Kind != yaml.MappingNode {
			return nil, p.fail(item, "persona %d is a mapping, like `{name: Oncall, user: U0ONC}`", i+1)
		}
		pr := Persona{Line: item.Line, AgentBehavior: "reply"}
		var nameNode, userNode *yaml.Node
		err := p.mapping(item, where, "a persona", func(k, v *yaml.Node) error {
			var err error
			switch k.Value {
			case "name":
				nameNode = v
				pr.Name, err = p.str(k, v, where)
			case "user":
				userNode = v
				pr.User, err = p.str(k, v, where)
			case "soul":
				pr.Soul, err = p.soul(v)
			case "agent_behavior":
				pr.AgentBehavior, err = p.oneOf(k, v, where, "agent_behavior", Behaviors)
			case "model":
				pr.Model, err = p.model(v)
			default:
				err = p.fail(k, "unknown key %q%s (want %s)", k.Value, where, orList(personaKeys))
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		pr.Name = strings.TrimSpace(pr.Name)
		switch {
		case nameNode == nil || pr.Name == "":
			return nil, p.fail(item, "persona %d needs a name", i+1)
		case strings.ContainsAny(pr.Name, "\r\n"):
			return nil, p.fail(nameNode, "name%s is one line", where)
		case names[strings.ToLower(pr.Name)]:
			return nil, p.fail(nameNode, "name%s: %q is taken (the scenario's own persona is %s)", where, pr.Name, DefaultWorld().Name)
		case userNode == nil || pr.User == "":
			return nil, p.fail(item, "persona %d (%s) needs user, its bot user id (U…)", i+1, pr.Name)
		case !isID(pr.User, "U"):
			return nil, p.fail(userNode, "user%s: %q is not a user id (U…)", where, pr.User)
		case users[pr.User]:
			return nil, p.fail(userNode, "user%s: %s is already someone in the sim world", where, pr.User)
		}
		if _, err := pr.World().Persona(); err != nil {
			return nil, p.fail(nameNode, "persona %s: its sim world does not read back as written: %v", pr.Name, err)
		}
		if pr.Model != nil {
			if pr.AgentBehavior != "reply" {
				return nil, p.fail(item, "model%s: the recorded answers are the agent's behaviour: leave agent_behavior out", where)
			}
			pr.AgentBehavior = scripted.Recorded
		}
		names[strings.ToLower(pr.Name)], users[pr.User] = true, true
		out = append(out, pr)
	}
	return out, nil
}

// stepPersonas checks that the steps' `persona:` name a persona of the
// scenario.
func (p *parser) stepPersonas(sc *Scenario) error {
	names := sc.PersonaNames()
	for i, st := range sc.Steps {
		if st.Persona != "" && !slices.Contains(names, st.Persona) {
			return &Error{File: p.file, Line: st.Line, Msg: fmt.Sprintf("unknown persona %q in step %d (%s) (want %s)",
				st.Persona, i+1, st.Kind, orList(names))}
		}
	}
	return nil
}
