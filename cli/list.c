/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * list.c - lockctl list: the target's locks, worst first.
 *
 * A bounded SCAN of the target's patterns (or of --pattern, kept within
 * them), the reads of inspect.c per SCAN batch, and a bounded heap of the
 * worst LIST_KEEP_MAX locks (verdict_verdict_worse(): leaked, then long, then
 * reentrant_high, then held; older first).  Before the scan it asks the
 * agent (agent.c) for its first-seen and no-TTL-since times, and judges
 * each lock with them where the agent names the holder read now; when
 * the agent does not answer, ages from OBJECT IDLETIME are lower bounds
 * and --state leaked also lists the locks without a TTL whose leak is
 * unknown.  The scan examines at most LIST_EXAMINE_MAX keys and
 * says so when it stops there ("complete": false), and it keeps to the
 * target's scan_duty like the agent, so a lockctl list during an incident
 * cannot become the incident.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/lockctl.h"
#include "collectors/redis/cluster.h"
#include "common/keyhash.h"
#include "common/keytext.h"
#include "collectors/redis/conn.h"
#include "collectors/locks/lockclass.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"
#include "collectors/scan/scan.h"

#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX     10000
#define LIST_KEEP_MAX      LIST_LIMIT_MAX
#define LIST_EXAMINE_MAX   1000000

struct list_run {
    struct lockctl *lc;
    uint8_t mask;
    const char *pattern;        /* --pattern, or NULL */
    /* heap of the kept locks, least bad at [0] */
    struct cli_lock *keep;
    size_t nkeep, keep_cap;
    uint64_t total;             /* locks matching the state */
    uint64_t examined;
    uint64_t outside;           /* keys --pattern matched outside the patterns */
    uint64_t elsewhere;         /* keys a node did not serve when read (their
                                 * slot moving, or served by none) */
    uint64_t denied;            /* of them, keys whose node said no node serves
                                 * their slot, though the cluster names it */
    bool slots_moved;           /* the cluster's slot map changed while listed */
    bool other_cluster;         /* the URL's node answered as another cluster
                                 * than the agent's: nothing read there */
    char gap[CLUSTER_RANGES_TEXT];  /* slots no node serves ("" none) */
    size_t gap_known;           /* the agent's (last known) locks there */
    bool complete;
    /* keys seen (SCAN may return one twice; patterns may overlap) */
    uint64_t *seen;
    size_t seen_cap, nseen;
    int64_t busy_since;         /* monotonic ms of the last pacing pause */
    size_t nodes;               /* cluster primaries scanned (0: not a cluster) */
    const struct lockstate_rules *rules;    /* the config's [rules] */
    struct agent_view av;       /* what the agent knows */
    uint64_t from_agent;        /* listed locks judged with the agent's times */
    uint64_t leak_unknown;      /* listed locks without a TTL, leak unknown */
};

static void
sift_down(struct cli_lock *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct cli_lock tmp;

        if (l < n && verdict_worse(&h[m], &h[l]))
            m = l;
        if (r < n && verdict_worse(&h[m], &h[r]))
            m = r;
        if (m == i)
            return;
        tmp = h[i];
        h[i] = h[m];
        h[m] = tmp;
        i = m;
    }
}

/* Keep l if it is among the worst LIST_KEEP_MAX; takes ownership.  -1 on
 * ENOMEM (l released). */
static int
offer(struct list_run *lr, struct cli_lock *l)
{
    struct cli_lock *h;

    if (lr->nkeep == lr->keep_cap && lr->keep_cap < LIST_KEEP_MAX) {
        size_t ncap = lr->keep_cap ? 4 * lr->keep_cap : 64;

        if (ncap > LIST_KEEP_MAX)
            ncap = LIST_KEEP_MAX;
        if ((h = realloc(lr->keep, ncap * sizeof(*h))) == NULL) {
            cli_lock_release(l);
            return -1;
        }
        lr->keep = h;
        lr->keep_cap = ncap;
    }
    h = lr->keep;
    if (lr->nkeep < LIST_KEEP_MAX) {
        size_t i = lr->nkeep++;

        h[i] = *l;
        while (i > 0 && verdict_worse(&h[(i - 1) / 2], &h[i])) {
            struct cli_lock tmp = h[i];

            h[i] = h[(i - 1) / 2];
            h[(i - 1) / 2] = tmp;
            i = (i - 1) / 2;
        }
        return 0;
    }
    if (!verdict_worse(l, &h[0])) {
        cli_lock_release(l);
        return 0;
    }
    cli_lock_release(&h[0]);
    h[0] = *l;
    sift_down(h, lr->nkeep, 0);
    return 0;
}

