/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verdict.c - a lock's age, states and place in a listing, from what
 * lockctl read from Redis and what the agent knows.
 *
 * The judge is collectors/locks/lockstate.c, the agent's own: lockctl
 * and the agent can differ only in what they know, never in how they
 * judge.  What lockctl knows alone is the starting age (the larger of
 * OBJECT IDLETIME and the acquisition time the format encodes); any read
 * of a key resets IDLETIME on Redis before 7.2 (the agent's scans too),
 * so an age from it is only a lower bound and a lock without a TTL that
 * looks younger than leak_grace may still be a leak: leak_unknown, shown
 * as such rather than hidden.  What the agent adds, when it names the
 * holder lockctl read, is when that holder was first seen and since when
 * the key has had no TTL; the facts that change (PTTL, holders, counts)
 * are lockctl's own, read now.  Pure functions: no I/O, no clock.
 */
#include <stdio.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/locks/lockfacts.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"
#include "collectors/release/release.h"

bool
verdict_same_holder(const struct cli_lock *l, const struct agent_lock *a)
{
    const struct lock_holder *h;

    if (l->view.nholders == 0)
        return a->holder == NULL;
    if (a->holder == NULL)
        return false;
    h = &l->view.holders[0];
    /* a holder longer than HOLDER_ID_MAX - 1 bytes is kept cut, by lockctl
     * and by the agent alike, whose tracker knows a holder by those bytes:
     * cut both and equal is the holder the agent saw, by its own rule (so
     * list, show and release judge it as the agent does); cut on one side
     * only is another holder */
    return h->id_truncated == a->holder_cut && h->idlen == a->holderlen &&
        memcmp(h->id, a->holder, a->holderlen) == 0;
}

int64_t
verdict_agent_age(const struct agent_lock *a, const char *holder, size_t holderlen)
{
    if (a == NULL || a->stale || a->first_seen_ms <= 0 || a->age_ms <= 0 ||
        a->nholders != 1 || a->holder == NULL || a->holder_cut ||
        a->holderlen != holderlen || memcmp(a->holder, holder, holderlen) != 0 ||
        a->unbroken_ms <= 0 || a->left_ms == -2)
        return 0;
    return a->unbroken_ms;
}

bool
verdict_agent_lease_is(const struct agent_lock *a, long long pttl, int64_t at_mono)
{
    int64_t since = at_mono > a->got_mono ? at_mono - a->got_mono : 0;
    long long want;

    if (a->left_ms < 0 || pttl < 0)
        return a->left_ms == -1 && pttl == -1;
    /* the slack: the agent counts the TTL from its handling of the reply,
     * a little after Redis's own */
    want = a->left_ms > since ? a->left_ms - since : 0;
    return pttl <= want + RELEASE_LEASE_SLACK_MS && pttl >= want - RELEASE_LEASE_SLACK_MS;
}

bool
verdict_judge(const struct lockstate_rules *rules, struct cli_lock *l,
              const struct agent_lock *a, int64_t now_ms)
{
    struct lockstate_facts f;
    /* the agent's times only from a view it vouches for now: a stale one
     * (its scans fail) cannot say the holder Redis shows now is the one it
     * saw (a restart between may have wiped it, and a client set it again) */
    bool acquired, agent = a != NULL && !a->stale && a->first_seen_ms > 0 &&
        verdict_same_holder(l, a);

    l->first_seen_ms = 0;
    l->renewed = false;
    if (agent) {
        l->first_seen_ms = a->first_seen_ms;
        l->renewed = a->renewed;
        l->age_ms = now_ms > a->first_seen_ms ? now_ms - a->first_seen_ms : 0;
        l->age_source = "agent";
        l->age_lower_bound = a->age_lower_bound;
        /* the agent saw a TTL and the key has none now: it lost it since
         * that scan, for how long nobody knows */
        l->nottl_ms = l->pttl_ms != -1 ? -1 : a->nottl_since_ms <= 0 ? -1
            : now_ms > a->nottl_since_ms ? now_ms - a->nottl_since_ms : 0;
    } else {
        l->age_ms = lockstate_start_age(l->idle_s, l->view.acquired_ms, now_ms, &acquired);
        l->age_source = acquired ? "acquired" : l->idle_s >= 0 ? "idletime" : "unknown";
        l->age_lower_bound = !acquired;
        /* with no tracker, the holder's age stands in for the time
         * without a TTL */
        l->nottl_ms = l->pttl_ms == -1 ? l->age_ms : -1;
    }
    lockfacts_fill(&f, l->fmt, l->pttl_ms, l->view.nholders, l->view.max_count, l->age_ms,
                   l->nottl_ms);
    l->states = lockstate_judge(rules, &f);
    l->leak_unknown = !f.semaphore && l->pttl_ms == -1 && !(l->states & LOCK_LEAKED) &&
        (l->nottl_ms < 0 || l->age_lower_bound);
    return agent;
}

bool
verdict_worse(const struct cli_lock *a, const struct cli_lock *b)
{
    int ra = snapshot_rank(a->states), rb = snapshot_rank(b->states);

    if (ra != rb)
        return ra > rb;
    if (a->leak_unknown != b->leak_unknown)
        return a->leak_unknown;
    return a->age_ms > b->age_ms;
}

bool
verdict_selected(const struct cli_lock *l, uint8_t mask)
{
    return (l->states & mask) != 0 || ((mask & LOCK_LEAKED) && l->leak_unknown);
}

const char *
verdict_state(const struct cli_lock *l)
{
    if (l->leak_unknown && !(l->states & LOCK_BAD))
        return "leaked?";
    return cli_lock_state(l);
}

void
verdict_states(const struct cli_lock *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s", l->states & LOCK_LEAKED ? "leaked, " : "",
             l->states & LOCK_LONG ? "long, " : "",
             l->states & LOCK_REENTRANT_HIGH ? "reentrant_high, " : "",
             l->leak_unknown ? "leaked?, " : "");
    if (buf[0] == '\0')
        snprintf(buf, len, "held");
    else
        buf[strlen(buf) - 2] = '\0';   /* the last ", " */
}

