package main

import (
	"fmt"
	"net"
	"strings"
)

// sdNotify sends state ("READY=1", "STOPPING=1") to the service manager as
// sd_notify(3) does: one datagram to the unix socket that NOTIFY_SOCKET
// names, a path or, with a leading @, a name in Linux's abstract namespace
// (Go's net package maps the @ to the leading NUL). socket is the
// variable's value; empty (not run by systemd with Type=notify) sends
// nothing. It is the protocol's few lines, so txlogd takes no dependency for
// it; systemd's vsock: addresses are not supported.
func sdNotify(socket, state string) error {
	if socket == "" {
		return nil
	}
	if !strings.HasPrefix(socket, "/") && !strings.HasPrefix(socket, "@") {
		return fmt.Errorf("NOTIFY_SOCKET %q: want an absolute path or an @abstract name", socket)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", state, err)
	}
	return nil
}
