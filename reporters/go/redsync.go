// SPDX-License-Identifier: BSD-3-Clause

// go-redsync: Mutex wraps a *redsync.Mutex and reports its calls. Lock and
// LockContext may wait (redsync retries): they send waiting start, then the
// waiting end and the wait as one line (the 7-field wait). A Mutex made by
// a Redsync of this package (NewRedsync: redsync.New over watched pools)
// sends the start only when an attempt found the lock taken or failed, as
// liblockwatch does, and names its holder id (the attempt's value); one
// wrapped with WrapMutex sends it before every Lock, with holder "-"
// (redsync makes the value inside Lock). An acquire that neither acquired
// nor sent a start sends the 5-field wait. Unlock sends the hold; an Unlock
// that finds the key gone or another's (ErrTaken) sends lost expired
// first, and an Extend that fails (ErrTaken, or ErrExtendFailed: it came
// back after the lease's end) sends lost renewal. Like redsync's own
// Mutex, a wrapped Mutex is used by one goroutine at a time.
package reporter

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
)

// Mutex is a reporting *redsync.Mutex.
type Mutex struct {
	m      *redsync.Mutex
	r      *Reporter
	owner0 string // the owner id when the context names no party (made once)

	// made by a Redsync of this package: its pools tell a failed attempt
	// (the LockContext call in flight: its owner, whether it sent a start)
	watched bool
	calling string
	started atomic.Bool
	value   string // the value of the attempt that sent the start

	// the current holding
	held     bool
	lost     bool
	acquired time.Time
	owner    string
	holder   string
}

// WrapMutex wraps m with the default reporter (Default).
func WrapMutex(m *redsync.Mutex) *Mutex { return Default().WrapMutex(m) }

// WrapMutex wraps m with r. The mutex's owner id is <process>/m<N>, N
// numbering the wrapped mutexes, unless the context of a call names the
// party (WithOwner).
func (r *Reporter) WrapMutex(m *redsync.Mutex) *Mutex {
	return &Mutex{m: m, r: r, owner0: r.owner(r.newParty('m'))}
}

// Unwrap returns the redsync mutex.
func (m *Mutex) Unwrap() *redsync.Mutex { return m.m }

// Name returns the mutex's name (its Redis key).
func (m *Mutex) Name() string { return m.m.Name() }

// Value returns the mutex's current value (its holder id in Redis).
func (m *Mutex) Value() string { return m.m.Value() }

// Until returns the end of the lock's validity.
func (m *Mutex) Until() time.Time { return m.m.Until() }

// Lock locks m (redsync's Lock), reporting the wait.
func (m *Mutex) Lock() error { return m.LockContext(nil) }

// LockContext locks m (redsync's LockContext), reporting the wait.
func (m *Mutex) LockContext(ctx context.Context) error {
	if !m.r.active() {
		return m.m.LockContext(ctx)
	}
	key := m.m.Name()
	owner := m.owner0
	if p := partyFrom(ctx, ""); p != "" {
		owner = m.r.owner(p)
	}
	lctx := ctx
	if m.watched {
		if lctx == nil {
			lctx = context.Background()
		}
		m.calling = owner
		m.started.Store(false)
		lctx = context.WithValue(lctx, attemptKey{}, m)
	} else {
		m.r.waiting(key, owner, "", "start")
	}
	t0 := time.Now()
	err := m.m.LockContext(lctx)
	t1 := time.Now()
	o := redsyncOutcome(err)
	holder := ""
	if o == OK {
		holder = m.m.Value()
		m.held, m.lost, m.acquired, m.owner, m.holder = true, false, t1, owner, holder
	}
	if o == OK || !m.watched || m.started.Load() {
		if o != OK && m.watched {
			holder = m.value // the start's: a waiting end names the holder id its start did
		}
		m.r.waitEnd(key, micros(t1.Sub(t0)), o, owner, holder)
	} else {
		m.r.wait(key, micros(t1.Sub(t0)), o)
	}
	return err
}

// attemptFailed: an attempt of the LockContext call in flight (value, its
// holder id) did not get the lock on one node: the call will wait (or give
// up), so its waiting start goes out, once. Called from redsync's
// goroutines, one per node, while LockContext waits for them.
func (m *Mutex) attemptFailed(value string) {
	if m.started.Swap(true) {
		return
	}
	m.value = value
	m.r.waiting(m.m.Name(), m.calling, value, "start")
}

// Redsync is a reporting *redsync.Redsync: redsync.New over pools that tell
// its Mutexes' LockContext calls when an attempt failed.
type Redsync struct {
	rs *redsync.Redsync
	r  *Reporter
}

// NewRedsync is redsync.New over watched pools, with the default reporter.
func NewRedsync(pools ...rsredis.Pool) *Redsync { return Default().NewRedsync(pools...) }

// NewRedsync is redsync.New over watched pools, reporting to r.
func (r *Reporter) NewRedsync(pools ...rsredis.Pool) *Redsync {
	w := make([]rsredis.Pool, len(pools))
	for i, p := range pools {
		w[i] = watchedPool{p}
	}
	return &Redsync{rs: redsync.New(w...), r: r}
}

