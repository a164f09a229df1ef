/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * leader.c - the leader election among replicas (agent/leader.h): one
 * thread, one liblockwatch client and one plain fenced lock, and the
 * companion key that names the replica leading.
 *
 * The lease is counted on CLOCK_BOOTTIME, which runs on while the process
 * is stopped and while the machine sleeps, as the lock's TTL in Redis
 * does: a leader resumed after either has no lease left by its own count
 * before it sends anything.  The margin (100 ms + 5% of the lease) covers
 * the two clocks' rates.  liblockwatch's watchdog is not used: the agent
 * needs the moment each renewal was sent to bound its lease, so the
 * thread renews with lw_extend() itself.
 *
 * When the lock's target cannot be reached for longer than the lease plus
 * a second, no replica's term can still be running through it, so none
 * can prove it leads: this agent then speaks to the direct sinks itself,
 * unfenced (leader_fence() < 0), rather than let a page go unsent because
 * the one Redis that elects was down.  A replica that reaches it while
 * this one does not (a partition) may speak too: a duplicate, not silence.
 */
#include "agent/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/lockwatch.h"
#include "collectors/redis/conn.h"
#include "common/clock.h"
#include "common/log.h"
#include "conf/shard.h"

struct leader {
    pthread_mutex_t mu;         /* guards cfg, tc and the state below */
    pthread_cond_t cv;
    pthread_t thread;
    bool running;
    atomic_int stop;
    const struct config *cfg;
    const struct target_conf *tc;
    char key[CONFIG_NAME_MAX + 64];
    char who[CONFIG_NAME_MAX + 80];     /* <key>:replica */
    int64_t lease_ms;
    lw_client *lw;              /* the thread's */
    lw_lock_t *lock;            /* held (maybe past its lease), or NULL */
    redisContext *rc;           /* for the companion key; NULL: not open */
    /* under mu */
    long long fence;            /* the term's token; 0 following */
    int64_t valid_until;        /* CLOCK_BOOTTIME ms */
    int64_t unreach_since;      /* CLOCK_BOOTTIME ms of the first failure to
                                 * reach its Redis (no connection, no reply;
                                 * an error reply is an answer) since it
                                 * last answered; 0 reachable */
    bool said_unelected;
    int64_t busy_ms;            /* Unix ms the lock was last seen held by
                                 * another replica; 0 never */
    int64_t own_ms;             /* Unix ms this agent last led; 0 never */
    int64_t own_before_ms;      /* own_ms when its term began: the last
                                 * moment its term before was known to run */
    bool kick;                  /* leader_kick(): try the lock now */
    bool said_expired;
    char holder[CONFIG_NAME_MAX + 1];
    char err[256];
    uint64_t terms;
};

static int64_t
lease_clock(void)
{
    return clock_ms_of(CLOCK_BOOTTIME);
}

static const char *
replica_of(const struct config *cfg)
{
    return cfg->replica != NULL ? cfg->replica : "-";
}

void
leader_key(const struct config *cfg, char *buf, size_t len)
{
    const char *g = cfg->leader_group != NULL ? cfg->leader_group : "default";

    if (cfg->shard_total > 1)
        snprintf(buf, len, "lockwatch:leader:%s.%dof%d", g, cfg->shard_index,
                 cfg->shard_total);
    else
        snprintf(buf, len, "lockwatch:leader:%s", g);
}

/* Unreachable for longer than any term through it can last?  Under mu. */
static bool
unelected(const struct leader *l)
{
    return l->unreach_since != 0 && lease_clock() - l->unreach_since >= l->lease_ms + 1000;
}

/* Record a failure to reach the lock; logged when the reason changes. */
static void
set_err(struct leader *l, const char *what, const char *why)
{
    char now[sizeof(l->err)];

    snprintf(now, sizeof(now), "%s: %s", what, why);
    pthread_mutex_lock(&l->mu);
    if (strcmp(now, l->err) != 0)
        log_warnx("leader: %s", now);
    memcpy(l->err, now, sizeof(l->err));
    pthread_mutex_unlock(&l->mu);
}

