// SPDX-License-Identifier: BSD-3-Clause

// The Reporter: the lock path writes each line straight into the datagram
// being filled (under a mutex, no allocation); a filled datagram, of at
// most 1432 bytes (8192 when every destination is a loopback address: fewer
// sends, each of which wakes the agent), goes on a list that one goroutine
// sends, signing each when a key is set; a partial one goes every 200 ms,
// or at once after a lost line. The lines waiting (in the list and the
// datagram being filled) are bounded: past the bound a line is dropped and
// counted, the caller never waits. The lock path wakes the goroutine only
// when a few datagrams' worth wait (wakeAt). A failed send drops the
// datagram and counts it; nothing is retried. The goroutine never keeps a
// program alive (Go exits when main returns); Close sends what waits.
//
// The goroutine also reads the key file and resolves the destinations'
// names, before it sends anything (start): the first use of Default may be
// a lock call (the package-level Obtain), which must not wait for DNS or
// the disk. Lines wait meanwhile, bounded as ever, in datagrams of the
// smallest room (MaxDatagram less the mac line) until the destinations and
// the key are known. When that step turns reporting off, what waited is
// dropped and counted as failed sends, and the wrappers go back to the
// library alone. Nobody waits for that step without a bound (a resolver
// that does not answer, a key file on a hung NFS mount may never return):
// New waits up to startWait, Close up to closeWait; a Close that gives up
// drops what waits (counted as failed sends), and the goroutine, once the
// resolver returns, ends without sending (phase).
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
	// keepFree: sent datagrams' buffers kept for reuse.
	keepFree    = 16
	sendTimeout = 50 * time.Millisecond
	// wakeAt: the lines waiting at which the lock path wakes the sending
	// goroutine (a few datagrams' worth, far below the bound's 8192).
	// Waking it for every line would cost a goroutine switch per lock
	// call, most of the reporter's price on a busy machine (bench/reporters:
	// 256 measured a few percent cheaper than 32); below this the 200 ms
	// tick sends.
	wakeAt = 256
	// closeWait: the longest Close waits for the goroutine to resolve the
	// names: the flush at exit is best effort, about a second
	// (docs/reporters.md), as in the other reporters.
	closeWait = time.Second
)

// startWait: the longest New waits for the goroutine to resolve the names
// and read the key file: glibc's timeout for one DNS query (resolv.conf
// `timeout:`, 5 s), so a resolver that answers, even slowly, is waited for
// and a stuck one is not. A variable for the tests.
var startWait = 5 * time.Second

// The goroutine's phase: it may send only once it has moved from starting
// to running; a Close that gave up waiting for it moves it to abandoned
// first, and the goroutine then ends without sending.
const (
	phaseStarting int32 = iota
	phaseRunning
	phaseAbandoned
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
	process      string
	tap          func(string)
	wake         chan struct{}
	soon         chan struct{} // sendSoon: the partial datagram goes now
	conn         *net.UDPConn  // conn, dests and key: the goroutine's (start)
	dests        []*net.UDPAddr
	key          []byte
	enabled      bool          // set up to send (a goroutine started); fixed once made
	keyFileEmpty bool          // LOCKWATCH_KEY_FILE set but empty: said once by start
	off          atomic.Bool   // the goroutine found it cannot send: the lock path stops
	ready        chan struct{} // closed once the goroutine's start is done
	phase        atomic.Int32  // phaseStarting, phaseRunning or phaseAbandoned
	nextID       uint64

	limit int // the lines that may wait

	mu          sync.Mutex
	size, room  int        // a datagram's capacity; room: for lines (size less the mac line)
	closed      bool       // set by Close: lines are dropped from then on
	buf         []byte     // the datagram being filled: lines, each ending in '\n'
	lines       int        // in buf
	full        []datagram // filled, for the goroutine to send
	free        [][]byte   // sent datagrams' buffers, for reuse
	pending     int        // lines in buf, full and being sent
	queued      uint64
	droppedFull uint64

	sent, datagrams, droppedSend uint64 // atomic: the goroutine's

	closeOnce sync.Once
	done      chan struct{}
	stopped   chan struct{}
}

