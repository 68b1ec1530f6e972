package connect

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/persona-runtime/agent/pkg/clock"
	"github.com/persona-runtime/agent/pkg/pipeline"
)

// Server is one tool server of mcp.json with "auth": "oauth".
type Server struct {
	Name string
	// URL is the server's address: the resource its tokens are for.
	URL string
	// ClientID and ClientSecret are the operator's client, when given;
	// without a ClientID the client registers itself (dynamic client
	// registration).
	ClientID, ClientSecret string
	Scopes                 []string
}

// Chat is what the feature says in the chat.
type Chat interface {
	Post(ctx context.Context, m pipeline.Message) (ts string, err error)
	PostEphemeral(ctx context.Context, channelID, threadTS, userID, text string) error
}

// Options configures New.
type Options struct {
	Servers []Server
	// Key is AGENT_SECRET_KEY (base64 of 32 bytes).
	Key string
	// PublicURL is AGENT_PUBLIC_URL: where people's browsers reach the
	// HTTP port; the redirect is PublicURL + CallbackPath.
	PublicURL string
	Store     Store
	Chat      Chat
	// HTTP reaches the tool servers and authorization servers; nil: a
	// client of its own (30 s per request).
	HTTP *http.Client
	// Clock stamps and expires; nil: the system's.
	Clock clock.Clock
	// NewState makes a sign-in link's state; nil: 32 random bytes. The
	// simulator passes its own, so that its transcripts hold no random ids.
	NewState func() string
	// ClientName is how a registered client introduces itself (the
	// persona's name).
	ClientName string
	// OnConnected runs after a person's sign-in is stored (the service
	// lists the server's tools with the new token).
	OnConnected func(ctx context.Context, user, server string)
	Log         *slog.Logger
}

// Routes of the HTTP port (http.go).
const (
	StartPath    = "/oauth/start"
	CallbackPath = "/oauth/callback"
)

// Connect is the feature: the configured servers, the sealer, the store.
type Connect struct {
	o       Options
	servers map[string]Server
	names   []string
	sealer  *Sealer
	clk     clock.Clock
	log     *slog.Logger

	// locks serialise the refresh of one person's token to one server in
	// this process: a rotating refresh token used twice is refused, and
	// the refusal would forget a good connection.
	locksMu sync.Mutex
	locks   map[string]*sync.Mutex

	// clients are the clients registered dynamically, per server, for
	// this process's life (a new process registers again).
	clientsMu sync.Mutex
	clients   map[string]client
}

// New checks the options and returns the feature. With no server it
// needs no key; with one, a missing key is ErrNoKey. A key given that is
// not 32 bytes of base64 is an error naming AGENT_SECRET_KEY.
func New(o Options) (*Connect, error) {
	c := &Connect{o: o, servers: map[string]Server{}, clk: clock.Or(o.Clock), log: o.Log,
		locks: map[string]*sync.Mutex{}, clients: map[string]client{}}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for _, s := range o.Servers {
		c.servers[s.Name] = s
		c.names = append(c.names, s.Name)
	}
	sort.Strings(c.names)
	if c.o.HTTP == nil {
		// A dialer of our own: the SDK's discovery refuses private
		// addresses with the default transport, and a tool server inside
		// the operator's network (compose, a cluster) has one. Plain HTTP
		// is still refused for metadata anywhere but on loopback.
		c.o.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 4}}
	}
	if strings.TrimSpace(o.Key) == "" {
		if len(c.servers) > 0 {
			return nil, ErrNoKey
		}
		return c, nil // nothing to seal or open
	}
	var err error
	if c.sealer, err = ParseKey(o.Key); err != nil {
		return nil, err
	}
	if o.Store == nil {
		return nil, errors.New("connect: no store")
	}
	return c, nil
}

// Servers are the names of the servers people sign in to, sorted.
func (c *Connect) Servers() []string {
	if c == nil {
		return nil
	}
	return slices.Clone(c.names)
}

// Has reports whether server signs in per person.
func (c *Connect) Has(server string) bool {
	if c == nil {
		return false
	}
	_, ok := c.servers[server]
	return ok
}

// CheckKey opens one stored connection, if any, so that a start with
// another key than the one the tokens were sealed with is one clear line
// (ErrWrongKey) rather than every person's calls failing later.
func (c *Connect) CheckKey(ctx context.Context) error {
	if c == nil || c.sealer == nil {
		return nil
	}
	rs, err := c.o.Store.Connections(ctx, "")
	if err != nil {
		return err
	}
	for _, r := range rs {
		if _, err := c.sealer.Open(r.Sealed, "token", r.User, r.Server); err != nil {
			return err
		}
		return nil
	}
	return nil
}

// newState makes a state and its hash.
func (c *Connect) newState() (state, hash string) {
	if c.o.NewState != nil {
		state = c.o.NewState()
	} else {
		// Hex: no character markdown reads as emphasis on the way to the
		// chat.
		b := make([]byte, 32)
		_, _ = rand.Read(b) // never fails (crypto/rand's contract)
		state = hex.EncodeToString(b)
	}
	return state, hashState(state)
}

// hashState is how a state is looked up: its SHA-256, so that the
// database never holds a working link.
func hashState(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}

// lock returns the refresh lock of (user, server).
func (c *Connect) lock(user, server string) *sync.Mutex {
	c.locksMu.Lock()
	defer c.locksMu.Unlock()
	k := user + "\x00" + server
	m, ok := c.locks[k]
	if !ok {
		m = &sync.Mutex{}
		c.locks[k] = m
	}
	return m
}

// redirectURL is where the authorization server sends the browser back.
func (c *Connect) redirectURL() string {
	return strings.TrimRight(c.o.PublicURL, "/") + CallbackPath
}

// escape makes a value safe in the platform's markup (&, <, >).
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// ActsAs reports the server whose tool name is tool when that server
// signs in per person: its calls act with the turn's sender's account.
func (c *Connect) ActsAs(tool string) (string, bool) {
	if c == nil {
		return "", false
	}
	for _, name := range c.names {
		if strings.HasPrefix(tool, "mcp__"+name+"__") {
			return name, true
		}
	}
	return "", false
}
