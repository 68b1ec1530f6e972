package egress

import (
	"context"
	"net"
	"sync"
)

// taggedConn is a command's connection with its call's context; Close
// tells ServeConn the server is done with it.
type taggedConn struct {
	net.Conn
	ctx    context.Context
	once   sync.Once
	closed chan struct{}
}

func (c *taggedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}

// connListener hands the relayed connections to the proxy's http.Server.
type connListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener() *connListener {
	return &connListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return relayAddr{} }

// relayAddr is the listener's address: it has none on the host.
type relayAddr struct{}

func (relayAddr) Network() string { return "relay" }
func (relayAddr) String() string  { return "relay" }
