// SPDX-License-Identifier: BSD-3-Clause

// The Go reporter's interop program: drives the real go-redsync and
// bsm/redislock through lockwatch.io/reporter against a real redis-server,
// one mode per acceptance check of tests/interop/reporters/go/test (which
// starts Redis and lockwatchd and reads the agent's /metrics), and the
// overhead bench of bench/reporters/run. It prints one JSON object.
//
//	contend -secs S   8 goroutines on 4 locks (2 redsync, 2 redislock)
//	down    -n N      bare vs wrapped acquire+release, reporter from the env
//	lost              a lease that runs out: redsync Extend, redislock Release
//	burst   -n N -key K   N uncontended acquires of K (signed-key check)
//	bench   -n N -rounds R   interleaved bare/wrapped rounds: per-call medians
//	                 and the median of the round pairs' ratios
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

	"lockwatch.io/reporter"
)

var (
	mode   = flag.String("mode", "contend", "contend, down, lost, burst or bench")
	addr   = flag.String("redis", "127.0.0.1:6379", "redis-server address")
	secs   = flag.Float64("secs", 12, "contend: seconds")
	n      = flag.Int("n", 300, "down/burst/bench: operations per round")
	rounds = flag.Int("rounds", 40, "bench: rounds of each kind")
	key    = flag.String("key", "rep:go:burst", "burst: the key")
)

// waits collects the waits the reporter reported, per key, from its tap.
type waits struct {
	mu            sync.Mutex
	us            map[string][]int64
	out           map[string]int
	lost, waiting int
	starts        int    // waiting ... start lines
	startHolder   string // the last one's holder id
}

func (w *waits) tap(line string) {
	f := strings.Split(line, " ")
	w.mu.Lock()
	defer w.mu.Unlock()
	switch f[1] {
	case "wait":
		v, _ := strconv.ParseInt(f[3], 10, 64)
		w.us[f[2]] = append(w.us[f[2]], v)
		w.out[f[4]]++
		if len(f) == 7 { // with owner and holder: the waiting end too
			w.waiting++
		}
	case "lost":
		w.lost++
	case "waiting":
		w.waiting++
		if len(f) == 6 && f[5] == "start" {
			w.starts++
			w.startHolder = f[4]
		}
	}
}

func p99(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(math.Ceil(0.99*float64(len(s))))-1]
}

func p99f(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[int(math.Ceil(0.99*float64(len(s))))-1]
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func emit(v interface{}) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "reporter-go-check:", err)
	os.Exit(1)
}

func main() {
	flag.Parse()
	client := goredislib.NewClient(&goredislib.Options{Addr: *addr, PoolSize: 32})
	defer client.Close()
	if err := client.Ping(context.Background()).Err(); err != nil {
		fail(err)
	}
	rs := redsync.New(goredis.NewPool(client))
	switch *mode {
	case "contend":
		contend(client, rs)
	case "down":
		down(client, rs)
	case "lost":
		lost(client, rs)
	case "burst":
		burst(rs)
	case "bench":
		bench(client, rs)
	default:
		fail(fmt.Errorf("unknown mode %q", *mode))
	}
}

func fastRetry(int) time.Duration { return time.Duration(500+rand.Intn(1500)) * time.Microsecond }

func contend(client *goredislib.Client, rs *redsync.Redsync) {
	w := &waits{us: map[string][]int64{}, out: map[string]int{}}
	c := reporter.FromEnv()
	c.Tap = w.tap
	rep := reporter.New(c)
	lc := rep.WrapClient(redislock.New(client))
	wrs := rep.NewRedsync(goredis.NewPool(client)) // its mutexes send a start when an attempt fails
	keys := []string{"rep:go:redsync:alpha", "rep:go:redsync:beta", "rep:go:redislock:alpha", "rep:go:redislock:beta"}
	var mu sync.Mutex
	made := map[string]int{}
	measured := map[string][]int64{}
	failures := 0
	end := time.Now().Add(time.Duration(*secs * float64(time.Second)))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		k := keys[g%4]
		wg.Add(1)
		go func(g int, k string) {
			defer wg.Done()
			ctx := reporter.WithOwner(context.Background(), "worker-"+strconv.Itoa(g))
			var m *reporter.Mutex
			if strings.Contains(k, "redsync") {
				m = wrs.NewMutex(k, redsync.WithExpiry(8*time.Second), redsync.WithTries(100000),
					redsync.WithRetryDelayFunc(fastRetry))
			}
			var mine []int64
			count := 0
			for time.Now().Before(end) {
				t0 := time.Now()
				var err error
				var l *reporter.Lock
				if m != nil {
					err = m.LockContext(ctx)
				} else {
					octx, cancel := context.WithTimeout(ctx, 10*time.Second)
					l, err = lc.Obtain(octx, k, 8*time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)})
					cancel()
				}
				mine = append(mine, int64(time.Since(t0)/time.Microsecond))
				count++
				if err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
					continue
				}
				time.Sleep(time.Duration(200+rand.Intn(1800)) * time.Microsecond)
				if m != nil {
					_, err = m.UnlockContext(ctx)
				} else {
					err = l.Release(ctx)
				}
				if err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}
			mu.Lock()
			made[k] += count
			measured[k] = append(measured[k], mine...)
			mu.Unlock()
		}(g, k)
	}
	wg.Wait()
	flushed := rep.Flush(5 * time.Second)
	rep.Close()
	type perKey struct {
		Acquires    int   `json:"acquires"`
		Reported    int   `json:"reported"`
		ReportedP99 int64 `json:"reported_p99_us"`
		MeasuredP99 int64 `json:"measured_p99_us"`
	}
	out := map[string]perKey{}
	for _, k := range keys {
		out[k] = perKey{made[k], len(w.us[k]), p99(w.us[k]), p99(measured[k])}
	}
	st := rep.Stats()
	emit(map[string]interface{}{"keys": out, "failures": failures, "flushed": flushed, "stats": st,
		"outcomes": w.out, "waiting": w.waiting, "starts": w.starts})
}

