// SPDX-License-Identifier: BSD-3-Clause

// Command interop-redsync drives go-redsync's Mutex with the scenario
// protocol of tests/interop/README.md.  argv: one or more redis://127.0.0.1:PORT
// (several: a multi-node redsync).  Kind: redsync.  Ops: lock [lease=ms]
// (blocking, retries every 50 ms), trylock, unlock, extend.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

var outMu sync.Mutex

func emit(actor, op, kind, name string, ok bool, info string) {
	b, _ := json.Marshal(map[string]any{"t": time.Now().UnixMilli(), "actor": actor, "op": op,
		"kind": kind, "name": name, "ok": ok, "info": info})
	outMu.Lock()
	os.Stdout.Write(append(b, '\n'))
	outMu.Unlock()
}

type client struct {
	rs   *redsync.Redsync
	mu   sync.Mutex
	held map[string]*redsync.Mutex
}

func (c *client) run(actor, op, kind, name string, opt map[string]string) (string, error) {
	if kind != "redsync" {
		return "", fmt.Errorf("unknown kind %s", kind)
	}
	id := actor + "/" + name
	lease := 30000
	if v, ok := opt["lease"]; ok {
		lease, _ = strconv.Atoi(v)
	}
	switch op {
	case "lock", "trylock":
		tries := 1
		if op == "lock" {
			tries = 1 << 20
		}
		m := c.rs.NewMutex(name, redsync.WithExpiry(time.Duration(lease)*time.Millisecond),
			redsync.WithTries(tries))
		if err := m.LockContext(context.Background()); err != nil {
			return "", err
		}
		c.mu.Lock()
		c.held[id] = m
		c.mu.Unlock()
		return "value=" + m.Value(), nil
	case "unlock", "extend":
		c.mu.Lock()
		m := c.held[id]
		if op == "unlock" {
			delete(c.held, id)
		}
		c.mu.Unlock()
		if m == nil {
			return "", fmt.Errorf("not held by this actor")
		}
		var ok bool
		var err error
		if op == "unlock" {
			ok, err = m.Unlock()
		} else {
			ok, err = m.Extend()
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("ok=%v", ok), nil
	}
	return "", fmt.Errorf("unknown op %s", op)
}

func main() {
	var pools []redis.Pool
	for _, u := range os.Args[1:] {
		o, err := goredislib.ParseURL(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		pools = append(pools, goredis.NewPool(goredislib.NewClient(o)))
	}
	c := &client{rs: redsync.New(pools...), held: map[string]*redsync.Mutex{}}
	emit("-", "ready", "-", "-", true, "redsync v4 (go.mod pins the version)")
	actors := map[string]chan []string{}
	var wg sync.WaitGroup
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line == "quit" {
			break
		}
		w := strings.Fields(line)
		if len(w) < 4 {
			emit("-", "error", "-", "-", false, "want ACTOR OP KIND NAME: "+line)
			continue
		}
		ch, ok := actors[w[0]]
		if !ok {
			ch = make(chan []string, 64)
			actors[w[0]] = ch
			wg.Add(1)
			go func(actor string, ch chan []string) {
				defer wg.Done()
				for w := range ch {
					opt := map[string]string{}
					for _, x := range w[4:] {
						if k, v, ok := strings.Cut(x, "="); ok {
							opt[k] = v
						}
					}
					info, err := c.run(actor, w[1], w[2], w[3], opt)
					if err != nil {
						emit(actor, w[1], w[2], w[3], false, err.Error())
					} else {
						emit(actor, w[1], w[2], w[3], true, info)
					}
				}
			}(w[0], ch)
		}
		ch <- w
	}
	for _, ch := range actors {
		close(ch)
	}
	wg.Wait()
}
