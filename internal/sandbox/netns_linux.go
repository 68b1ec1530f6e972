//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The network of its own (NetAllowlist). The helper's supervisor starts
// its second process, which execs the command, in a new user and network
// namespace (clone flags, as `unshare -U -n` would, without privilege:
// the user namespace maps only the supervisor's own uid and gid to
// themselves, so nobody in it is root who was not root outside). The
// supervisor does it, not the runtime: the runtime is not dumpable
// (HardenProcess), and the kernel lets no unprivileged parent write the
// id maps of a child that is not. The new network has only a loopback,
// down: the second process brings it up (the one capability it needs,
// CAP_NET_ADMIN in its own namespace, is an ambient one that the command
// does not keep), listens on 127.0.0.1, hands the listening socket to the
// supervisor and execs the command with the proxy variables pointing
// there. The supervisor accepts on it and hands every connection, as a
// descriptor, over the relay socket — one end of a socket pair the
// runtime made for this call — to the runtime's egress proxy (Egress).
// The command sees the proxy on its own loopback and nothing else: no
// route, no DNS.

// nsFlags are the namespaces of a command under NetAllowlist.
const nsFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNET

// nsAttr starts a process in a user and network namespace of its own,
// mapping this process's uid and gid to themselves.
func nsAttr() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	a := &syscall.SysProcAttr{
		Cloneflags:  nsFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	if uid != 0 {
		// Root in the namespace has every capability there; anyone else
		// gets the one to bring the loopback up, which the second
		// process drops before it execs the command (dropCapabilities).
		a.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
	}
	return a
}

// relay is the runtime's end of one command's relay socket: each message
// carries one connection the command made to its proxy address.
type relay struct {
	mine   *net.UnixConn
	theirs *os.File
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// newRelay makes the relay socket pair of one command; theirs goes to the
// helper (ExtraFiles).
func newRelay() (*relay, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	f := os.NewFile(uintptr(fds[0]), "relay")
	mine, err := net.FileConn(f)
	f.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	return &relay{mine: mine.(*net.UnixConn), theirs: os.NewFile(uintptr(fds[1]), "relay-helper"),
		conns: map[net.Conn]struct{}{}}, nil
}

// serve hands each connection the helper passes on to egress, with ctx
// (the call's: its thread), until close.
func (r *relay) serve(ctx context.Context, egress Egress) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		uc := r.mine
		buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
		for {
			_, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
			if err != nil {
				return
			}
			conn, ok := connOf(oob[:oobn])
			if !ok {
				continue
			}
			if !r.track(conn) {
				return
			}
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				defer r.untrack(conn)
				egress.ServeConn(ctx, conn)
			}()
		}
	}()
}

// connOf is the connection in a relay message's control data.
func connOf(oob []byte) (net.Conn, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		return nil, false
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, false
	}
	var conn net.Conn
	for i, fd := range fds {
		if i > 0 {
			unix.Close(fd)
			continue
		}
		f := os.NewFile(uintptr(fd), "relayed")
		conn, err = net.FileConn(f)
		f.Close()
	}
	return conn, err == nil && conn != nil
}

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

// close ends the relay once the command has: its socket, and every
// connection still open (nothing outlives the call).
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
	}
	r.mine.Close()
	r.theirs.Close()
	r.wg.Wait()
}

// The helper's side.

// upLoopback brings the namespace's loopback up.
func upLoopback() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// listenInside is the second process's part: it brings the namespace's
// loopback up, listens there and hands the listener to the supervisor
// over fd (closing its own copies: the command gets none). It returns the
// proxy's address as the command sees it.
func listenInside(fd int) (string, error) {
	defer unix.Close(fd)
	if err := upLoopback(); err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("proxy address: %w", err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return "", fmt.Errorf("proxy address: %w", err)
	}
	defer f.Close()
	if err := unix.Sendmsg(fd, []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return "", fmt.Errorf("hand the proxy address over: %w", err)
	}
	return ln.Addr().String(), nil
}

// handoffPair is the socket pair the supervisor gets the listener on.
func handoffPair() (mine, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("handoff socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "handoff"), os.NewFile(uintptr(fds[1]), "handoff-inner"), nil
}

// relayFrom is the supervisor's relay: it takes the listener the second
// process hands over on handoff and passes every connection accepted
// there to the runtime over relayFD. Without a listener (the second
// process failed and said why) it does nothing.
func relayFrom(handoff *os.File, relayFD int) {
	defer handoff.Close()
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(handoff.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return
	}
	lf := os.NewFile(uintptr(fds[0]), "proxy-listener")
	ln, err := net.FileListener(lf)
	lf.Close()
	if err != nil {
		return
	}
	go func() {
		defer ln.Close()
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			f, err := c.(*net.TCPConn).File()
			c.Close()
			if err != nil {
				continue
			}
			err = unix.Sendmsg(relayFD, []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0)
			f.Close()
			if err != nil {
				return // the runtime is gone: nothing more can reach it
			}
		}
	}()
}

// withProxy is env with the proxy variables pointing at addr, in place
// of any it had.
func withProxy(env []string, addr string) []string {
	out := make([]string, 0, len(env)+6)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy":
			continue
		}
		out = append(out, kv)
	}
	return append(out, proxyEnv(addr)...)
}

// proxyEnv is the environment that points a command's clients at its
// proxy address: the upper- and lower-case forms each program reads.
func proxyEnv(addr string) []string {
	u := "http://" + addr
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+u, strings.ToLower(k)+"="+u)
	}
	return env
}

// dropCapabilities leaves the command no capability in its namespace:
// the ambient set (the supervisor's CAP_NET_ADMIN) is cleared, and for
// root in the namespace the bounding set is emptied too, so that exec
// grants nothing. Capabilities are per thread: the caller has locked its
// thread, the one that execs.
func dropCapabilities() error {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return nil
}

// probeNamespaces reports whether the kernel gives exe's helper a user
// and network namespace with a loopback it can bring up. The helper gets
// no environment: it needs none, and the runtime's holds its credentials.
func probeNamespaces(exe string) bool {
	cmd := exec.Command(exe, HelperCommand, "--"+probeFlag)
	cmd.Env = []string{}
	return cmd.Run() == nil
}

// probe is the helper's side of probeNamespaces: the first process starts
// the second in the namespaces, which brings the loopback up.
func probe(inner bool) int {
	if inner {
		if upLoopback() != nil {
			return 1
		}
		return 0
	}
	self, err := os.Executable()
	if err != nil {
		return 1
	}
	pid, err := syscall.ForkExec(self, []string{self, HelperCommand, "--" + probeFlag, "--" + innerFlag},
		&syscall.ProcAttr{Files: []uintptr{0, 1, 2}, Sys: nsAttr()})
	if err != nil {
		return 1
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if ws.Exited() && ws.ExitStatus() == 0 {
		return 0
	}
	return 1
}