// timed runs one acquire+release and returns its duration and error.
func timedMutex(m interface {
	Lock() error
	Unlock() (bool, error)
}) (time.Duration, error) {
	t0 := time.Now()
	if err := m.Lock(); err != nil {
		return time.Since(t0), err
	}
	if ok, err := m.Unlock(); !ok {
		if err == nil {
			err = fmt.Errorf("unlock refused")
		}
		return time.Since(t0), err
	}
	return time.Since(t0), nil
}

func down(client *goredislib.Client, rs *redsync.Redsync) {
	t0 := time.Now()
	rep := reporter.Default() // from the environment, as an application would
	made := time.Since(t0)
	bare := rs.NewMutex("rep:go:down:bare", redsync.WithTries(1))
	wrapped := rep.WrapMutex(rs.NewMutex("rep:go:down:wrapped", redsync.WithTries(1)))
	lc := rep.WrapClient(redislock.New(client))
	plain := redislock.New(client)
	var tb, tw []float64
	errsBare, errsWrapped := 0, 0
	ctx := context.Background()
	for i := 0; i < *n; i++ {
		d, err := timedMutex(bare)
		tb = append(tb, float64(d)/1e3)
		if err != nil {
			errsBare++
		}
		d, err = timedMutex(wrapped)
		tw = append(tw, float64(d)/1e3)
		if err != nil {
			errsWrapped++
		}
		s := time.Now()
		if l, err := plain.Obtain(ctx, "rep:go:down:plain", time.Second, nil); err != nil || l.Release(ctx) != nil {
			errsBare++
		}
		tb = append(tb, float64(time.Since(s))/1e3)
		s = time.Now()
		if l, err := lc.Obtain(ctx, "rep:go:down:lc", time.Second, nil); err != nil || l.Release(ctx) != nil {
			errsWrapped++
		}
		tw = append(tw, float64(time.Since(s))/1e3)
	}
	max := func(v []float64) float64 {
		m := 0.0
		for _, x := range v {
			m = math.Max(m, x)
		}
		return m
	}
	emit(map[string]interface{}{"ops": len(tb), "errors_bare": errsBare, "errors_wrapped": errsWrapped,
		"median_bare_us": median(tb), "median_wrapped_us": median(tw), "p99_bare_us": p99f(tb),
		"p99_wrapped_us": p99f(tw), "max_bare_us": max(tb),
		"max_wrapped_us": max(tw), "enabled": rep.Enabled(), "start_us": float64(made) / 1e3, "stats": rep.Stats()})
}