// NewMutex is redsync's NewMutex, wrapped: its waiting start goes out when
// an attempt fails, not before every Lock.
func (s *Redsync) NewMutex(name string, options ...redsync.Option) *Mutex {
	m := s.r.WrapMutex(s.rs.NewMutex(name, options...))
	m.watched = true
	return m
}

// Unwrap returns the redsync instance (its pools watched: a Mutex it makes
// and WrapMutex wraps sends its start before every Lock).
func (s *Redsync) Unwrap() *redsync.Redsync { return s.rs }

// attemptKey: the context value naming the LockContext call in flight.
type attemptKey struct{}

// watchedPool hands out, under a LockContext call of a watched Mutex,
// connections that tell it when SET NX found the key taken (a node that
// fails, Redis down, is no holder to wait for: no start); every other use
// gets the pool's own connection.
type watchedPool struct{ p rsredis.Pool }

func (w watchedPool) Get(ctx context.Context) (rsredis.Conn, error) {
	c, err := w.p.Get(ctx)
	if err != nil || ctx == nil {
		return c, err
	}
	if m, ok := ctx.Value(attemptKey{}).(*Mutex); ok {
		return watchedConn{c, m}, nil
	}
	return c, nil
}

type watchedConn struct {
	rsredis.Conn
	m *Mutex
}

func (c watchedConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	ok, err := c.Conn.SetNX(name, value, expiry)
	if !ok && err == nil {
		c.m.attemptFailed(value)
	}
	return ok, err
}

// Unlock unlocks m (redsync's Unlock), reporting the hold.
func (m *Mutex) Unlock() (bool, error) { return m.UnlockContext(nil) }

// UnlockContext unlocks m (redsync's UnlockContext), reporting the hold, and
// the loss when the key was no longer ours.
func (m *Mutex) UnlockContext(ctx context.Context) (bool, error) {
	ok, err := m.m.UnlockContext(ctx)
	if !m.held || !m.r.active() {
		return ok, err
	}
	now := time.Now()
	taken := !ok && redsyncTaken(err)
	if taken {
		m.reportLost(now, lostExpired)
	}
	if ok || taken { // a Redis error leaves the holding open: the caller may retry
		m.r.hold(m.m.Name(), micros(now.Sub(m.acquired)), m.owner, m.holder)
		m.held = false
	}
	return ok, err
}

// Extend extends the lock's lease (redsync's Extend).
func (m *Mutex) Extend() (bool, error) { return m.ExtendContext(nil) }

// ExtendContext extends the lock's lease (redsync's ExtendContext),
// reporting lost renewal when the extension finds the lock no longer ours.
func (m *Mutex) ExtendContext(ctx context.Context) (bool, error) {
	ok, err := m.m.ExtendContext(ctx)
	if !ok && m.held && m.r.active() && (errors.Is(err, redsync.ErrExtendFailed) || redsyncTaken(err)) {
		m.reportLost(time.Now(), lostRenewal)
	}
	return ok, err
}

// reportLost sends the holding's lost line, once.
func (m *Mutex) reportLost(now time.Time, reason string) {
	if m.lost {
		return
	}
	m.lost = true
	m.r.lost(m.m.Name(), m.owner, m.holder, micros(now.Sub(m.acquired)), overrun(now, m.m.Until()), reason)
	m.r.sendSoon()
}

// redsyncOutcome: ErrFailed (tries exhausted, context done) and ErrTaken
// mean the lock was someone else's; anything else is an error.
func redsyncOutcome(err error) Outcome {
	if err == nil {
		return OK
	}
	if errors.Is(err, redsync.ErrFailed) || redsyncTaken(err) {
		return Timeout
	}
	return Error
}

// redsyncTaken: the nodes answered that the key is not ours (gone or
// another's), as opposed to a Redis error. go-redsync v4.8.2 says ErrTaken
// for both; later versions (v4.9 on) say ErrLockAlreadyExpired when the key
// is gone, a sentinel v4.8.2 lacks, so it is told by its text (errExpired),
// and this module builds against either.
func redsyncTaken(err error) bool {
	var t *redsync.ErrTaken
	var nt *redsync.ErrNodeTaken
	return err == nil || errors.As(err, &t) || errors.As(err, &nt) ||
		anyError(err, func(e error) bool { return e.Error() == errExpired })
}

// errExpired is the text of go-redsync's ErrLockAlreadyExpired (v4.9 and on).
const errExpired = "redsync: failed to unlock, lock was already expired"

// anyError reports whether f holds for err or an error it wraps, through
// Unwrap() error and Unwrap() []error (errors.Join, which redsync uses to
// gather its nodes' answers).
func anyError(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return anyError(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if anyError(e, f) {
				return true
			}
		}
	}
	return false
}

func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// overrun: how long after the lease's end the loss was found; 0 when
// before; -1 ("-") when the end is not known.
func overrun(now, until time.Time) int64 {
	if until.IsZero() {
		return -1
	}
	if now.Before(until) {
		return 0
	}
	return micros(now.Sub(until))
}
