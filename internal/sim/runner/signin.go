package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/persona-runtime/agent/internal/config"
	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/internal/sim"
	"github.com/persona-runtime/agent/internal/sim/toolserver"
	"github.com/persona-runtime/agent/internal/store"
)

// simSecretKey seals the simulated sign-ins (AGENT_SECRET_KEY): a fixed
// key, since a scenario's database lives only as long as the scenario.
const simSecretKey = "c2ltdWxhdG9yLWtleS1vZi0zMi1ieXRlcy1leGFjdCE="

// simPublicURL is where the simulated people's browsers would reach the
// service (AGENT_PUBLIC_URL).
const simPublicURL = "https://agent.sim"

// signIn writes the mcp.json of the tool servers each person signs in to
// (sim.Scenario.SignIn and ToolServers) in the home, and gives the
// service the key and the public address. The SignIn servers' addresses
// are never reached: nobody connects to them, so no tool is listed, and
// /connect makes a link without the network. The ToolServers are served
// here, on loopback, and the people connected to them from the start
// have their tokens stored, sealed as a sign-in stores them, before the
// service starts: it lists the tools with one of them, as at any start.
func (s *Sim) signIn(o Options, home string, cfg *config.Config) error {
	servers := map[string]any{}
	for _, name := range o.SignIn {
		servers[name] = map[string]string{"url": "https://" + name + ".sim.invalid/mcp", "auth": "oauth"}
	}
	for _, ts := range o.ToolServers {
		srv := s.serve(ts)
		servers[ts.Name] = map[string]string{"url": srv.URL, "auth": "oauth"}
	}
	if len(o.ToolServers) > 0 {
		s.stores.seed = s.seedConnections
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

// serve starts a scenario's tool server. The transcript shows each call
// it runs, as whom, and each request it refuses: a person who has not
// connected never reaches it.
func (s *Sim) serve(ts sim.ToolServer) *toolserver.Server {
	tools := make([]toolserver.Tool, len(ts.Tools))
	for i, t := range ts.Tools {
		tools[i] = toolserver.Tool{Name: t.Name, Answer: t.Answer}
	}
	srv := toolserver.Start(ts.Name, tools,
		func(tool, account string) {
			s.tools.add(s.chat.Len(), fmt.Sprintf("%s server: %s called as %s", ts.Name, tool, account))
		},
		func() {
			s.tools.add(s.chat.Len(), ts.Name+" server: refused a request without a token it issued")
		})
	s.served = append(s.served, served{ToolServer: ts, srv: srv})
	return srv
}

// served is a scenario's tool server, running.
type served struct {
	sim.ToolServer
	srv *toolserver.Server
}

// seedConnections stores the tokens of the people connected to the
// served tool servers (each issued by its server), sealed with the
// simulator's key as a sign-in seals them.
func (s *Sim) seedConnections(ctx context.Context, st *store.Store) error {
	var servers []connect.Server
	for _, sv := range s.served {
		servers = append(servers, connect.Server{Name: sv.Name, URL: sv.srv.URL})
	}
	c, err := connect.New(connect.Options{Servers: servers, Key: simSecretKey, Store: st})
	if err != nil {
		return err
	}
	for _, sv := range s.served {
		for _, p := range sv.Connected {
			user, _ := sim.RoleUser(p.As)
			if err := c.Seed(ctx, user, sv.Name, p.Account, sv.srv.Issue(p.Account)); err != nil {
				return fmt.Errorf("connect %s to %s: %w", p.As, sv.Name, err)
			}
		}
	}
	return nil
}

// closeServed stops the scenario's tool servers.
func (s *Sim) closeServed() {
	for _, sv := range s.served {
		sv.srv.Close()
	}
	s.served = nil
}
