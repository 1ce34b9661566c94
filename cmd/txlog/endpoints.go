package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/client"
)

// Endpoints that got no answer are remembered across runs of txlog in a small
// file in the user's cache directory (downFile), one "UNIX-MILLIS URL" a line,
// so that the next command tries the nodes it has not seen fail first: with
// two of three nodes stopped, a read goes to the live one at once instead of
// waiting out the stopped ones in turn. A line older than downMemory is
// forgotten; an endpoint that answers is taken off. The file is a hint: when
// it cannot be read or written, txlog tries the targets in their order.

// downMemory is how long a failed endpoint stays at the back of the line.
const downMemory = 10 * time.Minute

// downFile returns the path of the file of endpoints that got no answer,
// "" when there is no cache directory ($XDG_CACHE_HOME, else $HOME/.cache).
func (c *cli) downFile() string {
	dir, _ := c.lookupEnv("XDG_CACHE_HOME")
	if dir == "" {
		home, _ := c.lookupEnv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".cache")
	}
	return filepath.Join(dir, "txlog", "down-endpoints")
}

// readDown returns the endpoints the file lists as down, with when they
// failed, those within downMemory only.
func (c *cli) readDown() map[string]time.Time {
	path := c.downFile()
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	down := map[string]time.Time{}
	for _, line := range strings.Split(string(b), "\n") {
		ms, url, ok := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			continue
		}
		if t := time.UnixMilli(n); time.Since(t) < downMemory {
			down[url] = t
		}
	}
	return down
}

// orderEndpoints returns eps with the endpoints that recently got no answer
// last, the longest-failed of them first; the others keep their order.
func (c *cli) orderEndpoints(eps []string) []string {
	down := c.readDown()
	if len(down) == 0 {
		return eps
	}
	var up, late []string
	for _, e := range eps {
		if _, ok := down[normalized(e)]; ok {
			late = append(late, e)
		} else {
			up = append(up, e)
		}
	}
	slices.SortStableFunc(late, func(a, b string) int { return down[normalized(a)].Compare(down[normalized(b)]) })
	return append(up, late...)
}

// normalized is e as the client keeps it.
func normalized(e string) string {
	if n, err := client.NormalizeBaseURL(e); err == nil {
		return n
	}
	return e
}

// track remembers cl, so that its endpoints' state is saved once the command
// ends (saveDown).
func (c *cli) track(cl *client.Client) { c.clients = append(c.clients, cl) }

// saveDown updates the file of endpoints that got no answer with what the
// command's clients saw: an endpoint down now is added (with the time now),
// one that answered is taken off. Errors are ignored: the file is a hint.
func (c *cli) saveDown() {
	path := c.downFile()
	if path == "" || len(c.clients) == 0 {
		return
	}
	down := c.readDown()
	if down == nil {
		down = map[string]time.Time{}
	}
	changed := false
	now := time.Now()
	for _, cl := range c.clients {
		isDown := map[string]bool{}
		for _, e := range cl.Down() {
			isDown[e] = true
			if _, ok := down[e]; !ok {
				down[e], changed = now, true
			}
		}
		for _, e := range cl.Endpoints() {
			if _, ok := down[e]; ok && !isDown[e] && cl.Answered(e) {
				delete(down, e)
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	var b bytes.Buffer
	for _, e := range slices.Sorted(maps.Keys(down)) {
		fmt.Fprintf(&b, "%d %s\n", down[e].UnixMilli(), e)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if os.WriteFile(tmp, b.Bytes(), 0o600) != nil {
		os.Remove(tmp)
		return
	}
	if os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}