func lost(client *goredislib.Client, rs *redsync.Redsync) {
	w := &waits{us: map[string][]int64{}, out: map[string]int{}}
	c := reporter.FromEnv()
	c.Tap = w.tap
	rep := reporter.New(c)
	ctx := context.Background()
	res := map[string]interface{}{}

	// redsync: a 300 ms lease that nobody extends runs out; another takes
	// the lock; the first one's Extend finds it gone (lost renewal), its
	// Unlock finds it another's (the hold; the loss was sent once)
	first := rep.WrapMutex(rs.NewMutex("rep:go:lost:redsync", redsync.WithExpiry(300*time.Millisecond), redsync.WithTries(1)))
	if err := first.LockContext(reporter.WithOwner(ctx, "first")); err != nil {
		fail(err)
	}
	time.Sleep(600 * time.Millisecond)
	other := rep.WrapMutex(rs.NewMutex("rep:go:lost:redsync", redsync.WithExpiry(5*time.Second), redsync.WithTries(1)))
	res["other_took_redsync"] = other.LockContext(reporter.WithOwner(ctx, "other")) == nil
	ok, err := first.Extend()
	res["extend_ok"], res["extend_err"] = ok, fmt.Sprint(err)
	ok, err = first.Unlock()
	res["unlock_ok"], res["unlock_err"] = ok, fmt.Sprint(err)
	other.Unlock()

	// redislock: the same with Release (lost expired)
	lc := rep.WrapClient(redislock.New(client))
	l, err := lc.Obtain(reporter.WithOwner(ctx, "first"), "rep:go:lost:redislock", 300*time.Millisecond, nil)
	if err != nil {
		fail(err)
	}
	time.Sleep(600 * time.Millisecond)
	l2, err := lc.Obtain(reporter.WithOwner(ctx, "other"), "rep:go:lost:redislock", 5*time.Second, nil)
	res["other_took_redislock"] = err == nil
	res["release_err"] = fmt.Sprint(l.Release(ctx))
	if l2 != nil {
		l2.Release(ctx)
	}
	// a Mutex of NewRedsync: no start when its first attempt gets the lock;
	// one, naming the attempt's value, when the lock is taken and it waits
	wrs := rep.NewRedsync(goredis.NewPool(client))
	free := wrs.NewMutex("rep:go:watched", redsync.WithTries(1))
	starts := w.starts
	if err := free.Lock(); err != nil {
		fail(err)
	}
	free.Unlock()
	res["watched_free_starts"] = w.starts - starts
	held := rs.NewMutex("rep:go:watched")
	if err := held.Lock(); err != nil {
		fail(err)
	}
	busy := wrs.NewMutex("rep:go:watched", redsync.WithTries(1000), redsync.WithRetryDelayFunc(fastRetry))
	go func() { time.Sleep(50 * time.Millisecond); held.Unlock() }()
	if err := busy.Lock(); err != nil {
		fail(err)
	}
	busy.Unlock()
	res["watched_busy_starts"] = w.starts - starts
	res["watched_start_names_value"] = w.startHolder == busy.Value()
	res["expect"] = map[string]interface{}{"watched_free_starts": 0, "watched_busy_starts": 1,
		"watched_start_names_value": true}

	rep.Flush(5 * time.Second)
	rep.Close()
	res["lost_lines"] = w.lost
	res["waiting_lines"] = w.waiting
	res["stats"] = rep.Stats()
	emit(res)
}

func burst(rs *redsync.Redsync) {
	rep := reporter.Default()
	m := rep.WrapMutex(rs.NewMutex(*key, redsync.WithTries(1)))
	errs := 0
	for i := 0; i < *n; i++ {
		if _, err := timedMutex(m); err != nil {
			errs++
		}
	}
	rep.Flush(5 * time.Second)
	rep.Close()
	emit(map[string]interface{}{"acquires": *n, "errors": errs, "stats": rep.Stats()})
}

func bench(client *goredislib.Client, rs *redsync.Redsync) {
	rep := reporter.Default()
	ctx := context.Background()
	bare := rs.NewMutex("rep:go:bench:bare", redsync.WithTries(1))
	wrapped := rep.NewRedsync(goredis.NewPool(client)).NewMutex("rep:go:bench:wrapped", redsync.WithTries(1))
	plain := redislock.New(client)
	lc := rep.WrapClient(plain)
	round := func(f func() error) float64 {
		t0 := time.Now()
		for i := 0; i < *n; i++ {
			if err := f(); err != nil {
				fail(err)
			}
		}
		return float64(time.Since(t0)) / 1e3 / float64(*n)
	}
	mutexOp := func(m interface {
		Lock() error
		Unlock() (bool, error)
	}) func() error {
		return func() error { _, err := timedMutex(m); return err }
	}
	// rounds alternate which kind goes first, and the ratio is the median
	// of each round pair's ratio: the machine's drift (other processes on
	// the same cores) cancels within a pair
	var rb, rw, lb, lw, rr, lr []float64
	pair := func(r int, bare, wrapped func() error, b, w, ratio *[]float64) {
		var tb, tw float64
		if r%2 == 0 {
			tb, tw = round(bare), round(wrapped)
		} else {
			tw, tb = round(wrapped), round(bare)
		}
		*b, *w, *ratio = append(*b, tb), append(*w, tw), append(*ratio, tw/tb)
	}
	for r := 0; r < *rounds; r++ {
		pair(r, mutexOp(bare), mutexOp(wrapped), &rb, &rw, &rr)
		pair(r, func() error {
			l, err := plain.Obtain(ctx, "rep:go:bench:plain", time.Second, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}, func() error {
			l, err := lc.Obtain(ctx, "rep:go:bench:lc", time.Second, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}, &lb, &lw, &lr)
	}
	rep.Flush(5 * time.Second)
	emit(map[string]interface{}{
		"redsync":       map[string]float64{"bare_us": median(rb), "wrapped_us": median(rw), "ratio": median(rr)},
		"redislock":     map[string]float64{"bare_us": median(lb), "wrapped_us": median(lw), "ratio": median(lr)},
		"ops_per_round": float64(*n), "rounds": float64(*rounds), "enabled": boolf(rep.Enabled()), "stats": rep.Stats(),
	})
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