/* The agent's states ("held,leaked,long") as the list table writes them:
 * "leaked, long", or "held" alone. */
void
verdict_agent_states(const char *in, char *out, size_t len)
{
    const char *p = in, *e;
    size_t n = 0;

    out[0] = '\0';
    for (; *p != '\0'; p = *e == ',' ? e + 1 : e) {
        e = strchr(p, ',');
        e = e != NULL ? e : p + strlen(p);
        if (e == p || ((size_t)(e - p) == 4 && strncmp(p, "held", 4) == 0))
            continue;
        if (n >= len)           /* cut: the rest would not fit either */
            break;
        n += (size_t)snprintf(out + n, len - n, "%s%.*s", n > 0 ? ", " : "", (int)(e - p), p);
    }
    if (out[0] == '\0')
        snprintf(out, len, "held");
}

bool
verdict_age_unknown(const struct cli_lock *l)
{
    return l->age_lower_bound && l->age_ms < 1000;
}

void
verdict_age(const struct cli_lock *l, char *buf, size_t len)
{
    char d[32];

    /* ">= 0ms" reads as an age and says nothing: IDLETIME was just reset
     * (the agent's own reads on Redis < 7.2, a watchdog's renewal) */
    if (verdict_age_unknown(l)) {
        snprintf(buf, len, "unknown");
        return;
    }
    out_duration(l->age_ms, d, sizeof(d));
    snprintf(buf, len, "%s%s", l->age_lower_bound ? ">= " : "", d);
}

const char *
verdict_age_from(const struct cli_lock *l)
{
    if (l->first_seen_ms > 0)
        return "the agent";
    if (l->age_source != NULL && strcmp(l->age_source, "acquired") == 0)
        return l->acquired_registry ? "the acquisition time in the client registry"
            : "the acquisition time in the value";
    if (l->age_source != NULL && strcmp(l->age_source, "idletime") == 0)
        return "OBJECT IDLETIME, a lower bound";
    return l->idle_shared ? "nothing: a shared integer's IDLETIME is not the key's"
        : "nothing: unknown";
}
