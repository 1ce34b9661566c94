//go:build linux

package systemtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"
)

// composeFile is what the three-host test reads of deploy/compose.yaml: the
// services' commands, volumes and fixed addresses, and the network's subnet.
// Other keys (image, build, ports, restart) are for Docker alone.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Networks map[string]composeNetwork `yaml:"networks"`
}

type composeService struct {
	Hostname string                           `yaml:"hostname"`
	Command  []string                         `yaml:"command"`
	Volumes  []string                         `yaml:"volumes"`
	Networks map[string]composeServiceNetwork `yaml:"networks"`
}

type composeServiceNetwork struct {
	IPv4Address string `yaml:"ipv4_address"`
}

type composeNetwork struct {
	IPAM struct {
		Config []struct {
			Subnet string `yaml:"subnet"`
		} `yaml:"config"`
	} `yaml:"ipam"`
}

// hostPlan is deploy/compose.yaml turned into what the test runs: one host
// (network namespace) per service, at the service's address.
type hostPlan struct {
	Subnet netip.Prefix
	// Gateway is the test's own address on the network: the subnet's first
	// address, which Docker gives the host.
	Gateway netip.Addr
	Nodes   []nodePlan // the txlogd services, by ID
	Redis   redisPlan
}

// nodePlan is one txlogd service.
type nodePlan struct {
	ID      string
	Addr    netip.Addr // the service's ipv4_address
	Args    []string   // txlogd's flags as the compose file gives them
	DataDir string     // the value of --data-dir there (a volume's target)
	HTTP    string     // host:port others reach its HTTP API at
}

// redisPlan is the Redis service.
type redisPlan struct {
	Name string
	Addr netip.Addr
	Port string   // from the nodes' --redis-addr
	Args []string // redis-server's arguments from the compose command
}

// flagValue returns the value of --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// withFlag returns args with --name=value in place of the --name flag.
func withFlag(args []string, name, value string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if strings.HasPrefix(a, "--"+name+"=") {
			out[i] = "--" + name + "=" + value
		}
	}
	return out
}