/* Did the lock's Redis answer (anything, an error reply included)? */
static void
set_reached(struct leader *l, bool answered)
{
    pthread_mutex_lock(&l->mu);
    if (answered) {
        if (l->said_unelected)
            log_info("leader: %s reachable again; direct sinks hear the elected leader only",
                     l->key);
        l->unreach_since = 0;
        l->said_unelected = false;
    } else if (l->unreach_since == 0) {
        l->unreach_since = lease_clock();
    }
    pthread_mutex_unlock(&l->mu);
}

/* Did a connect that failed end in the server's error reply to AUTH or
 * SELECT (a wrong password, an ACL), an answer, rather than in none?
 * Both connection layers word it so: liblockwatch "Redis at H:P refused
 * AUTH: ...", collectors/redis/conn.c "AUTH on H:P refused: ..." (a
 * TCP "Connection refused" is neither). */
static bool
refused_reply(const char *why)
{
    return strstr(why, " refused AUTH") != NULL || strstr(why, " refused SELECT") != NULL ||
           ((strncmp(why, "AUTH on ", 8) == 0 || strncmp(why, "SELECT on ", 10) == 0) &&
            strstr(why, " refused: ") != NULL);
}

/* The lock answered (taken, renewed, or held by another). */
static void
clear_err(struct leader *l)
{
    pthread_mutex_lock(&l->mu);
    if (l->err[0] != '\0')
        log_info("leader: %s answers again", l->key);
    l->err[0] = '\0';
    pthread_mutex_unlock(&l->mu);
    set_reached(l, true);
}

/* Say once that this agent now speaks unelected. */
static void
note_unelected(struct leader *l)
{
    pthread_mutex_lock(&l->mu);
    if (unelected(l) && !l->said_unelected) {
        log_warnx("leader: %s unreachable for longer than the lease + 1s, so no replica can "
                  "lead through it: this agent sends to the direct sinks itself, unfenced, "
                  "until it is reachable (another replica may too)", l->key);
        l->said_unelected = true;
    }
    pthread_mutex_unlock(&l->mu);
}

static int
connect_lw(struct leader *l)
{
    const struct target_conf *t = l->tc;
    lw_options o;
    lw_error e;

    lw_options_init(&o);
    o.host = t->host;
    o.port = t->port;
    o.username = t->user;
    o.password = t->password;
    o.db = t->db;
    o.connect_timeout_ms = (int)t->connect_timeout_ms;
    o.command_timeout_ms = (int)t->command_timeout_ms;
    o.report = 0;               /* the agent samples nobody's waits */
    o.tls = t->tls;
    o.tls_ca_file = t->tls_ca_file;
    o.tls_ca_dir = t->tls_ca_dir;
    o.tls_cert_file = t->tls_cert_file;
    o.tls_key_file = t->tls_key_file;
    o.tls_server_name = t->tls_server_name;
    o.tls_verify = t->tls_verify;
    if ((l->lw = lw_connect(&o, &e)) == NULL) {
        set_err(l, t->name, e.str);
        return refused_reply(e.str) ? -2 : -1;
    }
    return 0;
}

/* Lose the term: from now on leader_fence() is 0.  why says why and
 * what follows, for the log. */
static void
depose(struct leader *l, const char *why)
{
    pthread_mutex_lock(&l->mu);
    if (l->fence != 0)
        log_warnx("leader: no longer leading %s (fence %lld): %s", l->key, l->fence, why);
    if (l->fence != 0 && lease_clock() < l->valid_until)
        l->own_ms = clock_now_ms();     /* it led up to now */
    l->fence = 0;
    l->valid_until = 0;
    l->holder[0] = '\0';          /* who leads now: the companion key says */
    pthread_mutex_unlock(&l->mu);
}

