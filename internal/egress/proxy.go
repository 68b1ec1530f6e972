package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/persona-runtime/agent/internal/approval"
	"github.com/persona-runtime/agent/pkg/persona"
)

// Threads keeps the hosts network cards allowed, per thread
// (internal/store: egress_hosts).
type Threads interface {
	EgressHostAllowed(ctx context.Context, threadKey, host string) (bool, error)
	AllowEgressHost(ctx context.Context, threadKey, host, approvalID string) error
}

// Cards asks an approval card (internal/approval's gate).
type Cards interface {
	Ask(ctx context.Context, r approval.Request) (approval.Outcome, error)
}

// Options configure a Proxy. Allowed is required.
type Options struct {
	// Allowed is what every command may reach now: "## Network" and the
	// hosts of the git remotes the persona's configuration names. It is
	// called per request (the persona may be edited while running).
	Allowed func() []persona.NetHost
	// Hosts is AGENT_EGRESS_HOSTS (ParseHosts).
	Hosts map[string][]netip.Addr
	// Lookup resolves a name; nil is the system's resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Threads and Cards, when set, make the thread's approved hosts and
	// the ask-mode card.
	Threads Threads
	Cards   Cards
	// Redact scrubs a host before it is logged or shown on a card (a
	// name can carry a secret as well as a path can).
	Redact func(string) string
	// Requests is agent_egress_requests_total{outcome}.
	Requests *prometheus.CounterVec
	Tracer   trace.Tracer
	Log      *slog.Logger
}

// Proxy is the egress proxy. Its zero value is not ready: use New.
type Proxy struct {
	o       Options
	hosts   map[string][]netip.Addr
	lookup  func(ctx context.Context, host string) ([]netip.Addr, error)
	forward *httputil.ReverseProxy
	srv     *http.Server
	ln      *connListener

	mu     sync.Mutex
	asking map[string]*pending
}

// pending is a card being asked; requests for the same host in the same
// thread wait for it instead of asking again.
type pending struct {
	done chan struct{}
	ok   bool
}

// New returns the proxy of o, serving until Close.
func New(o Options) (*Proxy, error) {
	if o.Allowed == nil || o.Log == nil || o.Tracer == nil {
		return nil, errors.New("egress: Allowed, Log and Tracer are required")
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	p := &Proxy{o: o, hosts: o.Hosts, lookup: o.Lookup, asking: map[string]*pending{}}
	if p.lookup == nil {
		p.lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	transport := &http.Transport{
		Proxy: nil, // never the runtime's own proxy settings
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := splitHostPort(addr, 80)
			if err != nil {
				return nil, err
			}
			return p.dial(ctx, host, port)
		},
		MaxIdleConns:          64,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
	p.forward = &httputil.ReverseProxy{
		// The request goes where its absolute URL says, as the command
		// sent it: no X-Forwarded-* headers (Rewrite adds none).
		Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL = r.In.URL },
		Transport: transport,
		ErrorLog:  slog.NewLogLogger(o.Log.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "egress proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.ln = newConnListener()
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: time.Minute,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*taggedConn); ok {
				return tc.ctx
			}
			return ctx
		},
		ErrorLog: slog.NewLogLogger(o.Log.Handler(), slog.LevelDebug),
	}
	go func() { _ = p.srv.Serve(p.ln) }()
	return p, nil
}

// Close stops the proxy and every connection it serves.
func (p *Proxy) Close() error {
	p.ln.Close()
	return p.srv.Close()
}

// ServeConn serves one connection a command made to its proxy address
// (sandbox.Egress), until the connection ends or ctx does.
func (p *Proxy) ServeConn(ctx context.Context, conn net.Conn) {
	tc := &taggedConn{Conn: conn, ctx: ctx, closed: make(chan struct{})}
	if !p.ln.push(tc) {
		conn.Close()
		return
	}
	select {
	case <-tc.closed:
	case <-ctx.Done():
		tc.Close()
	}
}

// ServeHTTP is the proxy's handler: CONNECT tunnels, absolute-URI
// requests forwarded; each checked first.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	host, port, err := target(r)
	if err != nil {
		http.Error(w, "egress proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, span := p.o.Tracer.Start(ctx, "egress.request", trace.WithAttributes(
		attribute.String("egress.host", p.o.Redact(host)), attribute.Int("egress.port", port),
		attribute.String("egress.method", r.Method)))
	defer span.End()
	ok, why := p.permit(ctx, host, port)
	if ok {
		if _, err := p.resolve(ctx, host); errors.Is(err, errInternal) {
			ok, why = false, err.Error()
		}
	}
	if !ok {
		span.SetAttributes(attribute.String("egress.outcome", "refused"))
		p.refuse(ctx, w, host, port, why)
		return
	}
	span.SetAttributes(attribute.String("egress.outcome", "allowed"))
	p.count("allowed")
	if r.Method == http.MethodConnect {
		if err := p.tunnel(ctx, w, host, port); err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		return
	}
	p.forward.ServeHTTP(w, r.WithContext(ctx))
}

// target is the host and port a proxy request is for.
func target(r *http.Request) (string, int, error) {
	if r.Method == http.MethodConnect {
		return splitHostPort(r.Host, 443)
	}
	if r.URL.Host == "" || (r.URL.Scheme != "http" && r.URL.Scheme != "https") {
		return "", 0, errors.New("not a proxy request (want an absolute http URL or CONNECT)")
	}
	def := 80
	if r.URL.Scheme == "https" {
		def = 443
	}
	return splitHostPort(r.URL.Host, def)
}

// splitHostPort splits host[:port], lower-casing the host.
func splitHostPort(hostport string, def int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		host, ps = strings.Trim(hostport, "[]"), strconv.Itoa(def)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("bad target %q", hostport)
	}
	return strings.TrimSuffix(strings.ToLower(host), "."), port, nil
}

// display is the host as texts show it: with its port unless 80 or 443.
func display(host string, port int) string {
	if port == 80 || port == 443 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// refuse answers the pinned 403 and says so once.
func (p *Proxy) refuse(ctx context.Context, w http.ResponseWriter, host string, port int, why string) {
	p.count("refused")
	thread := ""
	if t, ok := turnOf(ctx); ok {
		thread = t.Event.ThreadKey()
	}
	h := p.o.Redact(display(host, port))
	p.o.Log.WarnContext(ctx, "egress refused", "host", h, "thread", thread, "reason", why)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, RefusalBody(h))
}

func (p *Proxy) count(outcome string) {
	if p.o.Requests != nil {
		p.o.Requests.WithLabelValues(outcome).Inc()
	}
}

// tunnel answers a CONNECT: it dials the checked address, says 200 and
// copies both ways until either side ends.
func (p *Proxy) tunnel(ctx context.Context, w http.ResponseWriter, host string, port int) error {
	up, err := p.dial(ctx, host, port)
	if err != nil {
		http.Error(w, "egress proxy: "+err.Error(), http.StatusBadGateway)
		return err
	}
	defer up.Close()
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "egress proxy: cannot tunnel", http.StatusInternalServerError)
		return errors.New("no hijacker")
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		return err
	}
	defer down.Close()
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return err
	}
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent after its CONNECT is buffered already.
		_, _ = io.Copy(up, rw.Reader)
		if c, ok := up.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(down, up)
		if c, ok := down.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}()
	select {
	case <-done:
		<-done
	case <-ctx.Done():
	}
	return nil
}
