// SPDX-License-Identifier: BSD-3-Clause
package reporter

import (
	"testing"

	"github.com/go-redsync/redsync/v4"
)

// The reporter's own cost per acquire+release, on an in-memory pool (no
// Redis): compare with BenchmarkMutexBare. bench/reporters/run measures it
// against a real redis-server.
func benchMutex(b *testing.B, r *Reporter, watched bool) {
	pool := &memPool{vals: map[string]string{}}
	var m *Mutex
	if watched {
		m = r.NewRedsync(pool).NewMutex("lock:bench", redsync.WithTries(1))
	} else {
		m = r.WrapMutex(redsync.New(pool).NewMutex("lock:bench", redsync.WithTries(1)))
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := m.Lock(); err != nil {
			b.Fatal(err)
		}
		m.Unlock()
	}
}

func BenchmarkMutexBare(b *testing.B) { benchMutex(b, New(Config{Samples: "off"}), false) }

func benchReported(b *testing.B, watched bool) {
	r := New(Config{Samples: "127.0.0.1:9"})
	defer r.Close()
	benchMutex(b, r, watched)
	b.ReportMetric(float64(r.Stats().DroppedFull), "dropped")
}

// WrapMutex: a start line before every Lock.
func BenchmarkMutexReported(b *testing.B) { benchReported(b, false) }

// NewRedsync: no start when the lock is free; a context value and a
// watching connection per call instead.
func BenchmarkMutexReportedWatched(b *testing.B) { benchReported(b, true) }