// parseCompose reads a compose file into the plan the test runs, and reports
// every way it fails to describe three txlogd nodes and a Redis on one subnet
// with fixed addresses.
func parseCompose(b []byte) (hostPlan, error) {
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return hostPlan{}, fmt.Errorf("parse: %w", err)
	}
	var p hostPlan
	var errs []error
	if len(f.Networks) != 1 {
		return p, fmt.Errorf("networks: %d, want one", len(f.Networks))
	}
	var netName string
	for name, n := range f.Networks {
		netName = name
		if len(n.IPAM.Config) != 1 {
			return p, fmt.Errorf("network %s: %d ipam configs, want one subnet", name, len(n.IPAM.Config))
		}
		var err error
		if p.Subnet, err = netip.ParsePrefix(n.IPAM.Config[0].Subnet); err != nil || !p.Subnet.Addr().Is4() {
			return p, fmt.Errorf("network %s: subnet %q: want an IPv4 prefix (%v)", name, n.IPAM.Config[0].Subnet, err)
		}
	}
	p.Subnet = p.Subnet.Masked()
	p.Gateway = p.Subnet.Addr().Next()
	names := make([]string, 0, len(f.Services))
	for name := range f.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	redisAddrs := map[string]bool{}
	for _, name := range names {
		s := f.Services[name]
		addr, err := netip.ParseAddr(s.Networks[netName].IPv4Address)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("service %s: networks.%s.ipv4_address %q: %w", name, netName, s.Networks[netName].IPv4Address, err))
			continue
		case !p.Subnet.Contains(addr) || addr == p.Gateway:
			errs = append(errs, fmt.Errorf("service %s: address %s: want one in %s other than %s", name, addr, p.Subnet, p.Gateway))
			continue
		case len(s.Command) == 0:
			errs = append(errs, fmt.Errorf("service %s: no command", name))
			continue
		}
		if s.Command[0] == "redis-server" {
			p.Redis = redisPlan{Name: name, Addr: addr, Args: s.Command[1:]}
			continue
		}
		id, ok := flagValue(s.Command, "id")
		if !ok {
			errs = append(errs, fmt.Errorf("service %s: command %q: neither redis-server nor txlogd with --id=", name, s.Command))
			continue
		}
		n := nodePlan{ID: id, Addr: addr, Args: s.Command}
		if id != name || s.Hostname != name {
			errs = append(errs, fmt.Errorf("service %s: hostname %q, --id=%s: want both %s", name, s.Hostname, id, name))
		}
		for _, flag := range []string{"data-dir", "http-addr", "raft-addr", "cluster", "redis-addr"} {
			if _, ok := flagValue(s.Command, flag); !ok {
				errs = append(errs, fmt.Errorf("service %s: no --%s=", name, flag))
			}
		}
		n.DataDir, _ = flagValue(s.Command, "data-dir")
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+n.DataDir) }) {
			errs = append(errs, fmt.Errorf("service %s: --data-dir=%s is no volume's target (volumes %q): its data would die with the container", name, n.DataDir, s.Volumes))
		}
		raft, _ := flagValue(s.Command, "raft-addr")
		if host, _, err := net.SplitHostPort(raft); err != nil || host != addr.String() {
			errs = append(errs, fmt.Errorf("service %s: --raft-addr=%s: want the service's address %s", name, raft, addr))
		}
		n.HTTP, ok = flagValue(s.Command, "advertise-http-addr")
		if !ok {
			n.HTTP, _ = flagValue(s.Command, "http-addr")
		}
		if host, _, err := net.SplitHostPort(n.HTTP); err != nil || host != addr.String() {
			errs = append(errs, fmt.Errorf("service %s: advertised HTTP address %s: want the service's address %s", name, n.HTTP, addr))
		}
		r, _ := flagValue(s.Command, "redis-addr")
		redisAddrs[r] = true
		p.Nodes = append(p.Nodes, n)
	}
	if len(p.Nodes) != 3 {
		errs = append(errs, fmt.Errorf("%d txlogd services, want 3", len(p.Nodes)))
	}
	if p.Redis.Name == "" {
		errs = append(errs, errors.New("no redis-server service"))
	} else if len(redisAddrs) == 1 {
		for r := range redisAddrs {
			host, port, err := net.SplitHostPort(r)
			if err != nil || host != p.Redis.Addr.String() {
				errs = append(errs, fmt.Errorf("--redis-addr=%s: want the %s service's address %s", r, p.Redis.Name, p.Redis.Addr))
			}
			p.Redis.Port = port
		}
	} else if len(redisAddrs) > 1 {
		errs = append(errs, fmt.Errorf("the nodes name different Redis addresses: %v", redisAddrs))
	}
	return p, errors.Join(errs...)
}

// netnsDir is where `ip netns add` keeps the named namespaces.
const netnsDir = "/var/run/netns"

// hostNet is the three-host test's network: one namespace per host, each with
// a veth (eth0) into a bridge that lives in a namespace of its own. That
// namespace also holds the test's own address (the gateway), from which its
// clients reach the hosts as a client on another machine would. The test
// process never changes its own namespace's network: its sockets are opened
// inside the namespaces (nsDialer).
type hostNet struct {
	bridge string            // namespace of the bridge and the test's address
	hosts  map[string]string // host name → its namespace
}

// runIP runs the ip command with args and returns its output in the error.
func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// netnsPrefix starts the names of the three-host test's namespaces:
// <netnsPrefix>-<pid>-<host>.
const netnsPrefix = "txlog3h"

