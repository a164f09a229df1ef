// SPDX-License-Identifier: BSD-3-Clause
package reporter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
)

// memPool is a one-node in-memory stand-in for Redis, enough for redsync's
// SET NX PX and its delete/touch scripts (no Redis in unit tests).
type memPool struct {
	mu   sync.Mutex
	vals map[string]string
	down bool
	busy int // SET NX answers "taken" this many more times
}

type memConn struct{ p *memPool }

func (p *memPool) Get(ctx context.Context) (rsredis.Conn, error) { return memConn{p}, nil }

func (c memConn) Get(name string) (string, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return c.p.vals[name], nil
}
func (c memConn) Set(name, value string) (bool, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.p.vals[name] = value
	return true, nil
}
func (c memConn) SetNX(name, value string, _ time.Duration) (bool, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.p.down {
		return false, errors.New("connection refused")
	}
	if c.p.busy > 0 {
		c.p.busy--
		return false, nil
	}
	if _, ok := c.p.vals[name]; ok {
		return false, nil
	}
	c.p.vals[name] = value
	return true, nil
}
func (c memConn) Eval(s *rsredis.Script, kv ...interface{}) (interface{}, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	name, value := kv[0].(string), kv[1].(string)
	if c.p.vals[name] != value {
		return int64(0), nil
	}
	if strings.Contains(s.Src, "DEL") {
		delete(c.p.vals, name)
	}
	return int64(1), nil
}
func (c memConn) PTTL(name string) (time.Duration, error) { return time.Second, nil }
func (c memConn) Close() error                            { return nil }

// tapped is a reporter with owner "p" whose lines are kept, the
// "p:<pid>/" of their owners written "p/" (an owner "p/" without the
// pid is written "p?/", and fails the test that reads it).
func tapped() (*Reporter, *[]string) {
	var mu sync.Mutex
	lines := &[]string{}
	proc := " p:" + strconv.Itoa(os.Getpid()) + "/"
	r := New(Config{Samples: "off", Owner: "p", Tap: func(l string) {
		mu.Lock()
		*lines = append(*lines, strings.ReplaceAll(strings.ReplaceAll(l, " p/", " p?/"), proc, " p/"))
		mu.Unlock()
	}})
	return r, lines
}

// tapOwner is an owner of tapped()'s reporter as its lines show it.
func tapOwner(o string) string {
	return strings.Replace(o, "p:"+strconv.Itoa(os.Getpid())+"/", "p/", 1)
}

// lockUnlock takes m in ctx and releases it, failing t if either fails.
func lockUnlock(t *testing.T, m *Mutex, ctx context.Context) {
	t.Helper()
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
}

func TestMutexReportsWaitAndHold(t *testing.T) {
	r, lines := tapped()
	pool := &memPool{vals: map[string]string{}}
	rs := redsync.New(pool)
	m := r.WrapMutex(rs.NewMutex("lock:a"))
	lockUnlock(t, m, WithOwner(context.Background(), "worker-3"))
	l := *lines
	if len(l) != 3 {
		t.Fatalf("%q", l)
	}
	// the start, then the waiting end and the wait in one line, then the hold
	if l[0] != "lw1 waiting lock:a p/worker-3 - start" ||
		!strings.HasPrefix(l[1], "lw1 wait lock:a ") || !strings.HasSuffix(l[1], " ok p/worker-3 "+m.Value()) ||
		!strings.HasSuffix(l[2], " p/worker-3 "+m.Value()) {
		t.Fatalf("%q", l)
	}
}

func TestMutexOutcomesAndLoss(t *testing.T) {
	r, lines := tapped()
	pool := &memPool{vals: map[string]string{"lock:b": "someone"}}
	rs := redsync.New(pool)
	m := r.WrapMutex(rs.NewMutex("lock:b", redsync.WithTries(1)))
	if err := m.Lock(); err == nil {
		t.Fatal("taken lock acquired")
	}
	if l := (*lines)[1]; !strings.HasSuffix(l, " timeout "+tapOwner(m.owner0)+" -") || !strings.HasPrefix(l, "lw1 wait lock:b ") {
		t.Fatalf("%q", *lines)
	}
	pool.down = true
	m.Lock()
	if l := (*lines)[3]; !strings.HasSuffix(l, " error "+tapOwner(m.owner0)+" -") {
		t.Fatalf("%q", *lines)
	}
	pool.down = false
	delete(pool.vals, "lock:b")
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	pool.vals["lock:b"] = "another" // the lease ran out and another took it
	*lines = nil
	if ok, _ := m.Extend(); ok {
		t.Fatal("extend of a lost lock")
	}
	if ok, _ := m.Unlock(); ok {
		t.Fatal("unlock of a lost lock")
	}
	l := *lines
	if len(l) != 2 || !strings.HasPrefix(l[0], "lw1 lost lock:b p/m") || !strings.HasSuffix(l[0], " renewal") ||
		!strings.HasPrefix(l[1], "lw1 hold lock:b ") {
		t.Fatalf("%q", l)
	}
}

func fastDelay(int) time.Duration { return time.Millisecond }

