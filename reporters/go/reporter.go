// SPDX-License-Identifier: BSD-3-Clause

// The Reporter: a bounded queue of lines (a buffered channel; a full one
// drops the line and counts it, the caller never waits) drained by one
// goroutine that packs lines into datagrams of at most 1432 bytes (8192
// when every destination is a loopback address: fewer sends, each of which
// wakes the agent), signs
// them when a key is set, and sends each to every destination when the next
// line would not fit or every 200 ms. The lock path wakes it only when the
// queue holds a few datagrams' worth of lines (wakeAt). A failed send
// drops the datagram and
// counts it; nothing is retried. The goroutine never keeps a program alive
// (Go exits when main returns); Close flushes what is queued.
package reporter

import (
	"log"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// MaxDatagram is the largest datagram sent, mac line included.
	MaxDatagram = 1432
	// LoopbackDatagram is the largest datagram sent when every destination
	// is a loopback address: the most the agent reads of one
	// (docs/line-protocol.md "Datagrams"); loopback has no 1500-byte MTU.
	LoopbackDatagram = 8192
	// FlushEvery is how often a partial datagram is sent.
	FlushEvery   = 200 * time.Millisecond
	defaultQueue = 8192
	sendTimeout  = 50 * time.Millisecond
	// wakeAt: the queue length at which the lock path wakes the sending
	// goroutine (a few datagrams' worth, far below the queue's 8192).
	// Waking it for every line would cost a goroutine switch per lock
	// call, most of the reporter's price on a busy machine (bench/reporters:
	// 256 measured a few percent cheaper than 32); below this the 200 ms
	// tick sends.
	wakeAt = 256
)

// Stats are the reporter's counters, all since it was made.
type Stats struct {
	Queued      uint64 // lines put in the queue
	Sent        uint64 // lines sent in a datagram (to at least one destination)
	Datagrams   uint64 // datagrams sent (one per destination)
	DroppedFull uint64 // lines dropped because the queue was full
	DroppedSend uint64 // lines dropped because no destination took their datagram
}

// Reporter sends samples. The zero value is not usable: use New or Default.
// All methods are safe for concurrent use; a nil or disabled Reporter
// accepts every call and does nothing.
type Reporter struct {
	process string
	tap     func(string)
	queue   chan string
	wake    chan struct{}
	soon    chan struct{} // sendSoon: the partial datagram goes now
	conn    *net.UDPConn
	dests   []*net.UDPAddr
	key     []byte
	enabled bool
	closed  uint32 // set by Close: emit stops queueing
	nextID  uint64

	queued, sent, datagrams, droppedFull, droppedSend uint64

	closeOnce sync.Once
	done      chan struct{}
	stopped   chan struct{}
}

var (
	defaultOnce sync.Once
	defaultRep  *Reporter
)

// Default returns the process's reporter, made from the environment on
// first use (FromEnv).
func Default() *Reporter {
	defaultOnce.Do(func() { defaultRep = New(FromEnv()) })
	return defaultRep
}

// New makes a reporter and starts its sending goroutine. A configuration
// that cannot work (no destination resolves, an unreadable key file) gives
// a disabled reporter and one line in the standard logger: the
// application's start and its lock calls never fail because of reporting.
func New(c Config) *Reporter {
	r := &Reporter{tap: c.Tap, done: make(chan struct{}), stopped: make(chan struct{})}
	var err error
	if r.process, err = processName(c.Owner); err != nil {
		log.Printf("lockwatch: %v; reporting off", err)
		r.process = "-"
		close(r.stopped)
		return r
	}
	dests, errs := parseDests(c.Samples)
	for _, e := range errs {
		log.Print(e)
	}
	if c.KeyFile != "" {
		if r.key, err = readKey(c.KeyFile); err != nil {
			log.Printf("lockwatch: LOCKWATCH_KEY_FILE: %v; reporting off", err)
			dests = nil
		}
	}
	if len(dests) > 0 {
		if r.conn, err = net.ListenUDP("udp", nil); err != nil {
			log.Printf("lockwatch: UDP socket: %v; reporting off", err)
			dests = nil
		}
	}
	r.dests = dests
	if len(dests) == 0 {
		close(r.stopped)
		return r
	}
	n := c.QueueLen
	if n <= 0 {
		n = defaultQueue
	}
	r.queue = make(chan string, n)
	r.wake = make(chan struct{}, 1)
	r.soon = make(chan struct{}, 1)
	r.enabled = true
	go r.run()
	return r
}

