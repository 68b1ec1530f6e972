package service

import (
	"net/http"

	"github.com/persona-runtime/agent/internal/httpapi"
)

// httpServer is one port the service listens on and what it serves there.
type httpServer struct {
	port    int
	handler http.Handler
}

// httpServers are the service's HTTP servers, one per port: the health
// checks on AGENT_HEALTH_PORT; the HTTP ingress's routes on
// AGENT_HTTP_PORT (by default the health port); /metrics and the profiles
// on AGENT_METRICS_PORT (by default the health port, but never the port
// the chat platform reaches: config.MetricsListenPort). A port of 0 serves
// nothing.
func (s *Service) httpServers() []httpServer {
	deps := httpapi.Deps{
		Healthy:      s.store.CheckWritable,
		Ready:        s.store.Ping,
		SessionsLive: s.sessions.Live,
		Started:      s.started,
		Gatherer:     s.metrics.Registry,
		Logger:       s.log,
		Pprof:        s.cfg.Pprof == "1",
	}
	health, metricsPort := s.cfg.HealthPort, s.cfg.MetricsListenPort()
	ingressPort := 0
	ingress := s.ingress
	if s.ingress != nil {
		ingressPort = s.cfg.IngressPort()
	}
	if len(s.connect.Servers()) > 0 {
		// The sign-in's routes go where people's browsers come: the HTTP
		// ingress's port, else the health port.
		ingress = s.withSignIn(s.ingress)
		if ingressPort == 0 {
			ingressPort = health
		}
	}
	var out []httpServer
	if health != 0 {
		d := deps
		d.MetricsApart = metricsPort != health
		if ingressPort == health {
			d.Ingress = ingress
		}
		out = append(out, httpServer{health, httpapi.New(d)})
	}
	if ingressPort != 0 && ingressPort != health {
		out = append(out, httpServer{ingressPort, httpapi.NewIngress(ingress, s.log)})
	}
	if metricsPort != 0 && metricsPort != health && metricsPort != ingressPort {
		out = append(out, httpServer{metricsPort, httpapi.NewMetrics(deps)})
	}
	return out
}
