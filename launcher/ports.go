package launcher

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// loopback is the host the launcher binds nodes to unless ClusterConfig.Host
// names another loopback address.
const loopback = "127.0.0.1"

// ports returns n ports from base on, or, when base is 0, n reserved free ports
// on host other than those in exclude.
func ports(host string, base, n int, exclude []int) ([]int, error) {
	if base == 0 {
		return FreePorts(host, n, exclude...)
	}
	ps := make([]int, n)
	for i := range ps {
		ps[i] = base + i
	}
	return ps, nil
}

// PrivateLoopback returns a random address in 127.0.0.0/8 other than 127.0.0.1
// that this machine lets a program bind (Linux routes the whole block to the
// loopback interface), or 127.0.0.1 where it does not. Connections to it come
// from 127.0.0.1, so neither the kernel's ephemeral ports nor other programs'
// listeners on 127.0.0.1 take its ports.
func PrivateLoopback() string {
	for range 10 {
		ip := net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254))).String()
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err == nil {
			l.Close()
			return ip
		}
	}
	return loopback
}

// FreePorts reserves n distinct free TCP ports on host, none of them in exclude,
// and releases them for the caller's processes to bind. The ports come from
// below the kernel's ephemeral range, checked free by binding each once: a port
// the kernel hands out for a bind to port 0 or for an outgoing connection (every
// other node's HTTP listener, every client) could otherwise be taken between the
// release here and the node's own bind, which made a test's node exit with
// "address already in use" now and then. Only another caller choosing the same
// random port on the same host in that window can still collide. Where the range
// is not known, the kernel picks (bind to port 0).
func FreePorts(host string, n int, exclude ...int) ([]int, error) {
	lo, hi, ok := belowEphemeral()
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ps := make([]int, 0, n)
	for tries := 0; len(ps) < n; tries++ {
		port := 0
		if ok && tries < 100*n {
			port = lo + rand.IntN(hi-lo)
			if slices.Contains(exclude, port) {
				continue
			}
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			if port != 0 {
				continue // taken: try another
			}
			return nil, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		ls = append(ls, l)
		if slices.Contains(exclude, p) {
			continue // the kernel's pick; keep it bound so it is not picked again
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// FreeRange returns the first of n consecutive ports on host that are free now,
// from below the kernel's ephemeral range where that is known (see FreePorts),
// for a cluster's fixed HTTP ports (ClusterConfig.HTTPBasePort).
func FreeRange(host string, n int) (int, error) {
	lo, hi, ok := belowEphemeral()
	if !ok {
		lo, hi = 20000, 30000
	}
	for range 100 {
		base := lo + rand.IntN(hi-lo-n)
		var ls []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(base+i)))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if len(ls) == n {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports on %s", n, host)
}

// belowEphemeral returns the range [lo, hi) of ports that FreePorts picks
// from: from 10000 up to the start of the kernel's ephemeral port range.
func belowEphemeral() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start <= 11000 {
		return 0, 0, false
	}
	return 10000, start, true
}
