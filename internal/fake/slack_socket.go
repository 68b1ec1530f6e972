package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// slackSocketPath is where the fake serves Socket Mode.
const slackSocketPath = "link"

// slackWriteTimeout bounds one frame written to a socket.
const slackWriteTimeout = 5 * time.Second

// Envelope types of Socket Mode.
const (
	EnvelopeEventsAPI     = "events_api"
	EnvelopeInteractive   = "interactive"
	EnvelopeSlashCommands = "slash_commands"
)

// Ack is an acknowledgement the fake received over a socket.
type Ack struct {
	EnvelopeID string
	Payload    json.RawMessage // nil when the ack carried none
}

// slackSocket is the Socket Mode state of the fake; guarded by Slack.mu.
type slackSocket struct {
	tickets map[string]bool // issued by apps.connections.open, not yet used
	conns   map[*slackConn]bool
	live    *slackConn // the socket envelopes go to; nil while none is ready
	opened  int
	outbox  [][]byte // frames sent while no socket was ready
	sent    map[string]bool
	acks    []Ack
	acked   map[string]bool
	// With Spread: the sockets in the order they opened, the next one's
	// turn, and the envelopes each took and has not acknowledged.
	order    []*slackConn
	turn     int
	inflight map[string]inflight
}

// inflight is an envelope written to a socket and not acknowledged yet.
type inflight struct {
	conn  *slackConn
	typ   string
	raw   json.RawMessage
	retry int
}

// slackConn is one open socket.
type slackConn struct {
	ws    *websocket.Conn
	wmu   sync.Mutex // serialises writes: gorilla/websocket allows one writer
	ready bool       // hello written; guarded by Slack.mu
}

func (c *slackConn) write(frame []byte) error {
	if err := c.ws.SetWriteDeadline(time.Now().Add(slackWriteTimeout)); err != nil {
		return err
	}
	return c.ws.WriteMessage(websocket.TextMessage, frame)
}

// send writes frame holding the connection's write lock.
func (c *slackConn) send(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.write(frame)
}

// newTicket issues a one-use socket ticket; Slack.mu must be held.
func (k *slackSocket) newTicket(s *Slack) string {
	s.seq++
	t := fmt.Sprintf("fake-ticket-%d", s.seq)
	if k.tickets == nil {
		k.tickets = map[string]bool{}
	}
	k.tickets[t] = true
	return t
}

// all returns the open sockets; Slack.mu must be held.
func (k *slackSocket) all() []*slackConn {
	out := make([]*slackConn, 0, len(k.conns))
	for c := range k.conns {
		out = append(out, c)
	}
	return out
}

func (s *Slack) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	known := s.socket.tickets[ticket]
	delete(s.socket.tickets, ticket)
	s.mu.Unlock()
	if !known {
		s.failf("fake slack: socket opened with an unknown ticket %q", ticket)
		http.Error(w, "unknown ticket", http.StatusUnauthorized)
		return
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	c := &slackConn{ws: ws}
	// Hold the socket's writer until hello and the queued frames are out, so
	// that a concurrent Send that finds it live writes after them.
	c.wmu.Lock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.wmu.Unlock()
		_ = ws.Close()
		return
	}
	cfg := s.cfg()
	if s.socket.conns == nil {
		s.socket.conns = map[*slackConn]bool{}
	}
	s.socket.conns[c] = true
	s.socket.order = append(s.socket.order, c)
	s.socket.opened++
	s.socket.live = c
	queued := s.socket.outbox
	s.socket.outbox = nil
	hello, _ := json.Marshal(map[string]any{
		"type": "hello", "num_connections": len(s.socket.conns),
		"connection_info": map[string]any{"app_id": cfg.appID},
		"debug_info":      map[string]any{"host": "fake-applink", "build_number": 1, "approximate_connection_time": 18060},
	})
	s.wg.Add(2)
	s.mu.Unlock()

	ok := true
	for i, frame := range append([][]byte{hello}, queued...) {
		if err := c.write(frame); err != nil {
			s.mu.Lock()
			s.socket.outbox = append(slices.Clone(queued[max(i-1, 0):]), s.socket.outbox...)
			s.mu.Unlock()
			ok = false
			break
		}
	}
	s.mu.Lock()
	// Frames queued while those were written (no socket was ready: the
	// retries of a socket that closed meanwhile) go out on this one too,
	// before it is marked ready; else they would wait for a next socket
	// that may never open.
	for ok && len(s.socket.outbox) > 0 {
		late := s.socket.outbox
		s.socket.outbox = nil
		s.mu.Unlock()
		for i, frame := range late {
			if err := c.write(frame); err != nil {
				s.mu.Lock()
				s.socket.outbox = append(slices.Clone(late[i:]), s.socket.outbox...)
				s.mu.Unlock()
				ok = false
				break
			}
		}
		s.mu.Lock()
	}
	c.ready = true
	s.notify()
	s.mu.Unlock()
	c.wmu.Unlock()

	done := make(chan struct{})
	go s.pingSocket(c, cfg.ping, done)
	s.readSocket(c)
	close(done)
}