// datagram is a filled datagram: its lines, each ending in '\n'.
type datagram struct {
	body  []byte
	lines int
}

var (
	defaultOnce sync.Once
	defaultRep  *Reporter
)

// Default returns the process's reporter, made from the environment on
// first use (FromEnv). It never waits: its first use may be a lock call,
// so the reporter's goroutine reads the key file and resolves the names
// while lines wait, and Enabled says true until it finds they cannot work.
func Default() *Reporter {
	defaultOnce.Do(func() { defaultRep = newReporter(FromEnv()) })
	return defaultRep
}

// New makes a reporter and starts its sending goroutine, and returns once
// that goroutine has read the key file and resolved the destinations (the
// application's start waits for that, not a lock call), or after 5 s when
// it has not: Enabled is then true, lines wait, and they go once it is done
// (or are dropped and counted if it turns reporting off). A configuration
// that cannot work (no destination resolves, an unreadable key file) gives
// a disabled reporter and one line in the standard logger: the
// application's start and its lock calls never fail because of reporting.
func New(c Config) *Reporter {
	r := newReporter(c)
	t := time.NewTimer(startWait)
	defer t.Stop()
	select {
	case <-r.ready:
	case <-t.C:
	}
	return r
}

// newReporter makes a reporter without waiting for its goroutine's start:
// it does no I/O but reading the host's name (os.Hostname, no DNS).
func newReporter(c Config) *Reporter {
	r := &Reporter{tap: c.Tap, done: make(chan struct{}), stopped: make(chan struct{}),
		ready: make(chan struct{})}
	var err error
	if r.process, err = processName(c.Owner); err != nil {
		log.Printf("lockwatch: %v", err) // hostname:pid instead; still reporting
	}
	if samplesOff(c.Samples) {
		close(r.ready)
		close(r.stopped)
		return r
	}
	r.limit = c.QueueLen
	if r.limit <= 0 {
		r.limit = defaultQueue
	}
	r.size = MaxDatagram // until start knows the destinations and the key
	r.room = MaxDatagram - macLineLen
	r.buf = r.newBuf()
	r.wake = make(chan struct{}, 1)
	r.soon = make(chan struct{}, 1)
	r.enabled = true
	r.keyFileEmpty = c.keyFileEmpty
	go r.run(c.Samples, c.KeyFile)
	return r
}

// start is the goroutine's first step: read the key file, resolve the
// destinations, open the socket, then size the datagrams for them. False
// (one line in the log, reporting off) when that cannot work. The key is
// read first: a bad one turns reporting off without asking DNS.
func (r *Reporter) start(samples, keyFile string) bool {
	defer close(r.ready)
	var err error
	if r.keyFileEmpty {
		// unsigned, which an agent with a key rejects
		log.Print("lockwatch: LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned")
	} else if keyFile != "" {
		if r.key, err = readKey(keyFile); err != nil {
			log.Printf("lockwatch: LOCKWATCH_KEY_FILE: %v; reporting off", err)
			r.turnOff()
			return false
		}
	}
	dests, errs := parseDests(samples)
	for _, e := range errs {
		log.Print(e)
	}
	if len(dests) > 0 {
		if r.conn, err = net.ListenUDP("udp", nil); err != nil {
			log.Printf("lockwatch: UDP socket: %v; reporting off", err)
			dests = nil
		}
	}
	if len(dests) == 0 {
		r.turnOff()
		return false
	}
	r.dests = dests
	r.mu.Lock()
	r.size = datagramSize(dests)
	r.room = r.size
	if r.key != nil {
		r.room -= macLineLen
	}
	r.mu.Unlock()
	return true
}

// turnOff stops reporting once lines may have waited: the lock path stops
// (active), and what waits is dropped and counted as failed sends.
func (r *Reporter) turnOff() {
	r.off.Store(true)
	r.dropWaiting()
}

