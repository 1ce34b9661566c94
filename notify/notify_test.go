package notify

import (
	"errors"
	"net/netip"
	"testing"
)

// TestAllowList: a url is allowed when one pattern matches its host and its
// port; a pattern without a port admits only the scheme's default.
func TestAllowList(t *testing.T) {
	for _, c := range []struct {
		name, list, url string
		ok              bool
	}{
		// Ports.
		{"exact port", "127.0.0.1:8080", "http://127.0.0.1:8080/hook", true},
		{"other port", "127.0.0.1:8080", "http://127.0.0.1:8081/hook", false},
		{"port with leading zeros", "127.0.0.1:8080", "http://127.0.0.1:08080/", true},
		{"port out of range", "127.0.0.1:*", "http://127.0.0.1:65536/", false},
		{"port zero", "127.0.0.1:*", "http://127.0.0.1:0/", false},
		{"no port in the pattern: http's 80", "hooks.example.com", "http://hooks.example.com/a", true},
		{"no port in the pattern: explicit 80", "hooks.example.com", "http://hooks.example.com:80/a", true},
		{"no port in the pattern: https's 443", "hooks.example.com", "https://hooks.example.com/a?b=c", true},
		{"no port in the pattern: another port", "hooks.example.com", "http://hooks.example.com:81/", false},
		{"no port in the pattern: http on 443", "hooks.example.com", "http://hooks.example.com:443/", false},
		{"no port in the pattern: https on 80", "hooks.example.com", "https://hooks.example.com:80/", false},
		{"IP without a port: 80", "10.0.0.5", "http://10.0.0.5/", true},
		{"IP without a port: 8080", "10.0.0.5", "http://10.0.0.5:8080/", false},
		{"port 443 named, http", "hooks.example.com:443", "http://hooks.example.com:443/", true},
		// Wildcards.
		{"* port", "127.0.0.1:*", "http://127.0.0.1:1/", true},
		{"* port, other host", "127.0.0.1:*", "http://127.0.0.2:80/", false},
		{"* label", "*.svc.example:8443", "https://a.svc.example:8443/", true},
		{"* label, other port", "*.svc.example:8443", "https://a.svc.example:8444/", false},
		{"* label: not the bare domain", "*.svc.example:8443", "https://svc.example:8443/", false},
		{"* label: not two labels", "*.svc.example:8443", "https://a.b.svc.example:8443/", false},
		{"* inside a label", "hook-*.example.com", "http://hook-7.example.com/", true},
		{"* inside a label: another prefix", "hook-*.example.com", "http://hooky.example.com/", false},
		{"* alone: one label", "*:9000", "http://localhost:9000/", true},
		{"* alone: not an IP", "*:9000", "http://127.0.0.1:9000/", false},
		{"* alone: not two labels", "*:9000", "http://a.b:9000/", false},
		{"* alone: not a number read as an IP", "*:9000", "http://2130706433:9000/", false},
		{"* alone: not hex read as an IP", "*:9000", "http://0x7f000001:9000/", false},
		{"*.*", "*.*", "http://a.b/", true},
		// Names.
		{"case", "hooks.example.com", "http://HOOKS.Example.com/", true},
		{"suffix attack", "hooks.example.com", "http://hooks.example.com.evil.com/", false},
		{"host in the path", "127.0.0.1:80", "http://evil.com/127.0.0.1", false},
		{"trailing dot", "hooks.example.com", "http://hooks.example.com./", false},
		{"short IPv4 read as a name", "127.0.0.1", "http://127.1/", false},
		{"a name is not its address", "localhost:8080", "http://127.0.0.1:8080/", false},
		{"an address is not a name", "127.0.0.1:8080", "http://localhost:8080/", false},
		// IPv6.
		{"IPv6", "[::1]:9000", "http://[::1]:9000/", true},
		{"IPv6 spelled long", "[::1]:9000", "http://[0:0:0:0:0:0:0:1]:9000/", true},
		{"IPv6 other port", "[::1]:9000", "http://[::1]:9001/", false},
		{"IPv6 without a port", "[fd00::5]", "https://[fd00::5]/", true},
		{"IPv6 without a port, other", "[fd00::5]", "https://[fd00::5]:8443/", false},
		{"IPv6 zone", "[fe80::1]:80", "http://[fe80::1%25eth0]:80/", false},
		{"IPv4-mapped IPv6 is its IPv4", "127.0.0.1:80", "http://[::ffff:127.0.0.1]:80/", true},
		// The url.
		{"ftp", "127.0.0.1:*", "ftp://127.0.0.1/x", false},
		{"no host", "127.0.0.1:*", "http:///nohost", false},
		{"relative", "127.0.0.1:*", "/relative", false},
		{"no scheme", "127.0.0.1:*", "127.0.0.1:80", false},
		{"user info", "127.0.0.1:*", "http://u:p@127.0.0.1/", false},
		{"bad escape", "*", "http://%zz/", false},
		{"escaped host", "127.0.0.1:80", "http://%31%32%37.0.0.1/", false},
		{"underscore name", "my_hook.local", "http://my_hook.local/", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ParseAllowList(c.list)
			if err != nil {
				t.Fatalf("ParseAllowList(%q) = %v", c.list, err)
			}
			err = l.Check(c.url)
			if c.ok && err != nil {
				t.Errorf("list %q: Check(%q) = %v; want allowed", c.list, c.url, err)
			}
			if !c.ok && !errors.Is(err, ErrNotAllowed) {
				t.Errorf("list %q: Check(%q) = %v; want ErrNotAllowed", c.list, c.url, err)
			}
		})
	}
	var none *AllowList
	if err := none.Check("http://127.0.0.1/"); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("nil list: Check = %v; want ErrNotAllowed", err)
	}
	empty, err := ParseAllowList(" , ")
	if err != nil || !empty.Empty() || !errors.Is(empty.Check("http://127.0.0.1/"), ErrNotAllowed) {
		t.Fatalf("ParseAllowList(\" , \") = %v, %v; want an empty list that allows nothing", empty, err)
	}
}

