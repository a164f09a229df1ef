// SPDX-License-Identifier: BSD-3-Clause

// Package reporter sends lockwatch wait/hold/waiting/lost samples
// (docs/line-protocol.md) from Go services that lock with go-redsync or
// bsm/redislock, following docs/reporters.md: it wraps the library's calls,
// never changes what they do, and never blocks, panics into or slows the
// caller (a bounded queue drained by one goroutine; a full queue drops and
// counts).
//
// This file reads the configuration every reporter shares:
// LOCKWATCH_SAMPLES, LOCKWATCH_KEY_FILE and LOCKWATCH_OWNER. FromEnv and
// samplesOff only read settings and may run on a lock call's goroutine (the
// first use of Default); parseDests and readKey resolve names and read a
// file, which may block on DNS or a slow disk, so only a reporter's own
// sending goroutine calls them (Reporter.start).
package reporter

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// The resolver and the file reader of parseDests and readKey: variables so
// that a test can tell which goroutine calls them (reporter_test.go).
var (
	resolveUDPAddr = net.ResolveUDPAddr
	readFile       = os.ReadFile
)

const (
	defaultSamples = "127.0.0.1:9717"
	maxDests       = 8
	minKey         = 16
	maxKey         = 4096
	maxOwner       = 200
)

// Config is what a Reporter is built from. FromEnv fills it from the
// environment; a program may also build it by hand.
type Config struct {
	// Samples is "host:port[,host:port...]" (at most 8); "" or "off" (in
	// any case) turns reporting off.
	Samples string
	// KeyFile, when set, is the shared key's path: every datagram is
	// signed (lw1 mac). An unreadable or short key turns reporting off.
	KeyFile string
	// Owner is the <process> part of owner ids; "" means hostname:pid.
	Owner string
	// QueueLen bounds the lines waiting to be sent (default 8192).
	QueueLen int
	// Tap, when set, is called on the caller's goroutine with every line
	// the reporter queues or would have queued (tests, debugging). It must
	// not block.
	Tap func(line string)
	// keyFileEmpty: FromEnv found LOCKWATCH_KEY_FILE set but empty (a
	// template's unset value), said once by the sending goroutine.
	keyFileEmpty bool
}

// FromEnv returns the configuration the environment gives.
func FromEnv() Config {
	c := Config{Samples: defaultSamples}
	if v, ok := os.LookupEnv("LOCKWATCH_SAMPLES"); ok {
		c.Samples = v
	}
	if v, ok := os.LookupEnv("LOCKWATCH_KEY_FILE"); ok {
		c.KeyFile = v
		c.keyFileEmpty = strings.TrimSpace(v) == ""
	}
	c.Owner = os.Getenv("LOCKWATCH_OWNER")
	return c
}

// samplesOff tells whether LOCKWATCH_SAMPLES turns reporting off ("" or
// "off" in any case), without parsing or resolving anything.
func samplesOff(spec string) bool {
	spec = strings.TrimSpace(spec)
	return spec == "" || strings.EqualFold(spec, "off")
}

// parseDests resolves each destination once, on the reporter's sending
// goroutine (a reporter never does DNS on the lock path). An unresolvable
// one is skipped with an error returned for the log; the others still work.
func parseDests(spec string) ([]*net.UDPAddr, []error) {
	if samplesOff(spec) {
		return nil, nil
	}
	spec = strings.TrimSpace(spec)
	var out []*net.UDPAddr
	var errs []error
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if len(out) == maxDests {
			errs = append(errs, fmt.Errorf("lockwatch: more than %d destinations in LOCKWATCH_SAMPLES, %q ignored", maxDests, part))
			continue
		}
		if err := checkDest(part); err != nil {
			errs = append(errs, fmt.Errorf("lockwatch: destination %q: %v (not reporting there)", part, err))
			continue
		}
		a, err := resolveUDPAddr("udp", part)
		if err != nil {
			errs = append(errs, fmt.Errorf("lockwatch: destination %q: %v (not reporting there)", part, err))
			continue
		}
		if sameDest(out, a) {
			// two names of one agent would count every sample twice
			errs = append(errs, fmt.Errorf("lockwatch: destination %q is %v again; sending there once", part, a))
			continue
		}
		out = append(out, a)
	}
	return out, errs
}

// sameDest says whether a is one of out already.
func sameDest(out []*net.UDPAddr, a *net.UDPAddr) bool {
	for _, d := range out {
		if d.IP.Equal(a.IP) && d.Port == a.Port && d.Zone == a.Zone {
			return true
		}
	}
	return false
}

// checkDest says what is wrong with a destination that is not
// host:port or [addr]:port with a port of 1 to 65535, as every reporter
// does: net.ResolveUDPAddr alone takes "host:" and ":port" (port 0, the
// wildcard host) and sends where no agent listens.
func checkDest(part string) error {
	host, port, err := net.SplitHostPort(part)
	if err != nil {
		return fmt.Errorf("expected host:port or [addr]:port")
	}
	if host == "" {
		return fmt.Errorf("expected host:port, the host is empty")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return fmt.Errorf("bad port")
	}
	return nil
}

// readKey reads the key file's first line, trailing newlines dropped (on
// the sending goroutine, as parseDests).
func readKey(path string) ([]byte, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if i := strings.IndexByte(string(b), '\n'); i >= 0 {
		b = b[:i]
	}
	b = []byte(strings.TrimRight(string(b), "\r\n"))
	if len(b) < minKey || len(b) > maxKey {
		return nil, fmt.Errorf("key in %s is %d bytes, not %d to %d", path, len(b), minKey, maxKey)
	}
	return b, nil
}

// processName is the <process> part of owner ids: owner:pid (several
// processes may share one name, a pod's, and each is an owner of its
// own). An owner longer than 200 bytes gives hostname:pid and an error
// for the log, as the other reporters do: reporting goes on.
func processName(owner string) (string, error) {
	def := defaultProcess()
	if owner != "" {
		if len(owner) > maxOwner {
			return def, fmt.Errorf("LOCKWATCH_OWNER is longer than %d bytes; using %s", maxOwner, def)
		}
		return fmt.Sprintf("%s:%d", owner, os.Getpid()), nil
	}
	return def, nil
}

// defaultProcess is hostname:pid.
func defaultProcess() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return fmt.Sprintf("%s:%d", h, os.Getpid())
}