// dropWaiting drops the lines that wait, counted as failed sends.
func (r *Reporter) dropWaiting() {
	r.mu.Lock()
	n := r.pending
	r.pending, r.lines = 0, 0
	r.buf, r.full, r.free = nil, nil, nil
	r.mu.Unlock()
	atomic.AddUint64(&r.droppedSend, uint64(n))
}

// active tells whether a lock call has anything to report to: the wrappers
// skip formatting entirely otherwise.
func (r *Reporter) active() bool { return r != nil && (r.enabled && !r.off.Load() || r.tap != nil) }

// Enabled tells whether the reporter sends anything (or may: Default's
// goroutine still resolving its names).
func (r *Reporter) Enabled() bool { return r != nil && r.enabled && !r.off.Load() }

// Stats returns the counters.
func (r *Reporter) Stats() Stats {
	if r == nil {
		return Stats{}
	}
	r.mu.Lock()
	queued, droppedFull := r.queued, r.droppedFull
	r.mu.Unlock()
	return Stats{
		Queued:      queued,
		Sent:        atomic.LoadUint64(&r.sent),
		Datagrams:   atomic.LoadUint64(&r.datagrams),
		DroppedFull: droppedFull,
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

// The lines, as the wrappers send them: to the Tap, then into the datagram
// being filled.

func (r *Reporter) wait(key string, us int64, o Outcome) {
	if r.tap != nil {
		r.tap(waitLine(key, us, o))
	}
	if b, ok := r.begin(); ok {
		r.end(appendWait(b, key, us, o))
	}
}

// waitEnd: the acquire's waiting end and its wait, one line.
func (r *Reporter) waitEnd(key string, us int64, o Outcome, owner, holder string) {
	if r.tap != nil {
		r.tap(waitEndLine(key, us, o, owner, holder))
	}
	if b, ok := r.begin(); ok {
		r.end(appendWaitEnd(b, key, us, o, owner, holder))
	}
}

func (r *Reporter) waiting(key, owner, holder, phase string) {
	if r.tap != nil {
		r.tap(waitingLine(key, owner, holder, phase))
	}
	if b, ok := r.begin(); ok {
		r.end(appendWaiting(b, key, owner, holder, phase))
	}
}

func (r *Reporter) hold(key string, us int64, owner, holder string) {
	if r.tap != nil {
		r.tap(holdLine(key, us, owner, holder))
	}
	if b, ok := r.begin(); ok {
		r.end(appendHold(b, key, us, owner, holder))
	}
}

func (r *Reporter) lost(key, owner, holder string, heldUs, overrunUs int64, reason string) {
	if r.tap != nil {
		r.tap(lostLine(key, owner, holder, heldUs, overrunUs, reason))
	}
	if b, ok := r.begin(); ok {
		r.end(appendLost(b, key, owner, holder, heldUs, overrunUs, reason))
	}
}

// emit sends one line already made (tests).
func (r *Reporter) emit(line string) {
	if r.tap != nil {
		r.tap(line)
	}
	if b, ok := r.begin(); ok {
		r.end(append(b, line...))
	}
}

// begin locks the reporter and returns the datagram being filled, for one
// line to be appended and handed to end; false (unlocked, nothing to do)
// when the reporter does not send, is closed, or the lines waiting are at
// the bound (the line is dropped and counted). A line of a call under way
// when the reporter turned off is counted as a failed send.
func (r *Reporter) begin() ([]byte, bool) {
	if !r.enabled {
		return nil, false
	}
	r.mu.Lock()
	if r.off.Load() {
		r.queued++
		r.mu.Unlock()
		atomic.AddUint64(&r.droppedSend, 1)
		return nil, false
	}
	if r.closed || r.pending >= r.limit {
		r.droppedFull++
		r.mu.Unlock()
		return nil, false
	}
	return r.buf, true
}

// end takes the datagram with one more line (b: what begin returned, the
// line appended) and unlocks. A line that does not fit in the datagram's
// room starts the next one; a line longer than a datagram goes alone.
func (r *Reporter) end(b []byte) {
	at := len(r.buf)
	b = append(b, '\n')
	r.queued++
	r.pending++
	if at > 0 && len(b) > r.room {
		line := b[at:]
		r.seal(b[:at], r.lines)
		r.buf = append(r.newBuf(), line...)
		r.lines = 1
	} else {
		r.buf = b
		r.lines++
	}
	if len(r.buf) >= r.room {
		r.seal(r.buf, r.lines)
		r.buf, r.lines = r.newBuf(), 0
	}
	wake := len(r.full) > 0 && r.pending >= wakeAt
	r.mu.Unlock()
	if wake {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// seal puts a filled datagram on the list to send; r.mu is held.
func (r *Reporter) seal(body []byte, lines int) {
	r.full = append(r.full, datagram{body, lines})
}

// newBuf returns an empty datagram buffer; r.mu is held.
func (r *Reporter) newBuf() []byte {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free = r.free[:n-1]
		return b
	}
	return make([]byte, 0, 2*r.size) // room for the line that crosses the end
}

// sendSoon has what waits sent now rather than at the next tick: after a
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

// Close sends what waits (best effort) and stops the goroutine, once it
// has resolved the names, waiting for that up to a second: past it what
// waits is dropped and counted as failed sends, and the goroutine, left
// resolving, ends without sending once the resolver returns. Lines sent
// after Close are dropped and counted.
func (r *Reporter) Close() {
	if r == nil || !r.enabled {
		return
	}
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.done)
	})
	if r.phase.Load() != phaseAbandoned {
		t := time.NewTimer(closeWait)
		defer t.Stop()
		select {
		case <-r.ready:
		case <-t.C:
			r.phase.CompareAndSwap(phaseStarting, phaseAbandoned)
		}
	}
	if r.phase.Load() == phaseAbandoned { // else the goroutine runs: it sends what waits and ends
		r.dropWaiting()
		return
	}
	<-r.stopped
}