static void
try_take(struct leader *l)
{
    int64_t t0 = lease_clock();
    lw_error e;
    lw_status st = lw_trylock(l->lw, l->key, l->lease_ms, LW_FENCING, &l->lock, &e);

    if (st == LW_BUSY) {
        clear_err(l);
        pthread_mutex_lock(&l->mu);
        l->busy_ms = clock_now_ms();        /* another replica's term runs */
        pthread_mutex_unlock(&l->mu);
        return;
    }
    if (st != LW_OK) {
        set_err(l, l->key, e.str);
        return;
    }
    clear_err(l);
    pthread_mutex_lock(&l->mu);
    l->fence = lw_lock_fence(l->lock);
    l->valid_until = t0 + l->lease_ms - (100 + l->lease_ms / 20);
    l->said_expired = false;
    l->own_before_ms = l->own_ms;
    l->terms++;
    snprintf(l->holder, sizeof(l->holder), "%s", replica_of(l->cfg));
    log_info("leader: leading %s as replica %s (fence %lld)", l->key, l->holder, l->fence);
    pthread_mutex_unlock(&l->mu);
}

static void
renew(struct leader *l)
{
    int64_t t1 = lease_clock();
    lw_error e;
    lw_status st = lw_extend(l->lock, l->lease_ms, &e);

    if (st == LW_OK) {
        clear_err(l);
        pthread_mutex_lock(&l->mu);
        l->valid_until = t1 + l->lease_ms - (100 + l->lease_ms / 20);
        l->said_expired = false;
        pthread_mutex_unlock(&l->mu);
        return;
    }
    if (st == LW_LOST) {
        clear_err(l);                   /* Redis answered */
        depose(l, "the lock expired or another replica holds it; this agent stops sending "
               "to the direct sinks");
        lw_unlock(l->lock, NULL);       /* frees it; touches nobody's lock */
        l->lock = NULL;
        return;
    }
    set_err(l, l->key, e.str);
    pthread_mutex_lock(&l->mu);
    if (l->fence != 0 && lease_clock() >= l->valid_until && !l->said_expired) {
        log_warnx("leader: the lease of %s ran out before a renewal got through; not "
                  "leading until one does", l->key);
        l->said_expired = true;
    }
    pthread_mutex_unlock(&l->mu);
}

/* The companion key: the leader writes its name there, followers read
 * it.  Best effort: a failure only leaves "who leads" unknown. */
static void
sync_holder(struct leader *l, bool leading)
{
    char err[256], lease[24];
    const char *argv[5];
    enum redisconn_closed why;
    redisReply *r;

    if (l->rc == NULL && (l->rc = redisconn_open(l->tc, err, sizeof(err))) == NULL) {
        set_reached(l, refused_reply(err));
        return;
    }
    snprintf(lease, sizeof(lease), "%lld", (long long)l->lease_ms);
    argv[0] = leading ? "SET" : "GET";
    argv[1] = l->who;
    argv[2] = replica_of(l->cfg);
    argv[3] = "PX";
    argv[4] = lease;
    r = redisconn_command(l->rc, l->tc, "leader", leading ? 5 : 2, argv, NULL, err,
                          sizeof(err));
    if (r == NULL && redisconn_closed(l->rc, &why)) {
        /* closed while it waited (the server's idle timeout, a proxy's,
         * CLIENT KILL): no outage; open it again and ask once more (a GET,
         * or a SET of this replica's own name: both safe to repeat) */
        redisFree(l->rc);
        if ((l->rc = redisconn_open(l->tc, err, sizeof(err))) != NULL)
            r = redisconn_command(l->rc, l->tc, "leader", leading ? 5 : 2, argv, NULL, err,
                                  sizeof(err));
    }
    if (r == NULL) {
        if (l->rc != NULL)
            redisFree(l->rc);
        l->rc = NULL;
        set_reached(l, false);
        pthread_mutex_lock(&l->mu);
        if (!leading)
            l->holder[0] = '\0';     /* unknown, not the last one read */
        pthread_mutex_unlock(&l->mu);
        return;
    }
    set_reached(l, true);
    pthread_mutex_lock(&l->mu);
    if (!leading)
        snprintf(l->holder, sizeof(l->holder), "%.*s",
                 r->type == REDIS_REPLY_STRING ? (int)r->len : 0,
                 r->type == REDIS_REPLY_STRING ? r->str : "");
    pthread_mutex_unlock(&l->mu);
    freeReplyObject(r);
}