// A Mutex of NewRedsync sends no start when its first attempt gets the
// lock, and one start naming its holder id when attempts fail first.
func TestWatchedMutexStartsOnlyWhenAnAttemptFails(t *testing.T) {
	r, lines := tapped()
	pool := &memPool{vals: map[string]string{}}
	rs := r.NewRedsync(pool)
	m := rs.NewMutex("lock:w", redsync.WithRetryDelayFunc(fastDelay))
	ctx := WithOwner(context.Background(), "worker-1")
	lockUnlock(t, m, ctx)
	l := *lines
	if len(l) != 2 || !strings.HasPrefix(l[0], "lw1 wait lock:w ") ||
		!strings.HasSuffix(l[0], " ok p/worker-1 "+m.Value()) || !strings.HasPrefix(l[1], "lw1 hold lock:w ") {
		t.Fatalf("uncontended: %q", l)
	}
	*lines = nil
	pool.busy = 3
	if err := m.LockContext(ctx); err != nil {
		t.Fatal(err)
	}
	l = *lines
	if len(l) != 2 || l[0] != "lw1 waiting lock:w p/worker-1 "+m.Value()+" start" ||
		!strings.HasSuffix(l[1], " ok p/worker-1 "+m.Value()) {
		t.Fatalf("contended: %q", l)
	}
	m.Unlock()
	if rs.Unwrap() == nil {
		t.Fatal("no redsync")
	}
}

// Redis down: the call is an error, and nothing waited for a holder (no
// start), as in every reporter.
func TestWatchedMutexRedisDownIsAnError(t *testing.T) {
	r, lines := tapped()
	pool := &memPool{vals: map[string]string{}, down: true}
	m := r.NewRedsync(pool).NewMutex("lock:d", redsync.WithTries(2), redsync.WithRetryDelayFunc(fastDelay))
	if err := m.Lock(); err == nil {
		t.Fatal("acquired with Redis down")
	}
	l := *lines
	if len(l) != 1 || !strings.HasPrefix(l[0], "lw1 wait lock:d ") || !strings.HasSuffix(l[0], " error") {
		t.Fatalf("%q", l)
	}
}

// Every node of a quorum failing sends one start; a call that gives up
// after it ends the waiting (7-field wait); a lock wrapped with WrapMutex
// over the same pools keeps its start before every Lock.
func TestWatchedMutexAcrossNodes(t *testing.T) {
	r, lines := tapped()
	pools := []rsredis.Pool{
		&memPool{vals: map[string]string{"lock:q": "x"}},
		&memPool{vals: map[string]string{"lock:q": "x"}},
		&memPool{vals: map[string]string{"lock:q": "x"}},
	}
	rs := r.NewRedsync(pools...)
	m := rs.NewMutex("lock:q", redsync.WithTries(2), redsync.WithRetryDelayFunc(fastDelay))
	if err := m.Lock(); err == nil {
		t.Fatal("taken lock acquired")
	}
	l := *lines
	if len(l) != 2 || !strings.HasPrefix(l[0], "lw1 waiting lock:q "+tapOwner(m.owner0)+" ") || !strings.HasSuffix(l[0], " start") ||
		strings.HasSuffix(l[0], " - start") || !strings.HasSuffix(l[1], " timeout "+tapOwner(m.owner0)+" "+m.value) {
		t.Fatalf("%q", l)
	}
	*lines = nil
	plain := r.WrapMutex(rs.Unwrap().NewMutex("lock:p"))
	if err := plain.Lock(); err != nil {
		t.Fatal(err)
	}
	if l := *lines; len(l) != 2 || l[0] != "lw1 waiting lock:p "+tapOwner(plain.owner0)+" - start" {
		t.Fatalf("%q", l)
	}
}

func TestIdleReporterPassesThrough(t *testing.T) {
	r := New(Config{Samples: "off"})
	pool := &memPool{vals: map[string]string{}}
	m := r.WrapMutex(redsync.New(pool).NewMutex("lock:c"))
	if err := m.Lock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Unlock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if r.Stats().Queued != 0 {
		t.Fatal("queued")
	}
}

// joined stands for errors.Join's error (Unwrap() []error), which redsync
// v4.9 and on return from Unlock.
type joined []error

func (j joined) Error() string   { return "joined" }
func (j joined) Unwrap() []error { return j }

// The answers of an Unlock that found the key gone or another's, across
// go-redsync versions: v4.8.2's ErrTaken, and the ErrLockAlreadyExpired of
// v4.9 on (told by its text, joined and wrapped as redsync returns it); a
// Redis error is neither.
func TestRedsyncTakenAcrossVersions(t *testing.T) {
	expired := errors.New("redsync: failed to unlock, lock was already expired")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&redsync.ErrTaken{Nodes: []int{0}}, true},
		{joined{&redsync.ErrNodeTaken{Node: 0}}, true},
		{expired, true},
		{joined{expired}, true},
		{fmt.Errorf("unlock: %w", joined{errors.New("dial tcp: refused"), expired}), true},
		{errors.New("dial tcp 127.0.0.1:6379: connection refused"), false},
		{joined{errors.New("READONLY You can't write against a read only replica.")}, false},
	} {
		if got := redsyncTaken(c.err); got != c.want {
			t.Errorf("redsyncTaken(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
