// SPDX-License-Identifier: BSD-3-Clause
package reporter

import (
	"bytes"
	"context"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	cases := []struct{ got, want string }{
		{waitLine("lock:order:1001", 1500, OK), "lw1 wait lock:order:1001 1500 ok"},
		{waitLine("lock:café job", 7, Timeout), "lw1 wait lock:caf%C3%A9%20job 7 timeout"},
		{waitLine("100%", -1, Error), "lw1 wait 100%25 0 error"},
		{waitEndLine("k", 1500, OK, "web-1:42/m1", "tok en"), "lw1 wait k 1500 ok web-1:42/m1 tok%20en"},
		{waitEndLine("k", 9, Timeout, "o", ""), "lw1 wait k 9 timeout o -"},
		{waitingLine("k", "web-1:42/m1", "", "start"), "lw1 waiting k web-1:42/m1 - start"},
		{waitingLine("k", "o", "-", "ok"), "lw1 waiting k o %2D ok"},
		{holdLine("k", 12, "o", "tok"), "lw1 hold k 12 o tok"},
		{lostLine("k", "o", "h", 10, -1, lostExpired), "lw1 lost k o h 10 - expired"},
		{lostLine("k", "o", "h", 10, 0, lostRenewal), "lw1 lost k o h 10 0 renewal"},
		// a lock named "": a line the agent counts invalid, not the lock "-"
		// (a trial: its samples counted under "-")
		{waitLine("", 5, OK), "lw1 wait  5 ok"},
		{holdLine("", 12, "o", "tok"), "lw1 hold  12 o tok"},
		{waitLine("-", 5, OK), "lw1 wait %2D 5 ok"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The test vector of docs/line-protocol.md "Signed datagrams".
func TestSignVector(t *testing.T) {
	body := "lw1 waiting lock:order:1001 web-1%3A4242%2F7 lw1:web-1:4242:7:1767225599000:00112233aabbccdd start\n" +
		"lw1 wait lock:order:1001 1500 ok\n"
	got := string(sign([]byte("lockwatch test key: not a secret"), 1767225600, []byte(body)))
	want := "lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600\n" + body
	if got != want {
		t.Fatalf("got %q", got)
	}
}

func TestConfig(t *testing.T) {
	t.Setenv("LOCKWATCH_SAMPLES", "127.0.0.1:1,[::1]:2")
	t.Setenv("LOCKWATCH_KEY_FILE", "/k")
	t.Setenv("LOCKWATCH_OWNER", "pod-7")
	c := FromEnv()
	if c.Samples != "127.0.0.1:1,[::1]:2" || c.KeyFile != "/k" || c.Owner != "pod-7" {
		t.Fatalf("%+v", c)
	}
	d, errs := parseDests(c.Samples)
	if len(d) != 2 || len(errs) != 0 {
		t.Fatalf("%v %v", d, errs)
	}
	if d, _ := parseDests("off"); d != nil {
		t.Fatal("off")
	}
	if d, errs := parseDests("host.invalid:9717"); len(d) != 0 || len(errs) != 1 {
		t.Fatal("unresolvable")
	}
	// what every reporter refuses, with one warning each: no host, no
	// port, port 0 or out of range, no colon
	for _, bad := range []string{"127.0.0.1:", ":9717", "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:+9", "localhost", "[::1]"} {
		if d, errs := parseDests(bad); len(d) != 0 || len(errs) != 1 {
			t.Fatalf("%q: %v %v", bad, d, errs)
		}
	}
	many := "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5,127.0.0.1:6,127.0.0.1:7,127.0.0.1:8,127.0.0.1:9"
	if d, _ := parseDests(many); len(d) != maxDests {
		t.Fatalf("%d destinations", len(d))
	}
	// two names of one agent: sent once (a trial: every sample counted twice)
	realResolve := resolveUDPAddr
	resolveUDPAddr = func(network, addr string) (*net.UDPAddr, error) {
		return realResolve(network, strings.Replace(addr, "agent.lockwatch.test", "127.0.0.1", 1))
	}
	d, errs = parseDests("127.0.0.1:9717, agent.lockwatch.test:9717")
	resolveUDPAddr = realResolve
	if len(d) != 1 || len(errs) != 1 || !strings.Contains(errs[0].Error(), `"agent.lockwatch.test:9717" is 127.0.0.1:9717 again; sending there once`) {
		t.Fatalf("%v %v", d, errs)
	}
	if r := New(Config{Samples: "host.invalid:1"}); r.Enabled() {
		t.Fatal("an unresolvable destination must turn reporting off")
	}
	dir := t.TempDir()
	k := filepath.Join(dir, "k")
	os.WriteFile(k, []byte("short\n"), 0o600)
	if r := New(Config{Samples: "127.0.0.1:9", KeyFile: k}); r.Enabled() {
		t.Fatal("a short key must turn reporting off")
	}
	os.WriteFile(k, []byte("0123456789abcdef0123\r\n\n"), 0o600)
	if b, err := readKey(k); err != nil || len(b) != 20 {
		t.Fatalf("%q %v", b, err)
	}
}

// An owner over 200 bytes is replaced by hostname:pid with one warning;
// reporting stays on (as in the other reporters).
func TestLongOwner(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	s := listen(t)
	defer s.Close()
	r := New(Config{Samples: s.LocalAddr().String(), Owner: strings.Repeat("p", maxOwner+1)})
	defer r.Close()
	if !r.Enabled() {
		t.Fatal("a long owner must not turn reporting off")
	}
	if def := defaultProcess(); r.process != def {
		t.Fatalf("process %q, want %q", r.process, def)
	}
	want := "lockwatch: LOCKWATCH_OWNER is longer than 200 bytes; using " + r.process + "\n"
	if got := logged.String(); strings.Count(got, "lockwatch:") != 1 || !strings.HasSuffix(got, want) {
		t.Fatalf("logged %q", got)
	}
	if r := New(Config{Samples: "off", Owner: strings.Repeat("p", maxOwner)}); r.process != strings.Repeat("p", maxOwner)+":"+strconv.Itoa(os.Getpid()) {
		t.Fatal("a 200-byte owner must be used, with the pid")
	}
}

// A trial: "OFF" was taken for a destination (skipped with a warning), and
// LOCKWATCH_KEY_FILE set but empty sent unsigned datagrams silently.
func TestOffAnyCaseAndEmptyKeyFile(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	for _, v := range []string{"OFF", " Off "} {
		if r := New(Config{Samples: v}); r.Enabled() {
			t.Fatalf("%q: reporting on", v)
		}
	}
	if logged.Len() != 0 {
		t.Fatalf("off logged %q", logged.String())
	}
	s := listen(t)
	defer s.Close()
	t.Setenv("LOCKWATCH_SAMPLES", s.LocalAddr().String())
	t.Setenv("LOCKWATCH_KEY_FILE", "")
	r := New(FromEnv()) // New waits for the goroutine's start
	defer r.Close()
	if !r.Enabled() || r.key != nil {
		t.Fatal("an empty LOCKWATCH_KEY_FILE must leave reporting on, unsigned")
	}
	if got := logged.String(); strings.Count(got, "lockwatch:") != 1 ||
		!strings.HasSuffix(got, "lockwatch: LOCKWATCH_KEY_FILE is set but empty; datagrams go unsigned\n") {
		t.Fatalf("logged %q", got)
	}
}

func listen(t *testing.T) *net.UDPConn {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return c
}

func TestBatchingAndSigning(t *testing.T) {
	s := listen(t)
	defer s.Close()
	k := filepath.Join(t.TempDir(), "k")
	key := "lockwatch test key: not a secret"
	os.WriteFile(k, []byte(key+"\n"), 0o600)
	r := New(Config{Samples: s.LocalAddr().String(), KeyFile: k})
	for i := 0; i < 1000; i++ {
		r.emit(waitLine("lock:k:"+strconv.Itoa(i), int64(i), OK))
	}
	buf := make([]byte, 9000)
	lines, dgs, biggest := 0, 0, 0
	for lines < 1000 {
		n, err := s.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n > LoopbackDatagram { // to loopback: up to 8192 bytes, mac line included
			t.Fatalf("datagram of %d bytes", n)
		}
		if n > biggest {
			biggest = n
		}
		dg := string(buf[:n])
		nl := strings.IndexByte(dg, '\n')
		ts, _ := strconv.ParseInt(dg[41:nl], 10, 64)
		if string(sign([]byte(key), ts, []byte(dg[nl+1:]))) != dg {
			t.Fatalf("bad signature: %q", dg[:nl])
		}
		lines += strings.Count(dg, "\n") - 1
		dgs++
	}
	if dgs < 2 || biggest <= MaxDatagram {
		t.Fatalf("1000 lines in %d datagrams of at most %d bytes", dgs, biggest)
	}
	r.Close()
	if st := r.Stats(); st.Sent != 1000 || st.Queued != 1000 {
		t.Fatalf("%+v", st)
	}
}

func TestDatagramSize(t *testing.T) {
	addr := func(s string) *net.UDPAddr { return &net.UDPAddr{IP: net.ParseIP(s), Port: 9} }
	for _, c := range []struct {
		dests []string
		want  int
	}{
		{[]string{"127.0.0.1"}, LoopbackDatagram},
		{[]string{"127.3.2.1", "::1"}, LoopbackDatagram},
		{[]string{"::ffff:127.0.0.1"}, LoopbackDatagram},
		{[]string{"127.0.0.1", "192.0.2.1"}, MaxDatagram},
		{[]string{"fe80::1"}, MaxDatagram},
	} {
		var ds []*net.UDPAddr
		for _, d := range c.dests {
			ds = append(ds, addr(d))
		}
		if got := datagramSize(ds); got != c.want {
			t.Errorf("%v: %d, want %d", c.dests, got, c.want)
		}
	}
}

func TestFlushesSoon(t *testing.T) {
	s := listen(t)
	defer s.Close()
	r := New(Config{Samples: s.LocalAddr().String()})
	defer r.Close()
	t0 := time.Now()
	r.emit("lw1 wait k 1 ok")
	buf := make([]byte, 2000)
	n, err := s.Read(buf)
	if err != nil || string(buf[:n]) != "lw1 wait k 1 ok\n" {
		t.Fatalf("%q %v", buf[:n], err)
	}
	if time.Since(t0) > time.Second {
		t.Fatal("a partial datagram waited more than a second")
	}
}

// A lost line goes at once, not at the next tick: sendSoon leaves a
// request the goroutine takes.
func TestSendSoon(t *testing.T) {
	r := &Reporter{enabled: true, soon: make(chan struct{}, 1)}
	r.sendSoon()
	r.sendSoon() // a second request while one waits: one is enough
	select {
	case <-r.soon:
	default:
		t.Fatal("no request")
	}
	var off *Reporter
	off.sendSoon()
}

func TestFullQueueDrops(t *testing.T) {
	// a reporter whose goroutine is not running: the lines waiting reach the bound
	r := &Reporter{enabled: true, process: "p", limit: 2, size: LoopbackDatagram, room: LoopbackDatagram}
	for i := 0; i < 5; i++ {
		r.emit("lw1 wait k 1 ok")
	}
	if st := r.Stats(); st.Queued != 2 || st.DroppedFull != 3 {
		t.Fatalf("%+v", st)
	}
}

// Lines fill a datagram up to its room; the line that does not fit starts
// the next one, a line longer than a datagram goes alone, and the bound
// counts the lines of filled datagrams not yet sent.
func TestDatagramsFill(t *testing.T) {
	r := &Reporter{enabled: true, process: "p", limit: 1000, size: 100, room: 100}
	line := "lw1 wait k 1 ok" // 16 bytes with its newline
	for i := 0; i < 7; i++ {
		r.emit(line)
	}
	if len(r.full) != 1 || r.full[0].lines != 6 || len(r.full[0].body) != 96 || r.lines != 1 {
		t.Fatalf("full %d, first %d lines %d bytes; filling %d lines", len(r.full), r.full[0].lines, len(r.full[0].body), r.lines)
	}
	want := strings.Repeat(line+"\n", 6)
	if string(r.full[0].body) != want || string(r.buf) != line+"\n" {
		t.Fatalf("%q / %q", r.full[0].body, r.buf)
	}
	long := "lw1 wait " + strings.Repeat("k", 200) + " 1 ok"
	r.emit(long)
	r.emit(line)
	if len(r.full) != 3 || string(r.full[1].body) != line+"\n" || string(r.full[2].body) != long+"\n" ||
		string(r.buf) != line+"\n" {
		t.Fatalf("%d full: %q", len(r.full), r.full)
	}
	if r.pending != 9 {
		t.Fatalf("pending %d", r.pending)
	}
	r.limit = 9
	r.emit(line)
	if st := r.Stats(); st.Queued != 9 || st.DroppedFull != 1 {
		t.Fatalf("%+v", st)
	}
}

func TestNilAndOffReporters(t *testing.T) {
	var r *Reporter
	r.Close()
	if r.Enabled() || r.active() {
		t.Fatal("nil reporter")
	}
	off := New(Config{Samples: "off"})
	off.emit("lw1 wait k 1 ok")
	off.Close()
	if off.Stats().Queued != 0 {
		t.Fatal("off reporter queued")
	}
}

// firstUse makes the process's reporter not made yet, its environment
// naming agent.lockwatch.test (resolved to s, a local UDP socket standing in
// for the agent) and a key file. The hooks of readKey and parseDests each
// say when they are entered (keyRead, resolving) and then block until the
// test releases them (releaseKey, releaseName), so that a caller that
// returns while they block did not read or resolve anything itself.
type firstUse struct {
	s                       *net.UDPConn
	key                     string
	name                    string
	keyRead, resolving      chan struct{}
	releaseKey, releaseName func()
}

func newFirstUse(t *testing.T) *firstUse {
	f := &firstUse{s: listen(t), key: "lockwatch test key: not a secret",
		keyRead: make(chan struct{}), resolving: make(chan struct{})}
	t.Cleanup(func() { f.s.Close() })
	k := filepath.Join(t.TempDir(), "k")
	os.WriteFile(k, []byte(f.key+"\n"), 0o600)
	agent := f.s.LocalAddr().(*net.UDPAddr)
	f.name = "agent.lockwatch.test:" + strconv.Itoa(agent.Port)
	t.Setenv("LOCKWATCH_SAMPLES", f.name)
	t.Setenv("LOCKWATCH_KEY_FILE", k)
	t.Setenv("LOCKWATCH_OWNER", "web-1")
	keyGo, nameGo := make(chan struct{}), make(chan struct{})
	var keyOnce, nameOnce, readOnce, resolveOnce sync.Once
	f.releaseKey = func() { keyOnce.Do(func() { close(keyGo) }) }
	f.releaseName = func() { nameOnce.Do(func() { close(nameGo) }) }
	realRead, realResolve := readFile, resolveUDPAddr
	readFile = func(p string) ([]byte, error) {
		if p == k {
			readOnce.Do(func() { close(f.keyRead) })
			<-keyGo
		}
		return realRead(p)
	}
	resolveUDPAddr = func(network, addr string) (*net.UDPAddr, error) {
		if addr != f.name {
			return realResolve(network, addr)
		}
		resolveOnce.Do(func() { close(f.resolving) })
		<-nameGo
		return agent, nil
	}
	defaultOnce, defaultRep = sync.Once{}, nil
	t.Cleanup(func() {
		f.releaseKey() // a test that failed early leaves nothing blocked
		f.releaseName()
		defaultRep.Close()
		readFile, resolveUDPAddr = realRead, realResolve
		defaultOnce, defaultRep = sync.Once{}, nil
	})
	return f
}

// entered fails t unless ch is closed within 5 s: the sending goroutine
// got to the step of what.
func entered(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("the reporter's goroutine never %s", what)
	}
}

// The package-level Obtain is a lock call that makes the process's reporter
// when it is the first use of Default: the key file and the agent's name
// are the sending goroutine's to read and resolve, not the caller's
// (docs/reporters.md "Configuration"). Obtain and Release return while both
// are blocked; the lines wait, and go out, signed, once they are done.
func TestFirstObtainNeitherResolvesNorReadsTheKey(t *testing.T) {
	f := newFirstUse(t)
	mem := &memScripter{vals: map[string]string{}}
	done, finished := make(chan error, 1), make(chan struct{})
	t.Cleanup(func() { // before newFirstUse's: Default must have returned
		f.releaseKey()
		f.releaseName()
		<-finished
	})
	var token string
	go func() {
		defer close(finished)
		ctx := WithOwner(context.Background(), "job-1")
		l, err := Obtain(ctx, mem, "lock:first", time.Second, nil)
		if err == nil {
			token = l.Token()
			err = l.Release(ctx)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first Obtain waited for the key file or the agent's name")
	}
	entered(t, f.keyRead, "read the key file")
	select {
	case <-f.resolving:
		t.Fatal("the name was resolved before the key was read")
	default:
	}
	f.releaseKey()
	entered(t, f.resolving, "resolved the agent's name")
	if st := Default().Stats(); st.Queued != 2 || st.Sent != 0 || !Default().Enabled() {
		t.Fatalf("while the name resolves: %+v, enabled %v", st, Default().Enabled())
	}
	f.releaseName()
	var got []string
	buf := make([]byte, 9000)
	for len(got) < 2 {
		n, err := f.s.Read(buf)
		if err != nil {
			t.Fatalf("%v after %q", err, got)
		}
		dg := string(buf[:n])
		nl := strings.IndexByte(dg, '\n')
		ts, _ := strconv.ParseInt(dg[41:nl], 10, 64)
		if string(sign([]byte(f.key), ts, []byte(dg[nl+1:]))) != dg {
			t.Fatalf("bad signature: %q", dg)
		}
		for _, l := range strings.Split(strings.TrimSuffix(dg[nl+1:], "\n"), "\n") {
			fs := strings.Fields(l)
			if len(fs) > 3 {
				fs[3] = "<us>"
			}
			got = append(got, strings.Join(fs, " "))
		}
	}
	want := []string{"lw1 wait lock:first <us> ok web-1:" + strconv.Itoa(os.Getpid()) + "/job-1 " + token, "lw1 hold lock:first <us> web-1:" + strconv.Itoa(os.Getpid()) + "/job-1 " + token}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A name that does not resolve on the sending goroutine: one line in the
// log, reporting off (the wrappers back to the library alone), and the
// lines that waited meanwhile dropped and counted as failed sends.
func TestUnresolvableAfterStartTurnsOff(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	release := make(chan struct{})
	realResolve := resolveUDPAddr
	resolveUDPAddr = func(network, addr string) (*net.UDPAddr, error) {
		<-release
		return nil, &net.DNSError{Err: "no such host", Name: "agent.lockwatch.test", IsNotFound: true}
	}
	defer func() { resolveUDPAddr = realResolve }()
	r := newReporter(Config{Samples: "agent.lockwatch.test:9717"})
	defer r.Close()
	for i := 0; i < 3; i++ {
		r.emit("lw1 wait k 1 ok")
	}
	if !r.active() {
		t.Fatal("off before the name was resolved")
	}
	close(release)
	<-r.ready
	if r.Enabled() || r.active() {
		t.Fatal("an unresolvable agent must turn reporting off")
	}
	if st := r.Stats(); st.Queued != 3 || st.DroppedSend != 3 || st.Sent != 0 {
		t.Fatalf("%+v", st)
	}
	r.emit("lw1 wait k 1 ok") // a call under way: counted, not kept
	if st := r.Stats(); st.Queued != 4 || st.DroppedSend != 4 || r.pending != 0 {
		t.Fatalf("%+v, %d pending", r.Stats(), r.pending)
	}
	if got := logged.String(); strings.Count(got, "lockwatch:") != 1 || !strings.Contains(got, "agent.lockwatch.test") {
		t.Fatalf("logged %q", got)
	}
	if !r.Flush(time.Second) {
		t.Fatal("Flush of a reporter turned off")
	}
}

// hangingResolver makes the agent's name agent.lockwatch.test resolve only
// when the test releases it (a DNS server that does not answer, a key file
// on a hung NFS mount: as far as Close can tell, for ever), then to s.
// resolving is closed when the sending goroutine asks. The returned
// Samples name it; the test releases it, and waits for the goroutine to
// end, before its end puts the real resolver back.
func hangingResolver(t *testing.T, s *net.UDPConn) (samples string, resolving chan struct{}, release func()) {
	resolving, released := make(chan struct{}), make(chan struct{})
	var askOnce, releaseOnce sync.Once
	release = func() { releaseOnce.Do(func() { close(released) }) }
	agent := s.LocalAddr().(*net.UDPAddr)
	samples = "agent.lockwatch.test:" + strconv.Itoa(agent.Port)
	realResolve := resolveUDPAddr
	resolveUDPAddr = func(network, addr string) (*net.UDPAddr, error) {
		if addr != samples {
			return realResolve(network, addr)
		}
		askOnce.Do(func() { close(resolving) })
		<-released
		return agent, nil
	}
	t.Cleanup(func() { resolveUDPAddr = realResolve })
	return samples, resolving, release
}

// returnsWithin10s fails t unless fn returns within 10 s.
func returnsWithin10s(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the resolver", what)
	}
}

// Close, at the end of main, waits for the agent's name up to a second, not
// for ever: past it what waits is dropped and counted as failed sends, and
// the goroutine, once the resolver returns, ends without sending anything.
func TestCloseDoesNotWaitForAHungResolver(t *testing.T) {
	s := listen(t)
	defer s.Close()
	samples, resolving, release := hangingResolver(t, s)
	r := newReporter(Config{Samples: samples})
	t.Cleanup(func() { // a test that failed early leaves nothing blocked
		release()
		<-r.stopped
	})
	for i := 0; i < 3; i++ {
		r.emit("lw1 wait k 1 ok")
	}
	entered(t, resolving, "resolved the agent's name")
	returnsWithin10s(t, "Close", r.Close)
	if st := r.Stats(); st.Queued != 3 || st.DroppedSend != 3 || st.Sent != 0 {
		t.Fatalf("%+v", st)
	}
	returnsWithin10s(t, "a second Close", r.Close)
	release() // the name resolves after all: the closed reporter sends nothing
	select {
	case <-r.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the sending goroutine did not end once the resolver returned")
	}
	s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := s.Read(make([]byte, 9000)); err == nil {
		t.Fatalf("sent after Close: %d bytes", n)
	}
	if st := r.Stats(); st.Sent != 0 || st.Datagrams != 0 {
		t.Fatalf("%+v", st)
	}
}

// New returns after startWait while the name is still resolving, the
// reporter enabled (its lines wait until the goroutine is done).
func TestNewDoesNotWaitForAHungResolver(t *testing.T) {
	s := listen(t)
	defer s.Close()
	samples, _, release := hangingResolver(t, s)
	saved := startWait
	startWait = 200 * time.Millisecond
	defer func() { startWait = saved }()
	var r *Reporter
	returnsWithin10s(t, "New", func() { r = New(Config{Samples: samples}) })
	if !r.Enabled() {
		t.Fatal("disabled while its name is still resolving")
	}
	release()
	r.Close()
}