static void
leader_wait(struct leader *l, int64_t ms)
{
    int64_t deadline = clock_deadline(ms);

    pthread_mutex_lock(&l->mu);
    while (!atomic_load(&l->stop) && !l->kick)
        if (clock_cond_wait_until(&l->cv, &l->mu, deadline) == ETIMEDOUT)
            break;
    l->kick = false;
    pthread_mutex_unlock(&l->mu);
}

static void *
leader_main(void *arg)
{
    struct leader *l = arg;
    int64_t follow_ms = l->lease_ms / 5 < 1000 ? l->lease_ms / 5 : 1000;
    int rc;

    while (!atomic_load(&l->stop)) {
        if (l->lw == NULL && (rc = connect_lw(l)) < 0) {
            /* refused (-2) is an answer: no lead, but no unfenced sending
             * either (docs/deploying.md "When no replica can lead") */
            set_reached(l, rc == -2);
            note_unelected(l);
            leader_wait(l, 1000);
            continue;
        }
        if (l->lock == NULL)
            try_take(l);
        else
            renew(l);
        sync_holder(l, leader_fence(l) > 0);
        note_unelected(l);
        leader_wait(l, l->lock != NULL ? l->lease_ms / 3 : follow_ms);
    }
    return NULL;
}

static int
leader_run(struct leader *l)
{
    int err;

    atomic_store(&l->stop, 0);
    if ((err = pthread_create(&l->thread, NULL, leader_main, l)) != 0) {
        errno = err;
        return -1;
    }
    l->running = true;
    return 0;
}

static void
leader_halt(struct leader *l)
{
    if (!l->running)
        return;
    pthread_mutex_lock(&l->mu);
    atomic_store(&l->stop, 1);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->running = false;
}

static void
bind_cfg(struct leader *l, const struct config *cfg)
{
    l->cfg = cfg;
    l->tc = config_target_anywhere(cfg, cfg->leader_target);
    l->lease_ms = cfg->leader_lease_ms;
    leader_key(cfg, l->key, sizeof(l->key));
    snprintf(l->who, sizeof(l->who), "%s:replica", l->key);
}

/* What prev knew of who spoke to the direct sinks, into l (not started). */
static void
inherit(struct leader *l, struct leader *prev)
{
    pthread_mutex_lock(&prev->mu);
    l->busy_ms = prev->busy_ms;
    l->own_ms = prev->fence != 0 && lease_clock() < prev->valid_until ? clock_now_ms() :
                prev->own_ms;
    pthread_mutex_unlock(&prev->mu);
}

struct leader *
leader_start(const struct config *cfg, struct leader *prev)
{
    struct leader *l = calloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    if (clock_cond_init(&l->cv) != 0) {
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    if (prev != NULL)
        inherit(l, prev);
    bind_cfg(l, cfg);
    if (l->tc == NULL || leader_run(l) == -1) {
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cv);
        free(l);
        return NULL;
    }
    return l;
}

static bool
same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool
leader_same(const struct config *a, const struct config *b)
{
    const struct target_conf *ta, *tb;

    if (!same_str(a->leader_target, b->leader_target) ||
        !same_str(a->leader_group, b->leader_group) || !same_str(a->replica, b->replica) ||
        a->leader_lease_ms != b->leader_lease_ms || a->shard_index != b->shard_index ||
        a->shard_total != b->shard_total)
        return false;
    if (a->leader_target == NULL)
        return true;
    ta = config_target_anywhere(a, a->leader_target);
    tb = config_target_anywhere(b, b->leader_target);
    return ta != NULL && tb != NULL && same_str(ta->url, tb->url) &&
           same_str(ta->password, tb->password);
}

