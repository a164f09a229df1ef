// SPDX-License-Identifier: BSD-3-Clause

// Line formatting: the lw1 lines of docs/line-protocol.md, with keys,
// owners and holder ids percent-encoded (every byte outside 0x21-0x7e, and
// '%').
package reporter

const hexDigits = "0123456789ABCDEF"

// appendEscaped appends s percent-encoded; an empty s is written "-"
// ("not known"), and an id that really is "-" is written %2D.
func appendEscaped(b []byte, s string) []byte {
	if s == "" {
		return append(b, '-')
	}
	if s == "-" {
		return append(b, "%2D"...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '%' {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// appendKey appends a lock's key percent-encoded. A key is never empty in
// the protocol: an empty one is written as nothing, a line the agent
// counts invalid (as the other reporters' is), never as "-", which would
// be the lock named "-".
func appendKey(b []byte, key string) []byte {
	if key == "" {
		return b
	}
	return appendEscaped(b, key)
}

func appendUint(b []byte, v int64) []byte {
	if v < 0 {
		v = 0
	}
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// Outcome of an acquire.
type Outcome int

const (
	// OK: acquired.
	OK Outcome = iota
	// Timeout: gave up, or found the lock taken.
	Timeout
	// Error: the library returned an error (Redis down, script error).
	Error
)

var outcomeWords = [...]string{OK: "ok", Timeout: "timeout", Error: "error"}

func (o Outcome) String() string { return outcomeWords[o] }

// Loss reasons of a lost line.
const (
	lostRenewal = "renewal"
	lostExpired = "expired"
)

// The builders append one line (without its '\n') to b; the reporter
// builds straight into the datagram it fills, so the lock path allocates
// nothing for its lines. The *Line forms return the line as a string (the
// Tap, tests).

func appendWait(b []byte, key string, us int64, o Outcome) []byte {
	b = append(b, "lw1 wait "...)
	b = appendKey(b, key)
	b = append(b, ' ')
	b = appendUint(b, us)
	b = append(b, ' ')
	return append(b, outcomeWords[o]...)
}

// appendWaitEnd: an acquire's waiting end and its wait in one line, the
// 7-field wait (docs/line-protocol.md); holder "" is "-".
func appendWaitEnd(b []byte, key string, us int64, o Outcome, owner, holder string) []byte {
	b = appendWait(b, key, us, o)
	b = append(b, ' ')
	b = appendEscaped(b, owner)
	b = append(b, ' ')
	return appendEscaped(b, holder)
}

// appendWaiting: phase is "start" or an outcome word; holder "" is "-".
func appendWaiting(b []byte, key, owner, holder, phase string) []byte {
	b = append(b, "lw1 waiting "...)
	b = appendKey(b, key)
	b = append(b, ' ')
	b = appendEscaped(b, owner)
	b = append(b, ' ')
	b = appendEscaped(b, holder)
	b = append(b, ' ')
	return append(b, phase...)
}

func appendHold(b []byte, key string, us int64, owner, holder string) []byte {
	b = append(b, "lw1 hold "...)
	b = appendKey(b, key)
	b = append(b, ' ')
	b = appendUint(b, us)
	b = append(b, ' ')
	b = appendEscaped(b, owner)
	b = append(b, ' ')
	return appendEscaped(b, holder)
}

// appendLost: overrun < 0 is written "-" (the lease's end is not known).
func appendLost(b []byte, key, owner, holder string, heldUs, overrunUs int64, reason string) []byte {
	b = append(b, "lw1 lost "...)
	b = appendKey(b, key)
	b = append(b, ' ')
	b = appendEscaped(b, owner)
	b = append(b, ' ')
	b = appendEscaped(b, holder)
	b = append(b, ' ')
	b = appendUint(b, heldUs)
	b = append(b, ' ')
	if overrunUs < 0 {
		b = append(b, '-')
	} else {
		b = appendUint(b, overrunUs)
	}
	b = append(b, ' ')
	return append(b, reason...)
}

func waitLine(key string, us int64, o Outcome) string {
	return string(appendWait(make([]byte, 0, 24+len(key)), key, us, o))
}

func waitEndLine(key string, us int64, o Outcome, owner, holder string) string {
	return string(appendWaitEnd(make([]byte, 0, 32+len(key)+len(owner)+len(holder)), key, us, o, owner, holder))
}

func waitingLine(key, owner, holder, phase string) string {
	return string(appendWaiting(make([]byte, 0, 24+len(key)+len(owner)+len(holder)), key, owner, holder, phase))
}

func holdLine(key string, us int64, owner, holder string) string {
	return string(appendHold(make([]byte, 0, 32+len(key)+len(owner)+len(holder)), key, us, owner, holder))
}

func lostLine(key, owner, holder string, heldUs, overrunUs int64, reason string) string {
	return string(appendLost(make([]byte, 0, 48+len(key)+len(owner)+len(holder)), key, owner, holder, heldUs, overrunUs, reason))
}
