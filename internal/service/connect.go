package service

import (
	"context"

	"github.com/go-chi/chi/v5"

	"github.com/persona-runtime/agent/internal/connect"
	"github.com/persona-runtime/agent/pkg/tools"
)

// newConnect builds each person's sign-in to the "auth": "oauth" tool
// servers of mcp.json. Without the key such a server refuses the start
// (connect.ErrNoKey); a key that does not open the stored tokens too.
func (s *Service) newConnect(ctx context.Context, conf *tools.MCPConfig, chat ChatAPI) error {
	var servers []connect.Server
	for _, srv := range conf.OAuth() {
		servers = append(servers, connect.Server{Name: srv.Name, URL: srv.URL, ClientID: srv.ClientID,
			ClientSecret: srv.ClientSecret, Scopes: srv.Scopes})
	}
	c, err := connect.New(connect.Options{Servers: servers, Key: s.cfg.SecretKey, PublicURL: s.cfg.PublicURL,
		Store: s.store, Chat: chat, Clock: s.deps.Clock, NewState: s.deps.ConnectStates,
		ClientName: s.persona.Identity.Name, OnConnected: s.discoverTools, Log: s.log})
	if err != nil {
		return err
	}
	if err := c.CheckKey(ctx); err != nil {
		return err
	}
	if len(servers) > 0 && s.cfg.PublicURL == "" {
		s.log.Warn("AGENT_PUBLIC_URL is not set: /connect cannot give a sign-in link")
	}
	s.connect = c
	return nil
}

// mcpAuth is the tools' view of the sign-ins; nil when no server signs in
// per person.
func (s *Service) mcpAuth() tools.MCPAuth {
	if len(s.connect.Servers()) == 0 {
		return nil
	}
	return s.connect
}

// discoverTools lists a server's tools with the token of the person who
// just signed in, and adds those not known yet (the server may have had
// nobody to list them with at start): the next request carries them.
func (s *Service) discoverTools(ctx context.Context, user, server string) {
	if s.mcp == nil || s.registry == nil {
		return
	}
	added, err := s.mcp.Discover(ctx, server, user)
	if err != nil {
		s.log.WarnContext(ctx, "list tools after sign-in", "server", server, "error", err.Error())
		return
	}
	if len(added) > 0 {
		s.registry.Add(added...)
		s.log.InfoContext(ctx, "tool server tools listed after sign-in", "server", server, "tools", len(added))
	}
}

// withSignIn adds the sign-in's routes to the ingress's (nil: none).
func (s *Service) withSignIn(ingress func(chi.Router)) func(chi.Router) {
	return func(r chi.Router) {
		if ingress != nil {
			ingress(r)
		}
		s.connect.Routes(r)
	}
}