void
leader_rebind(struct leader *l, const struct config *cfg)
{
    leader_halt(l);
    pthread_mutex_lock(&l->mu);
    bind_cfg(l, cfg);
    pthread_mutex_unlock(&l->mu);
    if (l->rc != NULL) {
        redisFree(l->rc);       /* opened with the old config's target */
        l->rc = NULL;
    }
    if (leader_run(l) == -1)
        log_warn("leader: cannot restart its thread after the reload");
}

void
leader_kick(struct leader *l)
{
    if (l == NULL)
        return;
    pthread_mutex_lock(&l->mu);
    l->kick = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void
leader_stop(struct leader *l, const char *why)
{
    if (l == NULL)
        return;
    leader_halt(l);
    if (l->lock != NULL) {
        depose(l, why);
        lw_unlock(l->lock, NULL);       /* a follower takes over now */
    }
    lw_client_free(l->lw);
    if (l->rc != NULL)
        redisFree(l->rc);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

long long
leader_fence(struct leader *l)
{
    long long f = 0;

    if (l == NULL)
        return 0;
    pthread_mutex_lock(&l->mu);
    if (l->fence != 0 && lease_clock() < l->valid_until) {
        f = l->fence;
        l->own_ms = clock_now_ms();
    } else if (unelected(l)) {
        f = LEADER_UNELECTED;
    }
    pthread_mutex_unlock(&l->mu);
    return f;
}

int64_t
leader_quiet_since(struct leader *l)
{
    int64_t t, own;

    pthread_mutex_lock(&l->mu);
    /* the last speaker before: another replica, whose holder may have died
     * a lease before its lock was last seen, or this agent in a term of its
     * own (the one before this one, while it leads: the notices of that
     * term still queued were dropped when it ended) */
    own = l->fence != 0 && lease_clock() < l->valid_until ? l->own_before_ms : l->own_ms;
    t = l->busy_ms > own ? l->busy_ms : own;
    t = t != 0 ? t - 2 * l->lease_ms : 0;
    pthread_mutex_unlock(&l->mu);
    return t;
}

void
leader_state(struct leader *l, struct leader_state *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&l->mu);
    out->leading = l->fence != 0 && lease_clock() < l->valid_until;
    out->fence = out->leading ? l->fence : 0;
    out->unelected = !out->leading && unelected(l);
    out->unreach_ms = l->unreach_since != 0 ? lease_clock() - l->unreach_since : 0;
    out->lease_ms = l->lease_ms;
    snprintf(out->key, sizeof(out->key), "%s", l->key);
    /* a lease run out by its own clock leads no more, whatever was read */
    snprintf(out->holder, sizeof(out->holder), "%s", out->leading ? replica_of(l->cfg) :
             strcmp(l->holder, replica_of(l->cfg)) != 0 ? l->holder : "");
    snprintf(out->err, sizeof(out->err), "%s", l->err);
    out->terms = l->terms;
    pthread_mutex_unlock(&l->mu);
}

void
leader_describe(const struct leader_state *st, char *buf, size_t len)
{
    if (st->leading)
        snprintf(buf, len, "replica %s leads %s (this agent, fence %lld)", st->holder,
                 st->key, st->fence);
    else if (st->unelected)
        snprintf(buf, len, "no replica can lead %s: unreachable for %llds (%s); this agent "
                 "sends to the direct sinks itself, unfenced", st->key,
                 (long long)(st->unreach_ms / 1000), st->err[0] != '\0' ? st->err : "no reply");
    else if (st->holder[0] != '\0')
        snprintf(buf, len, "replica %s leads %s (this agent follows)", st->holder, st->key);
    else if (st->unreach_ms > 0)
        snprintf(buf, len, "no replica known to lead %s: unreachable for %llds (%s); this "
                 "agent follows, and sends to the direct sinks itself if that lasts past "
                 "the lease + 1s", st->key, (long long)(st->unreach_ms / 1000),
                 st->err[0] != '\0' ? st->err : "no reply");
    else if (st->err[0] != '\0')
        snprintf(buf, len, "no replica known to lead %s: %s (this agent follows)", st->key,
                 st->err);
    else
        snprintf(buf, len, "no replica leads %s now (this agent follows and tries to)",
                 st->key);
}