/* First time this key shows up in this listing?  -1 on ENOMEM. */
static int
first_sighting(struct list_run *lr, const char *key, size_t len)
{
    uint64_t h = keyhash(key, len), *tab;
    size_t i, mask;

    if (2 * (lr->nseen + 1) > lr->seen_cap) {
        size_t ncap = lr->seen_cap ? 2 * lr->seen_cap : 4096;

        tab = calloc(ncap, sizeof(*tab));
        if (tab == NULL)
            return -1;
        for (i = 0; i < lr->seen_cap; i++) {
            size_t j;

            if (lr->seen[i] == 0)
                continue;
            for (j = lr->seen[i] & (ncap - 1); tab[j] != 0; j = (j + 1) & (ncap - 1))
                ;
            tab[j] = lr->seen[i];
        }
        free(lr->seen);
        lr->seen = tab;
        lr->seen_cap = ncap;
    }
    mask = lr->seen_cap - 1;
    /* keyhash is never 0, so 0 marks a free slot; it is keyed per
     * process, so no one can craft a key that shares another's hash and
     * have that one left out (by chance: 2^-64 a pair) */
    for (i = h & mask; lr->seen[i] != 0; i = (i + 1) & mask)
        if (lr->seen[i] == h)
            return 0;
    lr->seen[i] = h;
    lr->nseen++;
    return 1;
}

/* Sleep to keep to the target's scan_duty, by the agent's rule. */
static void
pace(struct list_run *lr)
{
    int64_t wait = scan_duty_pause(lr->lc->t->scan_duty, clock_mono_ms() - lr->busy_since);

    if (wait > 0) {
        struct timespec ts = { (time_t)(wait / 1000), (long)(wait % 1000) * 1000000L };

        nanosleep(&ts, NULL);
        lr->busy_since = clock_mono_ms();
    }
}

