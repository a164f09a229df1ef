// SPDX-License-Identifier: BSD-3-Clause

// Owner ids. Go does not expose a goroutine's id, so the <party> half of
// an owner id (<process>/<party>) comes from the context when the caller
// names it (WithOwner), and otherwise from the wrapped lock itself: each
// wrapped redsync Mutex and each redislock Obtain call gets a number of its
// own ("m17", "o42"), stable for that holding. Naming the party (a worker,
// a request id) makes the agent's wait-for graph readable; it must be
// unique within the process while it waits or holds.
package reporter

import "context"

type ownerKey struct{}

// WithOwner returns a context whose lock calls are reported with party as
// the <party> part of the owner id.
func WithOwner(ctx context.Context, party string) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, ownerKey{}, party)
}

// partyFrom returns the party WithOwner put in ctx, or def.
func partyFrom(ctx context.Context, def string) string {
	if ctx != nil {
		if p, ok := ctx.Value(ownerKey{}).(string); ok && p != "" {
			return p
		}
	}
	return def
}
