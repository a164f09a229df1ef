// SPDX-License-Identifier: BSD-3-Clause

// Datagram signing (docs/line-protocol.md "Signed datagrams"): a first line
// "lw1 mac <32 hex> <unix-seconds>\n", the mac being HMAC-SHA-256 with the
// shared key over everything after the space that follows it, cut to 16
// bytes.
package reporter

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// macLineLen is the longest mac line: "lw1 mac " + 32 hex + " " + up to 20
// digits + "\n"; the batcher keeps this much room in every datagram.
const macLineLen = 8 + 32 + 1 + 20 + 1

// sign returns the datagram: the mac line, then body (the lines, each
// ending in '\n'), signed with key at unix time now.
func sign(key []byte, now int64, body []byte) []byte {
	signed := make([]byte, 0, macLineLen+len(body))
	signed = append(signed, "lw1 mac "...)
	macAt := len(signed)
	signed = append(signed, "0123456789abcdef0123456789abcdef "...)
	from := len(signed)
	signed = strconv.AppendInt(signed, now, 10)
	signed = append(signed, '\n')
	signed = append(signed, body...)
	m := hmac.New(sha256.New, key)
	m.Write(signed[from:])
	sum := m.Sum(nil)
	hex.Encode(signed[macAt:macAt+32], sum[:16])
	return signed
}