/* One SCAN batch: the keys of rep's element[1] that are new and locks. */
static int
batch(struct list_run *lr, const redisReply *keys, char *err, size_t errlen)
{
    const char **kp = NULL;
    size_t *kl = NULL, n = 0, i;
    struct cli_lock *locks = NULL;
    bool *filled = NULL;
    int rc = -1;

    kp = calloc(keys->elements ? keys->elements : 1, sizeof(*kp));
    kl = calloc(keys->elements ? keys->elements : 1, sizeof(*kl));
    if (kp == NULL || kl == NULL)
        goto oom;
    for (i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        int first;

        if (k->type != REDIS_REPLY_STRING)
            continue;
        if (lr->pattern != NULL && !lockstate_in_patterns(lr->lc->t, k->str, k->len)) {
            lr->outside++;      /* --pattern narrows within the locks, never beyond */
            continue;
        }
        /* exclude_patterns: not locks; helper keys belong to their lock */
        if (lock_key_excluded(lr->lc->t, k->str, k->len) ||
            formats_helper(k->str, k->len, RAW_NONE, NULL) != HELPER_NONE)
            continue;
        if ((first = first_sighting(lr, k->str, k->len)) < 0)
            goto oom;
        if (!first)
            continue;
        kp[n] = k->str;
        kl[n++] = k->len;
    }
    lr->examined += n;
    if (n == 0) {
        rc = 0;
        goto out;
    }
    if ((locks = calloc(n, sizeof(*locks))) == NULL)
        goto oom;
    if ((filled = calloc(n, sizeof(*filled))) == NULL)
        goto oom;
    /* show's facts: a liblockwatch holder's registry (host, pid, when) */
    if (inspect_keys(lr->lc, kp, kl, n, clock_now_ms(), locks, err, errlen) == -1)
        goto out;
    if (inspect_registries(lr->lc, locks, n, filled, err, errlen) == -1) {
        for (i = 0; i < n; i++)
            cli_lock_release(&locks[i]);    /* read, none offered yet */
        goto out;
    }
    for (i = 0; i < n; i++) {
        bool agent = false;

        lr->elsewhere += locks[i].elsewhere && !locks[i].denied;
        lr->denied += locks[i].denied;
        if (locks[i].type != RAW_NONE && (lr->av.answered || filled[i]))
            agent = verdict_judge(lr->rules, &locks[i], lr->av.answered ?
                                  agent_find(&lr->av, locks[i].key, locks[i].keylen) : NULL,
                                  clock_now_ms());
        if (locks[i].type == RAW_NONE || !verdict_selected(&locks[i], lr->mask) ||
            formats_helper(locks[i].key, locks[i].keylen, locks[i].type, NULL) != HELPER_NONE) {
            cli_lock_release(&locks[i]);   /* gone meanwhile, or not asked for */
            continue;
        }
        lr->total++;
        lr->from_agent += agent;
        lr->leak_unknown += locks[i].leak_unknown;
        if (offer(lr, &locks[i]) == -1) {
            while (++i < n)
                cli_lock_release(&locks[i]);
            goto oom;
        }
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    free(filled);
    free(locks);
    free(kp);
    free(kl);
    return rc;
}

static int
scan_pattern(struct list_run *lr, const char *pattern, char *err, size_t errlen)
{
    char cursor[32] = "0", count[24];
    redisReply *rep;

    snprintf(count, sizeof(count), "%d", lr->lc->t->scan_count);
    do {
        const char *argv[6] = { "SCAN", cursor, "MATCH", pattern, "COUNT", count };

        rep = redisconn_command(lr->lc->c, lr->lc->t, "SCAN", 6, argv, NULL, err, errlen);
        if (rep == NULL)
            return -1;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
            rep->element[0]->type != REDIS_REPLY_STRING ||
            rep->element[1]->type != REDIS_REPLY_ARRAY) {
            snprintf(err, errlen, "SCAN on %s:%d: %s", lr->lc->t->host, lr->lc->t->port,
                     rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
            freeReplyObject(rep);
            return -1;
        }
        snprintf(cursor, sizeof(cursor), "%s", rep->element[0]->str);
        if (batch(lr, rep->element[1], err, errlen) == -1) {
            freeReplyObject(rep);
            return -1;
        }
        freeReplyObject(rep);
        if (lr->examined >= LIST_EXAMINE_MAX) {
            lr->complete = false;
            return 0;
        }
        pace(lr);
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

/* Every pattern (or --pattern) on the node lc is connected to. */
static int
scan_patterns(struct list_run *lr)
{
    struct lockctl *lc = lr->lc;
    char err[512];

    if (lr->pattern != NULL) {
        if (scan_pattern(lr, lr->pattern, err, sizeof(err)) == -1)
            return session_redis_error(lc, err);
        return LOCKCTL_DONE;
    }
    for (size_t i = 0; i < lc->t->npatterns && lr->complete; i++)
        if (scan_pattern(lr, lc->t->patterns[i], err, sizeof(err)) == -1)
            return session_redis_error(lc, err);
    return LOCKCTL_DONE;
}

static int
scan_node(struct list_run *lr)
{
    int rc = session_connect(lr->lc);

    return rc != LOCKCTL_DONE ? rc : scan_patterns(lr);
}

/* Did the slot map change since topo (a resharding while listed: a key
 * that moved between two nodes' SCANs is in neither)?  A discovery that
 * fails says nothing. */
static bool
slots_moved(const struct target_conf *seed, const struct cluster_topo *topo)
{
    struct cluster_topo now;
    char err[512];
    bool moved = false;

    if (cluster_discover(seed, NULL, 0, &now, err, sizeof(err)) == -1)
        return false;
    for (unsigned s = 0; s < CLUSTER_SLOTS && !moved; s++) {
        const struct cluster_shard *a = cluster_shard_of_slot(topo, s),
            *b = cluster_shard_of_slot(&now, s);

        moved = (a == NULL) != (b == NULL) || (a != NULL && (a->primary.port != b->primary.port ||
                                                             strcmp(a->primary.host,
                                                                    b->primary.host) != 0));
    }
    cluster_topo_clear(&now);
    return moved;
}

/* A cluster: SCAN sees one node's keys, so every primary is scanned in
 * turn (one connection at a time), into the one listing. */
static int
scan_cluster(struct list_run *lr)
{
    struct lockctl *lc = lr->lc;
    struct target_conf *seed = lc->t;
    struct cluster_topo topo;
    char err[512];
    int rc = LOCKCTL_DONE;

    if (cluster_discover(seed, NULL, 0, &topo, err, sizeof(err)) == -1)
        return session_redis_error(lc, err);
    /* the cluster the agent reads, or none (agent_known_nodes()) */
    if (lc->known != NULL && !cluster_kin(&topo, lc->scope.known, lc->scope.nknown)) {
        cluster_not_kin(&topo, lc->scope.known, lc->scope.nknown, err, sizeof(err));
        cluster_topo_clear(&topo);
        lr->other_cluster = true;
        return session_redis_error(lc, err);
    }
    /* their keys cannot be read now: what the agent last knew of them is
     * counted, never shown as read */
    if (cluster_uncovered(&topo, lr->gap, sizeof(lr->gap)) > 0)
        for (size_t k = 0; k < lr->av.nlocks; k++)
            lr->gap_known += cluster_shard_of_slot(&topo, cluster_keyslot(
                lr->av.locks[k].key, lr->av.locks[k].keylen)) == NULL;
    for (size_t i = 0; i < topo.nshards && rc == LOCKCTL_DONE && lr->complete; i++) {
        redisconn_node(seed, topo.shards[i].primary.host, topo.shards[i].primary.port,
                       &lc->node);
        lc->t = &lc->node;
        if ((lc->c = redisconn_open(lc->t, err, sizeof(err))) == NULL) {
            rc = session_redis_error(lc, err);
            break;
        }
        lc->slot_shard = topo.slot_shard;
        rc = scan_patterns(lr);
        lc->slot_shard = NULL;
        redisFree(lc->c);
        lc->c = NULL;
    }
    lr->nodes = topo.nshards;
    lc->t = seed;
    if (rc == LOCKCTL_DONE)
        lr->slots_moved = slots_moved(seed, &topo);
    cluster_topo_clear(&topo);
    return rc;
}

static int
print_table(struct list_run *lr, size_t count, const char *state)
{
    struct table t;
    char addr[300];
    size_t i;

    table_init(&t, list_table_cols, list_table_ncols);
    for (i = 0; i < count; i++) {
        const struct cli_lock *l = &lr->keep[i];
        char holder[OUT_HOLDER_MAX(HOLDER_ID_MAX) + 35], holds[24], ttl[24], age[24];
        char states[64];
        size_t hlen = 0;
        const char *cells[7];
        size_t lens[7];

        if (l->view.nholders > 0) {
            hlen = out_holder_shown(&l->view.holders[0], holder, sizeof(holder) - 32);
            if (l->view.holders_total > 1)
                hlen += (size_t)snprintf(holder + hlen, sizeof(holder) - hlen, " (+%zu)",
                                         l->view.holders_total - 1);
        }
        snprintf(holds, sizeof(holds), "%ld", l->view.max_count);
        out_ttl(l->pttl_ms, ttl, sizeof(ttl));
        verdict_age(l, age, sizeof(age));
        cells[0] = l->key, lens[0] = l->keylen;
        cells[1] = l->fmt->name, lens[1] = strlen(l->fmt->name);
        cells[2] = holder, lens[2] = hlen;
        cells[3] = holds, lens[3] = strlen(holds);
        cells[4] = ttl, lens[4] = strlen(ttl);
        cells[5] = age, lens[5] = strlen(age);
        verdict_states(l, states, sizeof(states));
        cells[6] = states, lens[6] = strlen(states);
        if (table_add(&t, cells, lens) == -1) {
            table_release(&t);
            lockctl_warnx("out of memory");
            return LOCKCTL_REDIS;
        }
    }
    session_address(lr->lc, addr, sizeof(addr));
    if (count > 0)
        table_print(&t, stdout, lockctl_width(lr->lc));
    table_release(&t);
    if (lr->nodes > 0) {
        size_t n = strlen(addr);

        snprintf(addr + n, sizeof(addr) - n, ", %zu cluster primar%s", lr->nodes,
                 lr->nodes == 1 ? "y" : "ies");
    }
    table_line(stdout, lockctl_width(lr->lc),
               "%zu of %llu lock%s (state %s) on target %s (%s); %llu key%s examined%s",
           count, (unsigned long long)lr->total, lr->total == 1 ? "" : "s", state,
           lr->lc->t->name, addr, (unsigned long long)lr->examined,
           lr->examined == 1 ? "" : "s",
           lr->complete ? "" : "; stopped at the cap: narrow it with --pattern");
    if (lr->gap[0] != '\0' && lr->av.answered)
        table_line(stdout, lockctl_width(lr->lc), "no node serves slots %s: their locks are "
                   "unknown now, not listed (the agent's last known there: %zu; lockctl show "
                   "KEY, or its /api/v1/locks?target=%s, marked stale)", lr->gap, lr->gap_known,
                   lr->lc->t->name);
    else if (lr->gap[0] != '\0')
        table_line(stdout, lockctl_width(lr->lc), "no node serves slots %s: their locks are "
                   "unknown now, not listed (the agent, when it runs, keeps those it last knew)",
                   lr->gap);
    if (lr->elsewhere > 0)
        table_line(stdout, lockctl_width(lr->lc), "%llu key%s not read: %s",
                   (unsigned long long)lr->elsewhere, lr->elsewhere == 1 ? "" : "s",
                   lr->gap[0] ? "in those slots, or moving between nodes while listed"
                   : "moving between nodes while listed: run list again");
    if (lr->denied > 0)
        table_line(stdout, lockctl_width(lr->lc), "%llu key%s not read: their node says no "
                   "node serves their slot, though the cluster names it (a CLUSTER DELSLOTS on "
                   "that node alone?); nobody can read them there", (unsigned long long)lr->denied,
                   lr->denied == 1 ? "" : "s");
    if (lr->slots_moved)
        table_line(stdout, lockctl_width(lr->lc), "the cluster's slots moved while it was "
                   "listed (a resharding): a key that moved between two nodes' scans is in "
                   "neither; run list again once it is done");
    if (lr->outside > 0)
        table_line(stdout, lockctl_width(lr->lc), "--pattern %s matched %llu key%s outside the "
                   "target's patterns, not listed: --pattern narrows within them, never "
                   "beyond", lr->pattern, (unsigned long long)lr->outside,
                   lr->outside == 1 ? "" : "s");
    agent_print_note(&lr->av, lr->from_agent, stdout, lockctl_width(lr->lc));
    if (lr->leak_unknown > 0)
        table_line(stdout, lockctl_width(lr->lc), "leaked? = no TTL, for how long is unknown (%llu "
                   "lock%s): check it before waiting for an alert",
                   (unsigned long long)lr->leak_unknown, lr->leak_unknown == 1 ? "" : "s");
    return LOCKCTL_DONE;
}

/* Whether the comma-separated states have state ("all": any). */
static bool
has_state(const char *states, const char *state)
{
    size_t n = strlen(state);
    const char *p = states;

    if (strcmp(state, "all") == 0)
        return true;
    while ((p = strstr(p, state)) != NULL) {
        if ((p == states || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
        p += n;
    }
    return false;
}

/* The comma-separated states as the JSON array every other "states" is. */
static json_t *
states_array(const char *states)
{
    json_t *arr = json_array();
    const char *p = states, *e;

    while (arr != NULL && *p != '\0') {
        e = strchr(p, ',');
        if (e == NULL)
            e = p + strlen(p);
        if (e > p)
            json_array_append_new(arr, json_stringn(p, (size_t)(e - p)));
        p = *e == ',' ? e + 1 : e;
    }
    return arr != NULL ? arr : json_null();
}

static const struct table_col agent_cols[] = {
    { "KEY", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    { "HOLDER", 22, TABLE_MIDDLE | TABLE_OPTIONAL, 10 },
    { "AGE", 10, TABLE_RIGHT, 0 },
    { "TTL", 8, TABLE_RIGHT, 0 },           /* as its scan read it */
    { "STATE", 28, TABLE_WRAP, 15 },
};

/* The stale shards' slot ranges as an array (av->stale_shard, ", "
 * between them); [] when the whole target is stale, or nothing is. */
static json_t *
stale_shards_json(const struct agent_view *av)
{
    json_t *a = json_array();
    const char *p = av->stale_shard, *comma;

    while (a != NULL && *p != '\0') {
        comma = strstr(p, ", ");
        json_array_append_new(a, json_stringn(p, comma != NULL ? (size_t)(comma - p) : strlen(p)));
        p = comma != NULL ? comma + 2 : p + strlen(p);
    }
    return a;
}

/* A last known lock's last good read: its own (its shard's), else the
 * view's. */
static int64_t
stale_last(const struct agent_view *av, const struct agent_lock *a)
{
    return a->stale_last_ms > 0 ? a->stale_last_ms : av->last_success_ms;
}

/* The agent's locks as a table like list's own (terminal-safe, fit to
 * width); the rows printed. */
static size_t
print_agent_table(struct list_run *lr, size_t limit, const char *state, size_t width)
{
    const struct agent_view *av = &lr->av;
    struct table t;
    size_t i, n = 0;

    table_init(&t, agent_cols, sizeof(agent_cols) / sizeof(agent_cols[0]));
    for (i = 0; i < av->nlocks && n < limit; i++) {
        const struct agent_lock *a = &av->locks[i];
        char holder[OUT_HOLDER_MAX(HOLDER_ID_MAX) + 32], age[24], st[96], ttl[24];
        const char *cells[5];
        size_t lens[5];

        if (!has_state(a->states, state))
            continue;
        verdict_agent_states(a->states, st, sizeof(st));
        if (a->stale && av->stale_shard[0])     /* the others of the table are current */
            snprintf(st + strlen(st), sizeof(st) - strlen(st), " (stale)");
        /* a last known lock's age as of that scan, as its TTL is (show
         * says so: "then"; an on-call trial found list mixing the two) */
        if (a->stale && stale_last(av, a) > a->first_seen_ms && a->first_seen_ms > 0)
            out_duration(stale_last(av, a) - a->first_seen_ms, age, sizeof(age));
        else if (a->age_ms >= 0)
            out_duration(a->age_ms, age, sizeof(age));
        else
            snprintf(age, sizeof(age), "unknown");
        cells[0] = a->key;
        lens[0] = a->keylen;
        cells[1] = holder;
        lens[1] = a->holder != NULL ? out_holder(a->holder, a->holderlen, holder, sizeof(holder))
            : (size_t)snprintf(holder, sizeof(holder), "-");
        cells[2] = age;
        lens[2] = strlen(age);
        if (a->pttl_ms == -2)
            snprintf(ttl, sizeof(ttl), "?");
        else
            out_ttl(a->pttl_ms, ttl, sizeof(ttl));
        cells[3] = ttl;
        lens[3] = strlen(ttl);
        cells[4] = st;
        lens[4] = strlen(st);
        if (table_add(&t, cells, lens) == -1)
            break;
        n++;
    }
    if (n > 0)
        table_print(&t, stdout, width);
    table_release(&t);
    return n;
}

/*
 * Redis did not answer, but the agent did: its view, said to be the
 * agent's and, when it cannot scan the target either, the last known one
 * (from its last good scan, with why it is blind).  The exit code stays
 * LOCKCTL_REDIS: the locks were not read now.
 */
static void
print_last_known(struct list_run *lr, size_t limit, const char *state)
{
    const struct agent_view *av = &lr->av;
    json_t *root, *locks, *o;
    char ago[32] = "";
    size_t i, n = 0;

    if (av->stale_reason[0] && av->last_success_ms > 0)
        out_duration(clock_now_ms() - av->last_success_ms, ago, sizeof(ago));
    if (!lr->lc->json) {
        size_t width = lockctl_width(lr->lc);

        if (av->nothing_known) {
            agent_print_nothing_known(av, lr->lc->t->name, stdout, width);
            return;
        }
        if (av->stale_shard[0])
            /* one cluster shard: the others' locks are current */
            table_line(stdout, width, "FROM THE AGENT at %s (Redis did not answer lockctl). It "
                       "cannot read it either: target %s's shard%s %s%s. %s locks are its "
                       "last known, marked (stale), with ages and TTLs as of its last good read "
                       "of %s%s%s%s:", av->url, lr->lc->t->name,
                       av->nstale_shards > 1 ? "s" : "", av->stale_shard, agent_shard_reason(av),
                       av->nstale_shards > 1 ? "Their" : "That shard's",
                       av->nstale_shards > 1 ? "each" : "it",
                       ago[0] && av->nstale_shards <= 1 ? ", " : "",
                       av->nstale_shards > 1 ? "" : ago,
                       ago[0] && av->nstale_shards <= 1 ? " ago" : "");
        else if (av->stale_reason[0])
            table_line(stdout, width, "LAST KNOWN (stale): the agent at %s cannot scan target "
                       "%s either (%s); its last good scan%s%s%s, ages and TTLs as of then:",
                       av->url, lr->lc->t->name, av->stale_reason, ago[0] ? ", " : "", ago,
                       ago[0] ? " ago" : "");
        else
            table_line(stdout, width, "FROM THE AGENT at %s (its last scan; %s):", av->url,
                       lr->other_cluster ? "the target's url answered as another cluster"
                       : "Redis did not answer lockctl");
        n = print_agent_table(lr, limit, state, width);
        if (n == 0)
            table_line(stdout, width, "(none %s)", strcmp(state, "all") == 0 ? "kept" : state);
        return;
    }
    root = json_object();
    locks = json_array();
    for (i = 0; root != NULL && locks != NULL && i < av->nlocks && n < limit; i++) {
        const struct agent_lock *a = &av->locks[i];

        if (!has_state(a->states, state))
            continue;
        if ((o = json_object()) == NULL)
            break;
        json_object_set_new(o, "key", lockjson_text(a->key, a->keylen));
        json_object_set_new(o, "key_escaped", lockjson_escaped(a->key, a->keylen));
        json_object_set_new(o, "holder", a->holder ? lockjson_text(a->holder, a->holderlen)
                            : json_null());
        json_object_set_new(o, "states", states_array(a->states));
        json_object_set_new(o, "first_seen_ms", json_integer(a->first_seen_ms));
        json_object_set_new(o, "pttl_ms", a->pttl_ms != -2 ? json_integer(a->pttl_ms) :
                            json_null());
        json_object_set_new(o, "stale", json_boolean(a->stale));
        json_array_append_new(locks, o);
        n++;
    }
    if (root == NULL || locks == NULL) {
        json_decref(root);
        json_decref(locks);
        return;
    }
    json_object_set_new(root, "target", json_string(lr->lc->t->name));
    json_object_set_new(root, "source", json_string("agent"));
    json_object_set_new(root, "redis", json_string(lr->other_cluster ? "another_cluster"
                                                   : "unreachable"));
    json_object_set_new(root, "stale", json_boolean(av->stale_reason[0] != '\0'));
    json_object_set_new(root, "nothing_known", json_boolean(av->nothing_known));
    json_object_set_new(root, "stale_reason", av->stale_reason[0] ?
                        json_string(av->stale_reason) : json_null());
    json_object_set_new(root, "stale_shards", stale_shards_json(av));
    json_object_set_new(root, "last_success_ms", av->last_success_ms > 0 ?
                        json_integer(av->last_success_ms) : json_null());
    json_object_set_new(root, "state", json_string(state));
    json_object_set_new(root, "count", json_integer((json_int_t)n));
    json_object_set_new(root, "locks", locks);
    out_json_print(root);
}

static int
print_json(struct list_run *lr, size_t count, const char *state)
{
    json_t *root = json_object(), *locks = json_array(), *pats = json_array();
    char addr[300];
    size_t i;

    if (root == NULL || locks == NULL || pats == NULL)
        goto oom;
    session_address(lr->lc, addr, sizeof(addr));
    for (i = 0; i < lr->lc->t->npatterns; i++)
        json_array_append_new(pats, json_string(lr->lc->t->patterns[i]));
    for (i = 0; i < count; i++) {
        json_t *o = cli_lock_json(lr->lc, &lr->keep[i]);

        if (o == NULL || json_array_append_new(locks, o) == -1)
            goto oom;
    }
    json_object_set_new(root, "target", json_string(lr->lc->t->name));
    json_object_set_new(root, "address", json_string(addr));
    if (lr->nodes > 0)
        json_object_set_new(root, "cluster_primaries", json_integer((json_int_t)lr->nodes));
    json_object_set_new(root, "state", json_string(state));
    json_object_set_new(root, "patterns", pats);
    pats = NULL;
    json_object_set_new(root, "pattern", lr->pattern ? lockjson_text(lr->pattern,
                        strlen(lr->pattern)) : json_null());
    json_object_set_new(root, "keys_examined", json_integer((json_int_t)lr->examined));
    json_object_set_new(root, "keys_outside_patterns", json_integer((json_int_t)lr->outside));
    json_object_set_new(root, "keys_not_read", json_integer((json_int_t)(lr->elsewhere +
                                                                         lr->denied)));
    json_object_set_new(root, "keys_not_served_by_their_node",
                        json_integer((json_int_t)lr->denied));
    json_object_set_new(root, "slots_moved", json_boolean(lr->slots_moved));
    json_object_set_new(root, "slots_unserved", lr->gap[0] ? json_string(lr->gap) : json_null());
    json_object_set_new(root, "unserved_known_to_agent", json_integer((json_int_t)lr->gap_known));
    json_object_set_new(root, "count", json_integer((json_int_t)count));
    json_object_set_new(root, "total", json_integer((json_int_t)lr->total));
    json_object_set_new(root, "complete", json_boolean(lr->complete));
    json_object_set_new(root, "age_source", json_string(lr->av.answered ? "agent" : "redis"));
    json_object_set_new(root, "agent", agent_json(&lr->av, lr->from_agent));
    json_object_set_new(root, "leak_unknown", json_integer((json_int_t)lr->leak_unknown));
    json_object_set_new(root, "locks", locks);
    return out_json_print(root) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS;
oom:
    json_decref(root);
    json_decref(locks);
    json_decref(pats);
    lockctl_warnx("out of memory");
    return LOCKCTL_REDIS;
}

int
cmd_list(struct lockctl *lc, int argc, char **argv)
{
    static const struct option opts[] = {
        { "state", required_argument, NULL, 's' },
        { "pattern", required_argument, NULL, 'p' },
        { "limit", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    struct list_run lr;
    const char *state = "all";
    char *end;
    long limit = LIST_LIMIT_DEFAULT;
    size_t count, i;
    int opt, rc;

    memset(&lr, 0, sizeof(lr));
    lr.lc = lc;
    lr.complete = true;
    lc->stay = true;            /* each node's keys, where SCAN found them */
    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "s:p:n:h", opts, NULL)) != -1) {
        {
            int common = session_common_option(lc, opt, optarg);

            if (common < 0)
                return LOCKCTL_USAGE;   /* a bad value: said */
            if (common > 0)
                continue;
        }
        switch (opt) {
        case 's':
            state = optarg;
            break;
        case 'p':
            lr.pattern = optarg;
            break;
        case 'n':
            limit = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || limit < 1 || limit > LIST_LIMIT_MAX) {
                lockctl_warnx("list: --limit must be an integer from 1 to %d",
                              LIST_LIMIT_MAX);
                return LOCKCTL_USAGE;
            }
            break;
        case 'h':
            lockctl_command_help("list", stdout);
            return LOCKCTL_DONE;
        default:
            lockctl_command_help("list", stderr);
            return LOCKCTL_USAGE;
        }
    }
    if (optind != argc) {
        lockctl_warnx("list: unexpected argument \"%s\"", argv[optind]);
        return LOCKCTL_USAGE;
    }
    if (lockstate_mask(state, &lr.mask) == -1) {
        lockctl_warnx("list: --state must be leaked, long, reentrant_high, held or all");
        return LOCKCTL_USAGE;
    }
    if ((rc = session_load(lc)) != LOCKCTL_DONE)
        return rc;
    lr.rules = &lc->cfg->rules.judge;
    if ((rc = agent_consult(lc, &lr.av, NULL, 0)) != LOCKCTL_DONE)
        return rc;
    agent_drop_elsewhere(lc, &lr.av);
    agent_known_nodes(lc, &lr.av);  /* a cluster: where the agent reads it */
    lr.busy_since = clock_mono_ms();
    rc = lc->t->mode == TARGET_CLUSTER ? scan_cluster(&lr) : scan_node(&lr);
    if (rc == LOCKCTL_DONE) {
        /* heap sort: moving the least bad to the end, one by one, leaves
         * the array worst first */
        for (count = lr.nkeep; count > 1; count--) {
            struct cli_lock tmp = lr.keep[0];

            lr.keep[0] = lr.keep[count - 1];
            lr.keep[count - 1] = tmp;
            sift_down(lr.keep, count - 1, 0);
        }
        count = lr.nkeep < (size_t)limit ? lr.nkeep : (size_t)limit;
        rc = lc->json ? print_json(&lr, count, state) : print_table(&lr, count, state);
    } else if (rc == LOCKCTL_REDIS && lr.av.answered) {
        print_last_known(&lr, (size_t)limit, state);
    }
    for (i = 0; i < lr.nkeep; i++)
        cli_lock_release(&lr.keep[i]);
    free(lr.keep);
    free(lr.seen);
    agent_view_release(&lr.av);
    return rc;
}