// pingSocket pings c every interval until done, as the platform does; the
// client reconnects when pings stop.
func (s *Slack) pingSocket(c *slackConn, interval time.Duration, done <-chan struct{}) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(slackWriteTimeout)); err != nil {
				return
			}
		}
	}
}

// readSocket records the acks read from c until it closes.
func (s *Slack) readSocket(c *slackConn) {
	defer s.wg.Done()
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			break
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(data, &ack); err != nil || ack.EnvelopeID == "" {
			s.failf("fake slack: unrecognised frame from the client: %.200s", data)
			continue
		}
		s.mu.Lock()
		sent := s.socket.sent[ack.EnvelopeID]
		delete(s.socket.inflight, ack.EnvelopeID)
		if sent {
			s.socket.acks = append(s.socket.acks, Ack{EnvelopeID: ack.EnvelopeID, Payload: ack.Payload})
			if s.socket.acked == nil {
				s.socket.acked = map[string]bool{}
			}
			s.socket.acked[ack.EnvelopeID] = true
			s.notify()
		}
		s.mu.Unlock()
		if !sent {
			s.failf("fake slack: ack of an envelope never sent: %q", ack.EnvelopeID)
		}
	}
	s.mu.Lock()
	delete(s.socket.conns, c)
	if s.socket.live == c {
		s.socket.live = nil
	}
	var retries []inflight
	for id, f := range s.socket.inflight {
		if f.conn == c {
			retries = append(retries, f)
			delete(s.socket.inflight, id)
		}
	}
	closed := s.closed
	s.notify()
	s.mu.Unlock()
	_ = c.ws.Close()
	// The platform sends what the socket never acknowledged again, as a
	// retry, over the sockets left.
	for _, f := range retries {
		if !closed {
			s.Send(f.typ, f.raw, f.retry+1)
		}
	}
}

// Send sends an envelope of type typ (EnvelopeEventsAPI, EnvelopeInteractive,
// EnvelopeSlashCommands, or anything else to test unknown types) with
// payload and the platform's retry_attempt, and returns its envelope id.
// payload is sent as it is when it is json.RawMessage, []byte or string,
// and marshalled otherwise. With no socket ready, the envelope waits for the
// next one, as the platform holds deliveries.
func (s *Slack) Send(typ string, payload any, retryAttempt int) (envelopeID string) {
	id, raw, frame, ok := s.envelope("Send", typ, payload, retryAttempt)
	if !ok {
		return ""
	}
	if s.Spread {
		s.spreadFrame(id, inflight{typ: typ, raw: raw, retry: retryAttempt}, frame, 0)
		return id
	}
	s.sendFrame(id, inflight{typ: typ, raw: raw, retry: retryAttempt}, frame)
	return id
}

// SendOn sends an envelope like Send, on the n-th socket opened (1 is the
// first), and fails the test when that one is not open: a test that knows
// which replica holds which socket delivers to the one it means.
func (s *Slack) SendOn(n int, typ string, payload any, retryAttempt int) (envelopeID string) {
	id, raw, frame, ok := s.envelope("SendOn", typ, payload, retryAttempt)
	if !ok {
		return ""
	}
	s.spreadFrame(id, inflight{typ: typ, raw: raw, retry: retryAttempt}, frame, n)
	return id
}

// envelope numbers an envelope of typ carrying payload and builds its frame.
func (s *Slack) envelope(caller, typ string, payload any, retryAttempt int) (id string, raw json.RawMessage, frame []byte, ok bool) {
	raw, err := slackRaw(payload)
	if err != nil {
		s.failf("fake slack: %s %s: %v", caller, typ, err)
		return "", nil, nil, false
	}
	if typ == EnvelopeEventsAPI {
		s.recordDelivered(raw) // the platform has what it delivers
	}
	s.mu.Lock()
	s.seq++
	id = fmt.Sprintf("%08x-fake-4000-8000-%012d", s.seq, s.seq)
	if s.socket.sent == nil {
		s.socket.sent = map[string]bool{}
	}
	s.socket.sent[id] = true
	s.mu.Unlock()
	reason := ""
	if retryAttempt > 0 {
		reason = "timeout"
	}
	frame, _ = json.Marshal(map[string]any{
		"envelope_id": id, "type": typ, "payload": raw,
		"accepts_response_payload": typ == EnvelopeSlashCommands,
		"retry_attempt":            retryAttempt, "retry_reason": reason,
	})
	return id, raw, frame, true
}

