//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/persona-runtime/agent/internal/fake"
)

// echoEgress plays the runtime's proxy: it answers every request with
// the host asked for, and records the contexts it was given.
type echoEgress struct {
	mu    sync.Mutex
	hosts []string
	keys  []any
}

type ctxKey struct{}

func (e *echoEgress) ServeConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	e.mu.Lock()
	e.hosts = append(e.hosts, req.Host)
	e.keys = append(e.keys, ctx.Value(ctxKey{}))
	e.mu.Unlock()
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\nvia proxy %s", len("via proxy ")+len(req.Host), req.Host)
}

// netWorld is a sandbox under NetAllowlist whose commands run as the
// test's user, or as nobody when unprivileged (the test is root).
func netWorld(t *testing.T, unprivileged bool, e Egress) (*Sandbox, string, *syscall.Credential) {
	t.Helper()
	needLandlock(t)
	o := Options{Mode: ModeRequired, Net: NetAllowlist, Egress: e}
	if !unprivileged || os.Geteuid() != 0 {
		o.TempRoot = t.TempDir()
		sb, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if !sb.netns {
			t.Skip("the kernel gives no user and network namespaces here")
		}
		return sb, t.TempDir(), nil
	}
	o.Exe = fake.CopyTestBinary(t, "helper")
	dir := filepath.Dir(o.Exe)
	o.TempRoot = filepath.Join(dir, "tmp")
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{o.TempRoot, ws} {
		if err := os.Mkdir(d, 0o700); err != nil || os.Chown(d, int(nobody.Uid), int(nobody.Gid)) != nil {
			t.Fatal(err)
		}
	}
	sb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	sb.pids = nil
	if !sb.netns {
		t.Skip("the kernel gives no user and network namespaces here")
	}
	return sb, ws, nobody
}

// runNet runs a bash script confined, with ctx, and returns its output.
func runNet(t *testing.T, ctx context.Context, sb *Sandbox, ws string, cred *syscall.Credential, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("/usr/bin/bash", "-c", script)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + ws}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	cleanup, err := sb.Command(ctx, cmd, ws, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// Under allowlist a command has a network of its own: a direct TCP
// connection to a server listening on the host's loopback, a UDP
// datagram and a DNS query fail; an HTTP request through the proxy
// variables reaches the Egress, with the call's context; without the
// variables, nothing.
func TestAllowlistNetwork(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	udpPort := udp.LocalAddr().(*net.UDPAddr).Port

	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			e := &echoEgress{}
			sb, ws, cred := netWorld(t, u.unprivileged, e)
			ctx := context.WithValue(context.Background(), ctxKey{}, "thread-1")
			for _, tc := range []struct {
				name, script string
				ok           bool
				want         string
			}{
				{"direct tcp to the host's loopback", fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3`, port), false, ""},
				{"udp datagram", fmt.Sprintf(`echo leak > /dev/udp/127.0.0.1/%d`, udpPort), true, ""},
				{"dns query", `getent hosts example.com`, false, ""},
				{"through the proxy", `curl -sS http://example.com/x`, true, "via proxy example.com"},
				{"proxy variables unset", `unset HTTP_PROXY http_proxy ALL_PROXY all_proxy; curl -sS --max-time 5 http://example.com/x`, false, ""},
				{"proxy variables replaced", `HTTP_PROXY= http_proxy=http://10.0.0.1:3128 curl -sS --max-time 5 http://example.com/x`, false, ""},
				{"no capability left", `/usr/sbin/ip link add d0 type dummy; /usr/sbin/ip link set lo down; true`, true, "Operation not permitted"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					out, err := runNet(t, ctx, sb, ws, cred, tc.script)
					if (err == nil) != tc.ok || !strings.Contains(out, tc.want) {
						t.Fatalf("err %v (want ok=%v), output %q (want %q)", err, tc.ok, out, tc.want)
					}
					if strings.Contains(out, "hello from the host") {
						t.Fatalf("reached the host's loopback: %q", out)
					}
				})
			}
			select {
			case m := <-got:
				t.Fatalf("a datagram reached the host: %q", m)
			default:
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if len(e.hosts) != 1 || e.hosts[0] != "example.com" || e.keys[0] != "thread-1" {
				t.Fatalf("egress saw %q with %v", e.hosts, e.keys)
			}
		})
	}
}

// Where the kernel gives no namespaces, allowlist works as deny and the
// start line says so.
func TestAllowlistWithoutNamespaces(t *testing.T) {
	needLandlock(t)
	sb, err := New(Options{Mode: ModeRequired, Net: NetAllowlist, Namespaces: func() bool { return false }, TempRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st := sb.Status()
	want := fmt.Sprintf("sandbox: landlock abi %d, net deny (no network namespace: allowlist unavailable)", LandlockABI())
	if st.String() != want || st.NetLabel() != "deny-no-namespace" {
		t.Fatalf("status %q / %q, want %q", st.String(), st.NetLabel(), want)
	}
	if LandlockABI() < 4 {
		return
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	ws := t.TempDir()
	out, err := runNet(t, context.Background(), sb, ws, nil, fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3`, ln.Addr().(*net.TCPAddr).Port))
	if err == nil || strings.Contains(out, "hello") {
		t.Fatalf("fallback let a connection through: %v %q", err, out)
	}
}
