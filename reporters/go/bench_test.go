// SPDX-License-Identifier: BSD-3-Clause
package reporter

import (
	"testing"

	"github.com/go-redsync/redsync/v4"
)

// The reporter's own cost per acquire+release, on an in-memory pool (no
// Redis): compare with BenchmarkMutexBare. bench/reporters/run measures it
// against a real redis-server.
func benchMutex(b *testing.B, r *Reporter) {
	pool := &memPool{vals: map[string]string{}}
	m := r.WrapMutex(redsync.New(pool).NewMutex("lock:bench", redsync.WithTries(1)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := m.Lock(); err != nil {
			b.Fatal(err)
		}
		m.Unlock()
	}
}

func BenchmarkMutexBare(b *testing.B) { benchMutex(b, New(Config{Samples: "off"})) }

func BenchmarkMutexReported(b *testing.B) {
	r := New(Config{Samples: "127.0.0.1:9"})
	defer r.Close()
	benchMutex(b, r)
	b.ReportMetric(float64(r.Stats().DroppedFull), "dropped")
}