// spreadFrame writes an envelope to the next open socket in turn (or to
// the n-th when n > 0) and remembers it until it is acknowledged; with no
// socket open it waits in the outbox.
func (s *Slack) spreadFrame(id string, f inflight, frame []byte, n int) {
	for {
		s.mu.Lock()
		var c *slackConn
		if n > 0 {
			if n <= len(s.socket.order) && s.socket.conns[s.socket.order[n-1]] && s.socket.order[n-1].ready {
				c = s.socket.order[n-1]
			}
		} else {
			for range len(s.socket.order) {
				s.socket.turn = (s.socket.turn + 1) % len(s.socket.order)
				if cand := s.socket.order[s.socket.turn]; s.socket.conns[cand] && cand.ready {
					c = cand
					break
				}
			}
		}
		if c == nil {
			if n > 0 {
				s.mu.Unlock()
				s.failf("fake slack: SendOn(%d): that socket is not open", n)
				return
			}
			s.socket.outbox = append(s.socket.outbox, frame)
			s.mu.Unlock()
			return
		}
		if s.socket.inflight == nil {
			s.socket.inflight = map[string]inflight{}
		}
		f.conn = c
		s.socket.inflight[id] = f
		s.mu.Unlock()
		err := c.send(frame)
		if err == nil {
			return
		}
		s.mu.Lock()
		delete(s.socket.inflight, id)
		s.mu.Unlock()
		if n > 0 {
			s.failf("fake slack: SendOn(%d): %v", n, err)
			return
		}
	}
}

// OpenSockets returns how many sockets are open and ready.
func (s *Slack) OpenSockets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.socket.conns {
		if c.ready {
			n++
		}
	}
	return n
}

// SendEvent sends an events_api envelope carrying payload (for example
// Message{...}.Payload()) and returns its envelope id.
func (s *Slack) SendEvent(payload any) (envelopeID string) {
	return s.Send(EnvelopeEventsAPI, payload, 0)
}

// SendRaw sends frame as it is, to test malformed frames.
func (s *Slack) SendRaw(frame []byte) {
	s.sendFrame("", inflight{}, slices.Clone(frame))
}

// Disconnect asks the client to reconnect, as the platform does before it
// closes a socket ("warning", "refresh_requested", "link_disabled"). The
// socket stops receiving envelopes at once; later ones wait for the next.
func (s *Slack) Disconnect(reason string) {
	s.mu.Lock()
	c := s.socket.live
	s.socket.live = nil
	s.notify()
	s.mu.Unlock()
	if c == nil {
		s.failf("fake slack: Disconnect with no socket open")
		return
	}
	frame, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": reason,
		"debug_info": map[string]any{"host": "fake-applink"}})
	_ = c.send(frame)
}

// sendFrame writes frame to the live socket, or queues it for the next;
// an envelope (id not empty) is remembered until acknowledged.
func (s *Slack) sendFrame(id string, f inflight, frame []byte) {
	var failed *slackConn
	for {
		s.mu.Lock()
		c := s.socket.live
		if c == nil || c == failed {
			s.socket.outbox = append(s.socket.outbox, frame)
			s.mu.Unlock()
			return
		}
		// Remembered until acknowledged, as the platform does: if the
		// socket closes first, it is sent again as a retry (readSocket).
		if id != "" {
			if s.socket.inflight == nil {
				s.socket.inflight = map[string]inflight{}
			}
			f.conn = c
			s.socket.inflight[id] = f
		}
		s.mu.Unlock()
		err := c.send(frame)
		if err == nil {
			return
		}
		if id != "" {
			s.mu.Lock()
			delete(s.socket.inflight, id)
			s.mu.Unlock()
		}
		failed = c
	}
}

// Connections returns how many sockets were ever opened.
func (s *Slack) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.socket.opened
}

// WaitConnected waits until a socket is open and its hello sent.
func (s *Slack) WaitConnected(ctx context.Context) error {
	return s.WaitConnections(ctx, 1)
}

// WaitConnections waits until at least n sockets were opened and one is
// open with its hello sent: after a Disconnect, WaitConnections(ctx, 2)
// waits for the reconnect.
func (s *Slack) WaitConnections(ctx context.Context, n int) error {
	opened := 0
	err := s.await(ctx, func() bool {
		opened = s.socket.opened
		return opened >= n && s.socket.live != nil && s.socket.live.ready
	})
	if err != nil {
		return fmt.Errorf("fake slack: waiting for socket %d (%d opened): %w", n, opened, err)
	}
	return nil
}

// Acked reports whether the envelope was acknowledged.
func (s *Slack) Acked(envelopeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.socket.acked[envelopeID]
}

// Acks returns the acknowledgements received so far, in order.
func (s *Slack) Acks() []Ack {
	return slackCopy(s, &s.socket.acks)
}

// WaitAck waits until the envelope is acknowledged.
func (s *Slack) WaitAck(ctx context.Context, envelopeID string) error {
	if err := s.await(ctx, func() bool { return s.socket.acked[envelopeID] }); err != nil {
		return fmt.Errorf("fake slack: waiting for the ack of %s: %w", envelopeID, err)
	}
	return nil
}

// slackRaw turns a payload into raw JSON.
func slackRaw(payload any) (json.RawMessage, error) {
	var raw []byte
	switch p := payload.(type) {
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	case string:
		raw = []byte(p)
	default:
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, fmt.Errorf("marshal payload: %w", err)
		}
		return b, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("payload is not valid JSON: %.100s", raw)
	}
	return slices.Clone(raw), nil
}