// active tells whether a lock call has anything to report to: the wrappers
// skip formatting entirely otherwise.
func (r *Reporter) active() bool { return r != nil && (r.enabled || r.tap != nil) }

// Enabled tells whether the reporter sends anything.
func (r *Reporter) Enabled() bool { return r != nil && r.enabled }

// Stats returns the counters.
func (r *Reporter) Stats() Stats {
	if r == nil {
		return Stats{}
	}
	return Stats{
		Queued:      atomic.LoadUint64(&r.queued),
		Sent:        atomic.LoadUint64(&r.sent),
		Datagrams:   atomic.LoadUint64(&r.datagrams),
		DroppedFull: atomic.LoadUint64(&r.droppedFull),
		DroppedSend: atomic.LoadUint64(&r.droppedSend),
	}
}

// owner builds <process>/<party>.
func (r *Reporter) owner(party string) string {
	return r.process + "/" + party
}

// newParty numbers a lock or holding that has no party from its context.
func (r *Reporter) newParty(prefix byte) string {
	id := atomic.AddUint64(&r.nextID, 1)
	return string(prefix) + strconv.FormatUint(id, 10)
}

// emit queues one line without waiting.
func (r *Reporter) emit(line string) {
	if r.tap != nil {
		r.tap(line)
	}
	if !r.enabled || atomic.LoadUint32(&r.closed) != 0 {
		return
	}
	select {
	case r.queue <- line:
		atomic.AddUint64(&r.queued, 1)
		if len(r.queue) >= wakeAt {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	default:
		atomic.AddUint64(&r.droppedFull, 1)
	}
}

// sendSoon has what is queued sent now rather than at the next tick: after a
// lost line, whose arrival the agent times a lease overrun by.
func (r *Reporter) sendSoon() {
	if !r.Enabled() || r.soon == nil {
		return
	}
	select {
	case r.soon <- struct{}{}:
	default:
	}
}

// Close sends what is queued (best effort) and stops the goroutine. Lines
// emitted after Close are dropped and counted.
func (r *Reporter) Close() {
	if r == nil || !r.enabled {
		return
	}
	r.closeOnce.Do(func() {
		atomic.StoreUint32(&r.closed, 1)
		close(r.done)
	})
	<-r.stopped
}

// Flush waits until every line queued so far has been sent (tests).
func (r *Reporter) Flush(timeout time.Duration) bool {
	if !r.Enabled() {
		return true
	}
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		s := r.Stats()
		if len(r.queue) == 0 && s.Sent+s.DroppedSend >= s.Queued {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (r *Reporter) run() {
	defer close(r.stopped)
	size := datagramSize(r.dests)
	room := size
	if r.key != nil {
		room -= macLineLen
	}
	buf := make([]byte, 0, size)
	lines := 0
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	flush := func() {
		if lines > 0 {
			r.send(buf, lines)
		}
		buf, lines = buf[:0], 0
	}
	add := func(l string) {
		if lines > 0 && len(buf)+len(l)+1 > room {
			flush()
		}
		buf = append(buf, l...)
		buf = append(buf, '\n')
		lines++
		if len(buf) >= room { // a line longer than a datagram goes alone
			flush()
		}
	}
	drain := func() {
		for {
			select {
			case l := <-r.queue:
				add(l)
			default:
				return
			}
		}
	}
	for {
		select {
		case <-r.wake:
			drain() // full datagrams go now, the rest waits for the tick
		case <-r.soon:
			drain()
			flush()
		case <-tick.C:
			drain()
			flush()
		case <-r.done:
			drain()
			flush()
			r.conn.Close()
			return
		}
	}
}

// datagramSize is the largest datagram to send to dests: LoopbackDatagram
// when every one is a loopback address, else MaxDatagram.
func datagramSize(dests []*net.UDPAddr) int {
	for _, d := range dests {
		if !d.IP.IsLoopback() {
			return MaxDatagram
		}
	}
	return LoopbackDatagram
}

// send sends one datagram of n lines to every destination.
func (r *Reporter) send(body []byte, n int) {
	dg := body
	if r.key != nil {
		dg = sign(r.key, time.Now().Unix(), body)
	}
	ok := false
	for _, d := range r.dests {
		_ = r.conn.SetWriteDeadline(time.Now().Add(sendTimeout))
		if _, err := r.conn.WriteToUDP(dg, d); err == nil {
			ok = true
			atomic.AddUint64(&r.datagrams, 1)
		}
	}
	if ok {
		atomic.AddUint64(&r.sent, uint64(n))
	} else {
		atomic.AddUint64(&r.droppedSend, uint64(n))
	}
}
