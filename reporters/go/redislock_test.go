// SPDX-License-Identifier: BSD-3-Clause
package reporter

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// memScripter runs redislock's three scripts on a map (no Redis): EvalSha
// answers NOSCRIPT, so go-redis falls back to Eval with the script's text.
type memScripter struct {
	mu   sync.Mutex
	vals map[string]string
}

func (m *memScripter) Eval(ctx context.Context, src string, keys []string, args ...interface{}) *redis.Cmd {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, v := keys[0], args[0].(string)
	switch {
	case strings.Contains(src, `"NX"`): // obtain
		if _, taken := m.vals[k]; taken {
			return redis.NewCmdResult(nil, redis.Nil)
		}
		m.vals[k] = v
		return redis.NewCmdResult("OK", nil)
	case m.vals[k] != v: // release or refresh of a lock not ours
		return redis.NewCmdResult(int64(0), nil)
	case strings.Contains(src, `"del"`):
		delete(m.vals, k)
	}
	return redis.NewCmdResult(int64(1), nil)
}

func (m *memScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...interface{}) *redis.Cmd {
	return redis.NewCmdResult(nil, noScript{})
}

// noScript is Redis' NOSCRIPT reply (a redis.Error, as go-redis checks).
type noScript struct{}

func (noScript) Error() string { return "NOSCRIPT No matching script" }
func (noScript) RedisError()   {}
func (m *memScripter) EvalRO(ctx context.Context, src string, keys []string, args ...interface{}) *redis.Cmd {
	return m.Eval(ctx, src, keys, args...)
}
func (m *memScripter) EvalShaRO(ctx context.Context, sha string, keys []string, args ...interface{}) *redis.Cmd {
	return m.EvalSha(ctx, sha, keys, args...)
}
func (m *memScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceResult(make([]bool, len(hashes)), nil)
}
func (m *memScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return redis.NewStringResult("", nil)
}

func TestRedislockObtainReleaseAndLoss(t *testing.T) {
	r, lines := tapped()
	mem := &memScripter{vals: map[string]string{}}
	c := r.WrapClient(redislock.New(mem))
	ctx := WithOwner(context.Background(), "job-1")
	l, err := c.Obtain(ctx, "lock:r", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := *lines
	// an Obtain that acquired says whose the holder id is, though it did not wait
	if len(got) != 2 || got[0] != "lw1 wait lock:r "+strings.Fields(got[0])[3]+" ok p/job-1 "+l.Token() ||
		got[1] != "lw1 hold lock:r "+strings.Fields(got[1])[3]+" p/job-1 "+l.Token() {
		t.Fatalf("%q", got)
	}

	// taken: no retry is a timeout; a retrying one gives up with the
	// context's deadline, a timeout too (with waiting lines)
	mem.vals["lock:r"] = "another"
	*lines = nil
	if _, err := c.Obtain(ctx, "lock:r", time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := c.Obtain(dctx, "lock:r", time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(5 * time.Millisecond)}); err == nil {
		t.Fatal("obtained a taken lock")
	}
	got = *lines
	// the first gave up at once: a 5-field wait, no waiting end
	if len(got) != 3 || got[0] != "lw1 wait lock:r "+strings.Fields(got[0])[3]+" timeout" ||
		got[1] != "lw1 waiting lock:r p/job-1 - start" ||
		got[2] != "lw1 wait lock:r "+strings.Fields(got[2])[3]+" timeout p/job-1 -" {
		t.Fatalf("%q", got)
	}

	// lost: the lease ran out and another took the key
	delete(mem.vals, "lock:r")
	l, err = c.Obtain(context.Background(), "lock:r", 20*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond)
	mem.vals["lock:r"] = "another"
	*lines = nil
	if err := l.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatal(err)
	}
	if err := l.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatal(err)
	}
	got = *lines
	if len(got) != 2 || !strings.HasPrefix(got[0], "lw1 lost lock:r p/o") || !strings.HasSuffix(got[0], " renewal") ||
		!strings.HasPrefix(got[1], "lw1 hold lock:r ") {
		t.Fatalf("%q", got)
	}
	if f := strings.Fields(got[0]); f[6] == "0" || f[6] == "-" {
		t.Fatalf("overrun %q: the loss was found after the lease's end", f[6])
	}
}