// Flush waits until every line so far has been sent or dropped (tests);
// lines wait while the goroutine resolves the names.
func (r *Reporter) Flush(timeout time.Duration) bool {
	if !r.Enabled() {
		return true
	}
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		s := r.Stats()
		if s.Sent+s.DroppedSend >= s.Queued {
			return true
		}
		r.sendSoon()
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (r *Reporter) run(samples, keyFile string) {
	defer close(r.stopped)
	if !r.start(samples, keyFile) {
		return
	}
	if !r.phase.CompareAndSwap(phaseStarting, phaseRunning) {
		r.conn.Close() // Close gave up waiting: nothing is sent
		return
	}
	tick := time.NewTicker(FlushEvery)
	defer tick.Stop()
	var batch []datagram
	for {
		select {
		case <-r.wake:
			batch = r.sendWaiting(batch, false) // full datagrams go now, the rest at the tick
		case <-r.soon:
			batch = r.sendWaiting(batch, true)
		case <-tick.C:
			batch = r.sendWaiting(batch, true)
		case <-r.done:
			r.sendWaiting(batch, true)
			r.conn.Close()
			return
		}
	}
}

// sendWaiting sends the filled datagrams, and the partial one too when
// partial; batch is a spare list to swap with the filled one (returned for
// the next time).
func (r *Reporter) sendWaiting(batch []datagram, partial bool) []datagram {
	r.mu.Lock()
	if partial && r.lines > 0 {
		r.seal(r.buf, r.lines)
		r.buf, r.lines = r.newBuf(), 0
	}
	batch, r.full = r.full, batch[:0]
	r.mu.Unlock()
	if len(batch) == 0 {
		return batch
	}
	n := 0
	for _, d := range batch {
		r.send(d.body, d.lines)
		n += d.lines
	}
	r.mu.Lock()
	r.pending -= n
	for i, d := range batch {
		if len(r.free) < keepFree && cap(d.body) == 2*r.size {
			r.free = append(r.free, d.body[:0])
		}
		batch[i] = datagram{}
	}
	r.mu.Unlock()
	return batch
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