// newHostNet creates the namespaces of p's hosts, named
// <netnsPrefix>-<pid>-<host>, and removes them in t.Cleanup (register it before
// anything that runs inside them, so that it runs after those stopped). It
// first removes the namespaces of earlier runs whose process is gone: a test
// binary killed before its cleanups ran (go test -timeout) leaves them, though
// not their processes (launcher's children die with it).
func newHostNet(t *testing.T, p hostPlan) *hostNet {
	t.Helper()
	sweepHostNets(t)
	prefix := fmt.Sprintf("%s-%d", netnsPrefix, os.Getpid())
	h := &hostNet{bridge: prefix + "-bridge", hosts: map[string]string{}}
	var created []string
	t.Cleanup(func() {
		for _, ns := range slices.Backward(created) {
			if err := runIP("netns", "delete", ns); err != nil {
				t.Errorf("remove namespace: %v", err)
			}
		}
	})
	add := func(ns string) {
		t.Helper()
		if err := runIP("netns", "add", ns); err != nil {
			t.Fatalf("create namespace: %v", err)
		}
		created = append(created, ns)
		if err := runIP("-n", ns, "link", "set", "lo", "up"); err != nil {
			t.Fatal(err)
		}
	}
	must := func(args ...string) {
		t.Helper()
		if err := runIP(args...); err != nil {
			t.Fatal(err)
		}
	}
	bits := fmt.Sprint(p.Subnet.Bits())
	add(h.bridge)
	must("-n", h.bridge, "link", "add", "br0", "type", "bridge")
	must("-n", h.bridge, "addr", "add", p.Gateway.String()+"/"+bits, "dev", "br0")
	must("-n", h.bridge, "link", "set", "br0", "up")
	hosts := map[string]netip.Addr{p.Redis.Name: p.Redis.Addr}
	for _, n := range p.Nodes {
		hosts[n.ID] = n.Addr
	}
	for name, addr := range hosts {
		ns, port := prefix+"-"+name, "v-"+name
		if len(port) > unix.IFNAMSIZ-1 {
			t.Fatalf("host name %q: too long for an interface name %q", name, port)
		}
		add(ns)
		h.hosts[name] = ns
		must("-n", h.bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
		must("-n", h.bridge, "link", "set", port, "master", "br0")
		must("-n", h.bridge, "link", "set", port, "up")
		must("-n", ns, "addr", "add", addr.String()+"/"+bits, "dev", "eth0")
		must("-n", ns, "link", "set", "eth0", "up")
	}
	return h
}

// sweepHostNets removes the namespaces newHostNet made in a run whose process
// is gone.
func sweepHostNets(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return // none made yet
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), netnsPrefix+"-")
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); !ok || err != nil || n == os.Getpid() {
			continue
		} else if _, err := os.Stat(fmt.Sprintf("/proc/%d", n)); err == nil {
			continue // its run goes on
		}
		if err := runIP("netns", "delete", e.Name()); err != nil {
			t.Errorf("remove a namespace an earlier run left: %v", err)
			continue
		}
		t.Logf("removed namespace %s, left by an earlier run", e.Name())
	}
}

// setLink takes host's only link to the network up or down: down is a
// partition, as a pulled cable is (the peers' packets go nowhere; nothing
// answers or resets them).
func (h *hostNet) setLink(host string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return runIP("-n", h.hosts[host], "link", "set", "eth0", state)
}

// command returns the program and arguments that run bin with args on host.
// `ip netns exec` execs bin in place, so the process's PID is bin's.
func (h *hostNet) command(host, bin string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", h.hosts[host], bin}, args...)
}

// nsDialer returns a DialContext that opens its connections inside namespace
// ns, to the address rewrite returns (nil: the address asked for).
//
// Each dial runs on a goroutine locked to its OS thread, which enters ns,
// dials, and goes back to the namespace it came from before it unlocks; a
// socket stays in the namespace it was made in. The thread must not die in
// ns: Linux sends a launcher child its parent-death signal when the thread
// that forked it ends (launcher's package doc), so a thread that cannot go
// back stays locked and parked for the rest of the test instead.
func nsDialer(ns string, rewrite func(addr string) string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if rewrite != nil {
			addr = rewrite(addr)
		}
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			c, back, err := dialIn(ctx, ns, network, addr)
			ch <- result{c, err}
			if !back {
				select {} // keep the thread, locked, out of everyone's way
			}
			runtime.UnlockOSThread()
		}()
		r := <-ch
		return r.c, r.err
	}
}

// dialIn dials addr from inside namespace ns on the calling, locked thread,
// and reports whether the thread is back in its own namespace.
func dialIn(ctx context.Context, ns, network, addr string) (c net.Conn, back bool, err error) {
	self, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, true, err
	}
	defer self.Close()
	target, err := os.Open(filepath.Join(netnsDir, ns))
	if err != nil {
		return nil, true, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("enter namespace %s: %w", ns, err)
	}
	var d net.Dialer
	c, err = d.DialContext(ctx, network, addr)
	if serr := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); serr != nil {
		return c, false, errors.Join(err, fmt.Errorf("leave namespace %s: %w", ns, serr))
	}
	return c, true, err
}

// nsHTTPClient returns an HTTP client whose connections start in namespace ns
// (see nsDialer).
func nsHTTPClient(ns string, rewrite func(addr string) string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = nsDialer(ns, rewrite)
	tr.Proxy = nil // the namespaces' addresses are reached directly, whatever HTTP_PROXY says
	return &http.Client{Transport: tr}
}
