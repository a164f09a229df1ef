// SPDX-License-Identifier: BSD-3-Clause

// Line formatting: the lw1 lines of docs/line-protocol.md, with keys,
// owners and holder ids percent-encoded (every byte outside 0x21-0x7e, and
// '%'). Each builder appends to a caller's buffer so the lock path makes
// one small allocation per line (the string the queue carries).
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

func waitLine(key string, us int64, o Outcome) string {
	b := make([]byte, 0, 24+len(key))
	b = append(b, "lw1 wait "...)
	b = appendEscaped(b, key)
	b = append(b, ' ')
	b = appendUint(b, us)
	b = append(b, ' ')
	b = append(b, outcomeWords[o]...)
	return string(b)
}

// waitingLine: phase is "start" or an outcome word; holder "" is "-".
func waitingLine(key, owner, holder, phase string) string {
	b := make([]byte, 0, 24+len(key)+len(owner)+len(holder))
	b = append(b, "lw1 waiting "...)
	b = appendEscaped(b, key)
	b = append(b, ' ')
	b = appendEscaped(b, owner)
	b = append(b, ' ')
	b = appendEscaped(b, holder)
	b = append(b, ' ')
	b = append(b, phase...)
	return string(b)
}

func holdLine(key string, us int64, owner, holder string) string {
	b := make([]byte, 0, 32+len(key)+len(owner)+len(holder))
	b = append(b, "lw1 hold "...)
	b = appendEscaped(b, key)
	b = append(b, ' ')
	b = appendUint(b, us)
	b = append(b, ' ')
	b = appendEscaped(b, owner)
	b = append(b, ' ')
	b = appendEscaped(b, holder)
	return string(b)
}

// lostLine: overrun < 0 is written "-" (the lease's end is not known).
func lostLine(key, owner, holder string, heldUs, overrunUs int64, reason string) string {
	b := make([]byte, 0, 48+len(key)+len(owner)+len(holder))
	b = append(b, "lw1 lost "...)
	b = appendEscaped(b, key)
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
	b = append(b, reason...)
	return string(b)
}
