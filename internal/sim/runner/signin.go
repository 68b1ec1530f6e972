package runner

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/persona-runtime/agent/internal/config"
)

// simSecretKey seals the simulated sign-ins (AGENT_SECRET_KEY): a fixed
// key, since a scenario's database lives only as long as the scenario.
const simSecretKey = "c2ltdWxhdG9yLWtleS1vZi0zMi1ieXRlcy1leGFjdCE="

// simPublicURL is where the simulated people's browsers would reach the
// service (AGENT_PUBLIC_URL).
const simPublicURL = "https://agent.sim"

// signIn writes the mcp.json of the tool servers each person signs in to
// (sim.Scenario.SignIn) in the home, and gives the service the key and the
// public address. The servers' addresses are never reached: nobody has
// connected, so no tool is listed, and /connect makes a link without the
// network.
func (s *Sim) signIn(o Options, home string, cfg *config.Config) error {
	servers := map[string]any{}
	for _, name := range o.SignIn {
		servers[name] = map[string]string{"url": "https://" + name + ".sim.invalid/mcp", "auth": "oauth"}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	if o.Home == "" {
		s.home = home // made here: removed with the scenario
	}
	if err := os.WriteFile(filepath.Join(home, "mcp.json"), b, 0o600); err != nil {
		return err
	}
	cfg.SecretKey, cfg.PublicURL = simSecretKey, simPublicURL
	return nil
}
