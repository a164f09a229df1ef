/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * leader.h - one voice among replicas: the leader lock
 * lockwatch:leader:<group> (a shard's: <group>.<I>of<N>) on [agent]
 * leader_target, taken and renewed through liblockwatch with a fencing
 * token (docs/deploying.md "One voice for direct sinks").
 *
 * A thread of its own tries the lock (lw_trylock, LW_FENCING) while it
 * follows, every fifth of the lease (at most 1 s), and extends it
 * (lw_extend) every third of the lease while it leads.  The agent leads
 * only while the lease it last renewed has time left by its own clock:
 * from just before the command that took or extended the lock, plus the
 * lease, less a margin for the two clocks' rates.  So a leader that was
 * stopped (SIGSTOP, a long GC-like pause, a suspended VM) past its lease
 * is deposed by its own clock the instant it runs again, before it hears
 * from Redis; an extend that finds the lock gone or another's deposes it
 * too.  The fence is the token liblockwatch took with the lock: every
 * term's is greater than every earlier term's, so a receiver that keeps
 * the highest it has seen drops a deposed leader's late message.
 *
 * The leader writes its replica name to <key>:replica (same lease);
 * followers read it, so each replica can say who leads (/readyz).
 *
 * A replica that cannot reach the lock for longer than the lease + 1s
 * speaks to the direct sinks unfenced (LEADER_UNELECTED): the Redis that
 * elects being down must not silence the alert that says so.
 *
 * The agent calls these from its own threads; leader_fence() from any
 * (the notifier's too).  This is the one place the agent uses
 * liblockwatch, through its public header only (CONTRIBUTING.md "The
 * layers").
 */
#ifndef LOCKWATCH_LEADER_H
#define LOCKWATCH_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

struct leader;

/* leader_fence() while the lock cannot be reached for longer than the
 * lease + 1s: no replica can lead, this agent speaks unfenced. */
#define LEADER_UNELECTED (-1LL)

/* What the view shows of the election. */
struct leader_state {
    bool leading;               /* this agent leads now (its lease has time) */
    bool unelected;             /* not leading: the lock unreachable for longer
                                 * than the lease + 1s, this agent speaks */
    long long fence;            /* its fencing token while leading, else 0 */
    int64_t unreach_ms;         /* how long the lock has been unreachable; 0 */
    int64_t lease_ms;
    char key[CONFIG_NAME_MAX + 64];
    char holder[CONFIG_NAME_MAX + 1];   /* the replica that leads, "" unknown */
    char err[256];              /* the last failure to reach the lock, "" none */
    uint64_t terms;             /* times this agent took the lock */
};

/* The lock's key for cfg, into buf. */
void leader_key(const struct config *cfg, char *buf, size_t len);

/*
 * Start electing for cfg (cfg->leader_target set; the target may be one
 * another shard watches).  cfg must outlive the leader or its next
 * leader_rebind().  prev, when not NULL, is the election a reload replaces
 * (still running): what it knew of who last spoke to the direct sinks
 * (another replica's term, its own, now if it leads) carries over, so the
 * first term of the new one says again only what that speaker may have
 * left unsaid (leader_quiet_since).  NULL on ENOMEM or a thread that
 * cannot start.
 */
struct leader *leader_start(const struct config *cfg, struct leader *prev);

/* Same settings (target, group, lease, replica, shard) in both? */
bool leader_same(const struct config *a, const struct config *b);

/* A reload with the same settings: pause the thread, read from cfg from
 * now on (the lock and its term are kept). */
void leader_rebind(struct leader *l, const struct config *cfg);

/* Try the lock now rather than at the next fifth of the lease (after a
 * reload released the one before); NULL is a no-op. */
void leader_kick(struct leader *l);

/* Stop the thread; a held lock is released (a follower takes over at
 * once) and the log says why (what follows for the direct sinks); NULL
 * is a no-op. */
void leader_stop(struct leader *l, const char *why);

/* The fencing token while this agent leads; LEADER_UNELECTED while the
 * lock has been unreachable for longer than the lease + 1s (it speaks
 * unfenced); else 0 (it follows).  Thread-safe. */
long long leader_fence(struct leader *l);

/* Unix ms since which no leader may have spoken: two leases before the
 * last moment a term before the current one (another replica's, or this
 * agent's own) was known to run; 0 when none ever was.  What a replica that starts to speak says again
 * (alerts_set_leader). */
int64_t leader_quiet_since(struct leader *l);

/* For a view: a copy of the state. */
void leader_state(struct leader *l, struct leader_state *out);

/* One line for people (/readyz, the status page): who leads, and what
 * this agent does about the direct sinks. */
void leader_describe(const struct leader_state *st, char *buf, size_t len);

#endif
