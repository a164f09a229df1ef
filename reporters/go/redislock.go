// SPDX-License-Identifier: BSD-3-Clause

// bsm/redislock: Client wraps a *redislock.Client and Lock a *redislock.Lock.
// Obtain reports the wait (with waiting start when its options have a
// retry strategy, i.e. it may wait; the wait carries owner and holder, so
// it is the waiting end too, when it may wait or acquired:
// docs/line-protocol.md "Owners and holder ids"); Release reports the hold, and lost
// expired first when the lock was no longer held (ErrLockNotHeld); Refresh
// reports lost renewal when it finds the lock gone (ErrNotObtained). The
// holder id is the lock's token. The owner's party is the context's
// (WithOwner) or o<N>, numbering the Obtain calls.
package reporter

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bsm/redislock"
)

// Client is a reporting *redislock.Client.
type Client struct {
	c *redislock.Client
	r *Reporter
}

// Lock is a reporting *redislock.Lock: Key, Token, TTL and Metadata are
// redislock's own.
type Lock struct {
	*redislock.Lock
	r        *Reporter
	owner    string
	acquired time.Time

	mu    sync.Mutex // Refresh may run on another goroutine than Release
	until time.Time
	lost  bool
	done  bool
}

// WrapClient wraps c with the default reporter (Default).
func WrapClient(c *redislock.Client) *Client { return Default().WrapClient(c) }

// WrapClient wraps c with r.
func (r *Reporter) WrapClient(c *redislock.Client) *Client { return &Client{c: c, r: r} }

// Unwrap returns the redislock client.
func (c *Client) Unwrap() *redislock.Client { return c.c }

// Obtain is redislock's Obtain through the default reporter.
func Obtain(ctx context.Context, client redislock.RedisClient, key string, ttl time.Duration, opt *redislock.Options) (*Lock, error) {
	return Default().WrapClient(redislock.New(client)).Obtain(ctx, key, ttl, opt)
}

// Obtain tries to obtain the lock (redislock's Obtain), reporting the wait.
func (c *Client) Obtain(ctx context.Context, key string, ttl time.Duration, opt *redislock.Options) (*Lock, error) {
	if !c.r.active() {
		l, err := c.c.Obtain(ctx, key, ttl, opt)
		if err != nil {
			return nil, err
		}
		return &Lock{Lock: l, r: c.r}, nil
	}
	party := partyFrom(ctx, "")
	if party == "" {
		party = c.r.newParty('o')
	}
	owner := c.r.owner(party)
	mayWait := opt != nil && opt.RetryStrategy != nil
	holder := ""
	if opt != nil {
		holder = opt.Token
	}
	if mayWait {
		c.r.waiting(key, owner, holder, "start")
	}
	t0 := time.Now()
	l, err := c.c.Obtain(ctx, key, ttl, opt)
	t1 := time.Now()
	o := Error
	switch {
	case err == nil:
		o = OK
		holder = l.Token()
	case errors.Is(err, redislock.ErrNotObtained), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		// a retrying Obtain gives up with the context's error, not
		// ErrNotObtained (its context gets a deadline of ttl when it has none)
		o = Timeout
	}
	if mayWait || o == OK { // every acquire that acquired: its holder is this owner's
		c.r.waitEnd(key, micros(t1.Sub(t0)), o, owner, holder)
	} else {
		c.r.wait(key, micros(t1.Sub(t0)), o)
	}
	if err != nil {
		return nil, err
	}
	return &Lock{Lock: l, r: c.r, owner: owner, acquired: t1, until: t1.Add(ttl)}, nil
}

// Refresh extends the lock (redislock's Refresh), reporting lost renewal
// when the lock was no longer held.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration, opt *redislock.Options) error {
	err := l.Lock.Refresh(ctx, ttl, opt)
	if l.owner == "" {
		return err
	}
	now := time.Now()
	l.mu.Lock()
	if err == nil {
		l.until = now.Add(ttl)
	} else if errors.Is(err, redislock.ErrNotObtained) && !l.done {
		l.reportLost(now, lostRenewal)
	}
	l.mu.Unlock()
	return err
}

// Release releases the lock (redislock's Release), reporting the hold, and
// lost expired first when the lock was no longer held.
func (l *Lock) Release(ctx context.Context) error {
	err := l.Lock.Release(ctx)
	if l.owner == "" {
		return err
	}
	now := time.Now()
	l.mu.Lock()
	if !l.done && (err == nil || errors.Is(err, redislock.ErrLockNotHeld)) {
		if err != nil {
			l.reportLost(now, lostExpired)
		}
		l.r.hold(l.Key(), micros(now.Sub(l.acquired)), l.owner, l.Token())
		l.done = true
	}
	l.mu.Unlock()
	return err
}

// reportLost sends the holding's lost line, once; l.mu is held.
func (l *Lock) reportLost(now time.Time, reason string) {
	if l.lost {
		return
	}
	l.lost = true
	l.r.lost(l.Key(), l.owner, l.Token(), micros(now.Sub(l.acquired)), overrun(now, l.until), reason)
	l.r.sendSoon()
}