func TestParseAllowListBad(t *testing.T) {
	for _, s := range []string{
		"a:b:c:", "host:", "a/b", "a?b", "[x", "[x]", "u@h", "h[1]", ":80", "h:0", "h:65536", "h:8*", "h:-1", "h:+80",
		"::1", "::1:80", "[fe80::1%eth0]:80", "10.0.0.*", "10.0.0.*:80", "127.1", "999.1.1.1", "a..b", ".a", "a.", "h\\x",
		"0x7f000001", "hooks.example.com:80,bad/",
	} {
		if _, err := ParseAllowList(s); err == nil {
			t.Errorf("ParseAllowList(%q) = nil error; want one", s)
		}
	}
}

// TestCheckConn: the address connected to must be public, named by an IP
// pattern with a port that admits the one dialed, or private with
// --webhook-allow-private.
func TestCheckConn(t *testing.T) {
	for _, c := range []struct {
		name, list, addr string
		def              int
		private, ok      bool
	}{
		{"public", "hooks.example.com", "93.184.216.34:80", 80, false, true},
		{"loopback through a name", "localhost:8080", "127.0.0.1:8080", 80, false, false},
		{"loopback through a name, private opt-in", "localhost:8080", "127.0.0.1:8080", 80, true, false},
		{"loopback named", "localhost:8080,127.0.0.1:8080", "127.0.0.1:8080", 80, false, true},
		{"loopback named, other port", "127.0.0.1:8080", "127.0.0.1:8081", 80, false, false},
		{"loopback named with *", "127.0.0.1:*", "127.0.0.1:22", 80, false, true},
		{"loopback named without a port: http", "127.0.0.1", "127.0.0.1:80", 80, false, true},
		{"loopback named without a port: https on 80", "127.0.0.1", "127.0.0.1:80", 443, false, false},
		{"other loopback", "127.0.0.1:8080", "127.0.0.2:8080", 80, false, false},
		{"IPv6 loopback", "localhost:8080", "[::1]:8080", 80, false, false},
		{"IPv6 loopback named", "[::1]:8080", "[::1]:8080", 80, false, true},
		{"IPv4-mapped loopback", "localhost:8080", "[::ffff:127.0.0.1]:8080", 80, false, false},
		{"IPv4-mapped loopback named", "127.0.0.1:8080", "[::ffff:127.0.0.1]:8080", 80, false, true},
		{"IPv4-compatible loopback", "*.example.com", "[::7f00:1]:80", 80, true, false},
		{"IPv6 loopback is not IPv4-compatible", "[::1]:80", "[::1]:80", 80, false, true},
		{"NAT64 of loopback", "*.example.com", "[64:ff9b::7f00:1]:80", 80, true, false},
		{"6to4 of link-local", "*.example.com", "[2002:a9fe:a9fe::1]:80", 80, true, false},
		{"metadata", "*.example.com", "169.254.169.254:80", 80, true, false},
		{"metadata named", "169.254.169.254", "169.254.169.254:80", 80, false, true},
		{"IPv6 link-local", "*.example.com", "[fe80::1]:80", 80, true, false},
		{"IPv6 link-local with a zone, named", "[fe80::1]:80", "[fe80::1%eth0]:80", 80, false, false},
		{"unspecified", "*.example.com", "0.0.0.0:80", 80, true, false},
		{"this network", "*.example.com", "0.1.2.3:80", 80, true, false},
		{"IPv6 unspecified", "*.example.com", "[::]:80", 80, true, false},
		{"broadcast", "*.example.com", "255.255.255.255:80", 80, true, false},
		{"multicast", "*.example.com", "224.0.0.1:80", 80, true, false},
		{"private", "hooks.internal", "10.1.2.3:80", 80, false, false},
		{"private, opted in", "hooks.internal", "10.1.2.3:80", 80, true, true},
		{"private named", "10.1.2.3", "10.1.2.3:80", 80, false, true},
		{"172.16/12", "h.internal", "172.31.0.1:80", 80, false, false},
		{"172.32 is public", "h.internal", "172.32.0.1:80", 80, false, true},
		{"192.168/16", "h.internal", "192.168.1.1:80", 80, false, false},
		{"shared address space", "h.internal", "100.64.0.1:80", 80, false, false},
		{"ULA", "h.internal", "[fd00::1]:80", 80, false, false},
		{"ULA opted in", "h.internal", "[fd00::1]:80", 80, true, true},
		{"public IPv6", "h.example", "[2606:4700::1]:443", 443, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ParseAllowList(c.list)
			if err != nil {
				t.Fatal(err)
			}
			err = l.CheckConn(netip.MustParseAddrPort(c.addr), c.def, c.private)
			if c.ok && err != nil {
				t.Errorf("list %q private=%v: CheckConn(%s) = %v; want allowed", c.list, c.private, c.addr, err)
			}
			if !c.ok && !errors.Is(err, ErrNotAllowed) {
				t.Errorf("list %q private=%v: CheckConn(%s) = %v; want ErrNotAllowed", c.list, c.private, c.addr, err)
			}
		})
	}
}

func TestSignature(t *testing.T) {
	body := []byte(`{"txid":"x","status":"committed"}`)
	sig := Sign([]byte("s3cret"), body)
	if !Verify([]byte("s3cret"), body, sig) {
		t.Fatalf("Verify with the right secret failed for %s", sig)
	}
	if Verify([]byte("wrong"), body, sig) {
		t.Fatal("Verify with a wrong secret passed")
	}
	if Verify([]byte("s3cret"), append(body, ' '), sig) {
		t.Fatal("Verify of a changed body passed")
	}
	// A known vector: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog").
	want := "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
	if got := Sign([]byte("key"), []byte("The quick brown fox jumps over the lazy dog")); got != want {
		t.Fatalf("Sign = %s; want %s", got, want)
	}
}
