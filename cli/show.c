/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * show.c - lockctl show KEY: one lock, read from Redis now.
 *
 * Everything an on-call engineer needs before a release: the format and
 * holders (the exact holder string a release wants; for a liblockwatch
 * reentrant lock its host, pid and acquisition time from the client
 * registry, registry.c), TTL, age and where
 * the age comes from (the agent's first-seen time when the agent answers
 * and names this holder; else what Redis says, IDLETIME being a lower
 * bound), the states under the config's [rules], and whether
 * the key is inside the target's patterns at all, and who waits for it
 * where Redis shows it (a Redisson fair lock's queue, in order; the
 * clients subscribed to its format's wake channel).  It ends with the
 * release command for its holder, to paste as it stands (pasteline.c), or
 * says why there is none.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/locks/lockclass.h"
#include "collectors/locks/lockjson.h"
#include "collectors/locks/lockstate.h"
#include "collectors/locks/snapshot.h"
#include "collectors/redis/conn.h"
#include "common/keytext.h"
#include "common/prefixname.h"


#define SHOW_QUEUE_MAX 8        /* fair-queue waiters listed */

/* Who waits, where Redis shows it; -1: not shown (polling clients) or
 * refused. */
struct waiting {
    long long queued, subscribed;
    char *queue[SHOW_QUEUE_MAX];
    size_t queuelen[SHOW_QUEUE_MAX], nqueue;
};

static void
waiting_release(struct waiting *w)
{
    for (size_t i = 0; i < w->nqueue; i++)
        free(w->queue[i]);
}

/* One command on lockctl's connection; NULL on a connection error (err
 * set) or an error reply (counted as not shown). */
static redisReply *
ask(struct lockctl *lc, int argc, const char **argv, const size_t *lens, char *err,
    size_t errlen, bool *conn_failed)
{
    redisReply *r = redisconn_command(lc->c, lc->t, argv[0], argc, argv, lens, err, errlen);

    if (r == NULL) {
        *conn_failed = true;
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* A name made of prefix and the key by prefixName(); malloc'd. */
static char *
prefixed(const char *prefix, const struct cli_lock *l, size_t *len)
{
    size_t need = prefix_name(NULL, 0, prefix, l->key, l->keylen);
    char *p = malloc(need + 1);

    if (p != NULL)
        *len = prefix_name(p, need + 1, prefix, l->key, l->keylen);
    return p;
}

/* The same look-ups as the agent's scanner (collectors/scan/waiters.c),
 * plus the first SHOW_QUEUE_MAX of a fair queue.  0, or -1 when the
 * connection failed. */
static int
read_waiting(struct lockctl *lc, const struct cli_lock *l, struct waiting *w, char *err,
             size_t errlen)
{
    bool failed = false, hash = l->fmt->waiters == FMT_WAITERS_QUEUE;
    redisReply *r;
    size_t n = 0;
    char *name;

    memset(w, 0, sizeof(*w));
    w->queued = w->subscribed = -1;
    if (hash && (name = prefixed("redisson_lock_queue", l, &n)) != NULL) {
        const char *argv[4] = { "LRANGE", name, "0", "7" };
        size_t lens[4] = { 6, n, 1, 1 };

        if ((r = ask(lc, 4, argv, lens, err, errlen, &failed)) != NULL) {
            for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements &&
                 w->nqueue < SHOW_QUEUE_MAX; i++) {
                const redisReply *e = r->element[i];

                if (e->type != REDIS_REPLY_STRING ||
                    (w->queue[w->nqueue] = malloc(e->len + 1)) == NULL)
                    continue;
                memcpy(w->queue[w->nqueue], e->str, e->len);
                w->queuelen[w->nqueue++] = e->len;
            }
            freeReplyObject(r);
        }
        argv[0] = "LLEN";
        lens[0] = 4;
        if (!failed && (r = ask(lc, 2, argv, lens, err, errlen, &failed)) != NULL) {
            if (r->type == REDIS_REPLY_INTEGER)
                w->queued = r->integer;
            freeReplyObject(r);
        }
        free(name);
    }
    if (!failed && l->fmt->wake_channel != NULL &&
        (name = prefixed(l->fmt->wake_channel, l, &n)) != NULL) {
        /* and the 2.x name of a Redisson channel, "<prefix>__{K}" */
        bool redisson = l->fmt->wake_legacy != NULL;
        size_t plen = strlen(l->fmt->wake_channel), olen = plen + 4 + l->keylen;
        char *old = redisson ? malloc(olen + 1) : NULL;
        const char *argv[4] = { "PUBSUB", "NUMSUB", name, old };
        size_t lens[4] = { 6, 6, n, olen };

        if (old != NULL) {
            memcpy(old, l->fmt->wake_channel, plen);
            memcpy(old + plen, "__{", 3);
            memcpy(old + plen + 3, l->key, l->keylen);
            old[olen - 1] = '}';
            old[olen] = '\0';
        }
        /* NUMSUB, and in a cluster SHARDNUMSUB (sharded subscribers) */
        for (int q = 0; q < (lc->t->mode == TARGET_CLUSTER ? 2 : 1) && !failed; q++) {
            argv[1] = q == 0 ? "NUMSUB" : "SHARDNUMSUB";
            lens[1] = strlen(argv[1]);
            if ((r = ask(lc, old != NULL ? 4 : 3, argv, lens, err, errlen, &failed)) == NULL)
                continue;
            for (size_t i = 1; r->type == REDIS_REPLY_ARRAY && i < r->elements; i += 2)
                if (r->element[i]->type == REDIS_REPLY_INTEGER)
                    w->subscribed = (w->subscribed > 0 ? w->subscribed : 0) +
                        r->element[i]->integer;
            freeReplyObject(r);
        }
        free(old);
        free(name);
    }
    return failed ? -1 : 0;
}

static long long
waiting_count(const struct waiting *w)
{
    return w->queued > w->subscribed ? w->queued : w->subscribed;
}

/* The JSON fields waiters, waiters_source and queue (as the agent's API
 * names the first two). */
static void
waiting_json(json_t *o, const struct waiting *w)
{
    long long n = waiting_count(w);
    json_t *q = json_array();

    json_object_set_new(o, "waiters", n < 0 ? json_null() : json_integer(n));
    json_object_set_new(o, "waiters_source", n < 0 ? json_null() :
                        json_string(w->queued > 0 && w->queued >= w->subscribed ? "queue"
                                    : "pubsub"));
    for (size_t i = 0; q != NULL && i < w->nqueue; i++) {
        json_t *e = json_object();

        json_object_set_new(e, "id", lockjson_text(w->queue[i], w->queuelen[i]));
        json_object_set_new(e, "id_escaped", lockjson_escaped(w->queue[i], w->queuelen[i]));
        json_array_append_new(q, e);
    }
    json_object_set_new(o, "queue", w->queued < 0 ? (json_decref(q), json_null()) : q);
}

static const struct table_col show_cols[] = {
    { "FIELD", 12, 0, 0 },
    { "VALUE", 0, TABLE_FLEX | TABLE_WRAP, 0 },
};

static int
row(struct table *t, const char *field, const char *value, size_t len)
{
    const char *cells[2] = { field, value };
    size_t lens[2] = { strlen(field), len };

    return table_add(t, cells, lens);
}

/* Is the key not a lock after all (exclude_patterns, a helper key)?  A
 * sentence for the patterns row in out, else "". */
static bool
not_a_lock(const struct lockctl *lc, const struct cli_lock *l, char *out, size_t outsz)
{
    struct helper_key hk;
    char *owner;

    out[0] = '\0';
    if (lock_key_excluded(lc->t, l->key, l->keylen)) {
        snprintf(out, outsz, "NOT a lock: the key matches the target's exclude_patterns; "
                 "lockctl will not release it");
        return true;
    }
    if (formats_helper(l->key, l->keylen, l->type, &hk) == HELPER_NONE)
        return false;
    owner = table_safe_text(hk.owner, hk.ownerlen, NULL);
    snprintf(out, outsz, "NOT a lock: %s %s%s (helper key %s); lockctl will not release or "
             "expire it", formats_helper_what(hk.kind),
             hk.style == HELPER_OWNER_LOCK_PREFIX ? "lock:" : "", owner ? owner : "?",
             formats_helper_name(hk.kind));
    free(owner);
    return true;
}

/* The state row: as list's STATE column writes it, "held" only when
 * nothing worse (every lock shown is held). */
static void
state_text(const struct cli_lock *l, bool inpat, char *buf, size_t len)
{
    if (!inpat) {               /* the agent judges only its targets' locks */
        snprintf(buf, len, "not judged: the key is outside the target's patterns");
        return;
    }
    verdict_states(l, buf, len);
    if (l->leak_unknown)
        snprintf(buf + strlen(buf), len - strlen(buf), " (no TTL, for how long is unknown)");
}

/* The TTL, and when the agent saw its holder renew it, what that means
 * for the decision on call: the holder is alive. */
static int
ttl_row(struct table *t, const struct cli_lock *l)
{
    char a[64], buf[200];

    out_ttl(l->pttl_ms, a, sizeof(a));
    if (!l->renewed || l->pttl_ms < 0)
        return row(t, "ttl", a, strlen(a));
    snprintf(buf, sizeof(buf), "%s (its holder renews it, so it is alive: a release lets "
             "another client in while it works)", a);
    return row(t, "ttl", buf, strlen(buf));
}

static int
rows(struct table *t, const struct lockctl *lc, const struct cli_lock *l, bool inpat,
     const struct waiting *w)
{
    char buf[512], a[64], b[64];
    size_t i;
    long long permits;
    int rc = 0;

    session_address(lc, a, sizeof(a));
    snprintf(buf, sizeof(buf), "%s (%s)", lc->t->name, a);
    rc |= row(t, "key", l->key, l->keylen);
    rc |= row(t, "target", buf, strlen(buf));
    if (not_a_lock(lc, l, buf, sizeof(buf))) {
        /* a helper or excluded key: what it holds, and none of a lock's
         * rows (a format, a state, holders), which would contradict it */
        char id[OUT_HOLDER_MAX(HOLDER_ID_MAX) + 3];

        rc |= row(t, "patterns", buf, strlen(buf));
        out_ttl(l->pttl_ms, a, sizeof(a));
        rc |= row(t, "ttl", a, strlen(a));
        if (l->view.nholders > 0)
            rc |= row(t, "value", id, out_holder_shown(&l->view.holders[0], id, sizeof(id)));
        return rc;
    }
    snprintf(buf, sizeof(buf), "%s", inpat
             ? "the key is a lock (matches the target's patterns)"
             : "NOT in the target's patterns: lockctl will not release it");
    rc |= row(t, "patterns", buf, strlen(buf));
    rc |= row(t, "class", l->cls, strlen(l->cls));
    snprintf(buf, sizeof(buf), "%s%s, %s%s", l->fmt->name,
             l->view.mode[0] ? (strcmp(l->view.mode, "read") == 0 ? " (read mode)"
                                : " (write mode)") : "",
             l->src.source == FMT_SOURCE_DECLARED ? "declared by format_patterns"
             : l->src.source == FMT_SOURCE_PROVEN ? "proven by its layout"
             : l->type == RAW_ZSET ? "guessed from the value's shape (released by removing "
                                     "that holder's member)"
             : l->type == RAW_HASH && l->view.nholders == 0 ?
             "a hash whose fields name no holder lockctl knows (a client's <uuid>:<thread>): "
             "lockctl does not release it"
             : "guessed from the value's shape (released by compare-and-delete)",
             l->src.contradicts ? "; the value is NOT the format format_patterns declare"
             : "");
    rc |= row(t, "format", buf, strlen(buf));
    if (l->view.nholders == 1 &&
        formats_permits_available(l->fmt, l->view.holders[0].id, l->view.holders[0].idlen,
                                  &permits)) {
        snprintf(buf, sizeof(buf), "%lld available (a Redisson semaphore: never leaked "
                 "or long)", permits);
        rc |= row(t, "permits", buf, strlen(buf));
    }
    state_text(l, inpat, buf, sizeof(buf));
    rc |= row(t, "state", buf, strlen(buf));
    rc |= ttl_row(t, l);
    verdict_age(l, a, sizeof(a));
    if (l->first_seen_ms > 0)
        out_time(l->first_seen_ms, b, sizeof(b));
    if (verdict_age_unknown(l) && !l->idle_shared && l->idle_s >= 0)
        snprintf(buf, sizeof(buf), "unknown (no agent times; OBJECT IDLETIME, %llds, is only a "
                 "lower bound: any read or lease renewal resets it)", l->idle_s);
    else
        snprintf(buf, sizeof(buf), "%s (from %s%s%s)", a,
                 l->first_seen_ms > 0 ? "the agent: first seen " : verdict_age_from(l),
                 l->first_seen_ms > 0 ? b : "",
                 l->first_seen_ms > 0 ? "; age_source: agent" : "");
    rc |= row(t, "age", buf, strlen(buf));
    if (l->nottl_ms >= 0 && l->first_seen_ms > 0) {
        out_duration(l->nottl_ms, a, sizeof(a));
        snprintf(buf, sizeof(buf), "%s (the agent's no-TTL-since time)", a);
        rc |= row(t, "no ttl for", buf, strlen(buf));
    }
    for (i = 0; i < l->view.nholders; i++) {
        const struct lock_holder *h = &l->view.holders[i];
        char field[32], id[OUT_HOLDER_MAX(HOLDER_ID_MAX) + 3];

        snprintf(field, sizeof(field), "holder%s", l->view.nholders > 1 ? "s" : "");
        rc |= row(t, i == 0 ? field : "", id, out_holder_shown(h, id, sizeof(id)));
        snprintf(buf, sizeof(buf), "%ld", h->count);
        rc |= row(t, "  holds", buf, strlen(buf));
    }
    if (l->view.holders_total > l->view.nholders) {
        snprintf(buf, sizeof(buf), "%zu more not shown", l->view.holders_total -
                 l->view.nholders);
        rc |= row(t, "", buf, strlen(buf));
    }
    if (l->view.host[0] != '\0')
        rc |= row(t, "host", l->view.host, strlen(l->view.host));
    if (l->view.pid > 0) {
        snprintf(buf, sizeof(buf), "%ld", l->view.pid);
        rc |= row(t, "pid", buf, strlen(buf));
    }
    if (l->view.thread >= 0) {
        snprintf(buf, sizeof(buf), "%lld", l->view.thread);
        rc |= row(t, "thread", buf, strlen(buf));
    }
    if (l->view.acquired_ms > 0) {
        out_time(l->view.acquired_ms, b, sizeof(b));
        rc |= row(t, "acquired", b, strlen(b));
    }
    if (waiting_count(w) < 0) {
        rc |= row(t, "waiting", "not shown by Redis (its clients poll)",
                  strlen("not shown by Redis (its clients poll)"));
    } else {
        snprintf(buf, sizeof(buf), "%lld (%s)", waiting_count(w),
                 w->queued > 0 && w->queued >= w->subscribed ? "the fair lock's queue, in order"
                 : "clients subscribed to its wake channel");
        rc |= row(t, "waiting", buf, strlen(buf));
        for (i = 0; i < w->nqueue; i++)
            rc |= row(t, i == 0 ? "  queue" : "", w->queue[i], w->queuelen[i]);
        if (w->queued > (long long)w->nqueue) {
            snprintf(buf, sizeof(buf), "%lld more in the queue", w->queued -
                     (long long)w->nqueue);
            rc |= row(t, "", buf, strlen(buf));
        }
    }
    if (l->value_truncated)
        rc |= row(t, "note", "the value was read only in part (over 512 bytes or 64 fields)",
                  strlen("the value was read only in part (over 512 bytes or 64 fields)"));
    return rc;
}

/* The command line: --escaped and exactly one KEY, into *key (malloc'd).
 * LOCKCTL_DONE to go on, -1 after --help, or the exit status. */
static int
parse(struct lockctl *lc, int argc, char **argv, char **key, size_t *keylen)
{
    static const struct option opts[] = {
        { "escaped", no_argument, NULL, 'e' },
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    bool escaped = false;
    int opt;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "eh", opts, NULL)) != -1) {
        {
            int common = session_common_option(lc, opt, optarg);

            if (common < 0)
                return LOCKCTL_USAGE;   /* a bad value: said */
            if (common > 0)
                continue;
        }
        if (opt == 'e') {
            escaped = true;
        } else if (opt == 'h') {
            lockctl_command_help("show", stdout);
            return -1;
        } else {
            lockctl_command_help("show", stderr);
            return LOCKCTL_USAGE;
        }
    }
    if (argc - optind != 1) {
        lockctl_warnx("show: give exactly one KEY (see lockctl show --help)");
        return LOCKCTL_USAGE;
    }
    if (escaped) {
        if ((*key = out_unescape(argv[optind], keylen)) == NULL) {
            lockctl_warnx("show: KEY is not valid percent-encoding (--escaped)");
            return LOCKCTL_USAGE;
        }
    } else if ((*key = strdup(argv[optind])) != NULL) {
        *keylen = strlen(*key);
    }
    if (*key == NULL) {
        lockctl_warnx("out of memory");
        return LOCKCTL_REDIS;
    }
    return LOCKCTL_DONE;
}

/* No such key on the target: say so (in JSON, "exists": false). */
static int
show_missing(const struct lockctl *lc, const char *key, size_t keylen)
{
    char addr[300];

    session_address(lc, addr, sizeof(addr));
    if (lc->json) {
        json_t *o = json_object();

        json_object_set_new(o, "target", json_string(lc->t->name));
        json_object_set_new(o, "key", lockjson_text(key, keylen));
        json_object_set_new(o, "key_escaped", lockjson_escaped(key, keylen));
        json_object_set_new(o, "exists", json_false());
        out_json_print(o);
    } else {
        char *safe = table_safe_text(key, keylen, NULL), *cut = NULL;

        cut = safe ? table_cut(safe, 60, true) : NULL;
        lockctl_warnx("no key \"%s\" on target %s (%s)", cut ? cut : "?", lc->t->name,
                      addr);
        /* U+FFFD: a key copied from a table, where it stands for bytes
         * a terminal cannot show (an on-call trial pasted one) */
        if (agent_label(key, keylen, NULL))
            out_error_hint("an alert's label (a cut key, \xe2\x80\xa6#, its hash) lockctl could not "
                           "resolve (the agent off, down, or keeping no such lock whole): lockctl "
                           "list --json gives each lock's key_escaped, for show --escaped");
        else if (memmem(key, keylen, "\xef\xbf\xbd", 3) != NULL)
            out_error_hint("a \xef\xbf\xbd in a table stands for bytes it cannot show: take "
                           "the key's exact bytes from lockctl list --json (key_escaped) and "
                           "give them with --escaped");
        free(safe);
        free(cut);
    }
    return LOCKCTL_REFUSED;     /* nothing to show */
}

/* The lock as one JSON object: the lock API's fields, its waiters, and
 * whether it is a lock at all. */
static int
show_json(const struct lockctl *lc, const struct cli_lock *l, const struct waiting *w,
          const struct agent_view *av, bool inpat, bool from_agent)
{
    json_t *o = cli_lock_json(lc, l);
    char why[512];

    if (o != NULL) {
        waiting_json(o, w);
        json_object_set_new(o, "exists", json_true());
        json_object_set_new(o, "in_patterns", json_boolean(inpat));
        if (not_a_lock(lc, l, why, sizeof(why))) {
            struct helper_key hk;

            json_object_set_new(o, "not_a_lock", json_string(why));
            if (formats_helper(l->key, l->keylen, l->type, &hk) != HELPER_NONE)
                json_object_set_new(o, "helper_kind",
                                    json_string(formats_helper_name(hk.kind)));
        }
        json_object_set_new(o, "agent", agent_json(av, from_agent));
    }
    return out_json_print(o) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS;
}

#define SHOW_RELEASE_MAX 3      /* holders given their own release line */

/*
 * A holder longer than the read keeps (HOLDER_ID_MAX - 1 bytes, shown
 * with "…") has no release line, which needs the whole id: where to read
 * it whole, and how to give it.  The key is named when it is short
 * printable ASCII (a word to paste), else as KEY.
 */
/* Is l's key short printable ASCII that pastes as one shell word? */
static bool
key_word(const struct cli_lock *l)
{
    bool word = l->keylen > 0 && l->keylen <= 120;

    for (size_t k = 0; word && k < l->keylen; k++)
        word = l->key[k] > ' ' && l->key[k] < 0x7f && l->key[k] != '\'' &&
            l->key[k] != '"' && l->key[k] != '\\';
    return word;
}

static void
cut_holder_next(const struct lockctl *lc, const struct cli_lock *l, size_t i)
{
    const char *read = l->type == RAW_HASH ? "HKEYS" : l->type == RAW_ZSET ? "ZRANGE" : "GET";
    bool word = key_word(l);
    char cli[600];

    session_redis_cli(lc, cli, sizeof(cli));
    table_line(stdout, lockctl_width(lc), "no release command for holder %zu: its id is longer "
               "than the %d bytes lockctl reads (shown cut, ending in \xe2\x80\xa6); read it "
               "whole with %s %s %s%s, then release it with "
               "--holder and the whole id, or --holder-hex and its bytes in hex (the release "
               "checks the whole id)", i + 1, HOLDER_ID_MAX - 1, cli, read,
               word ? l->key : "KEY", l->type == RAW_ZSET ? " 0 -1" : "");
}

/*
 * The release command for each holder (the first SHOW_RELEASE_MAX), to
 * paste as it stands (pasteline.c), or why there is none.  Always the
 * last lines of show's human output.
 */
static void
release_lines(const struct lockctl *lc, const struct cli_lock *l, bool inpat)
{
    size_t width = lockctl_width(lc), n = l->view.nholders;
    char why[512];

    if (not_a_lock(lc, l, why, sizeof(why))) {
        table_line(stdout, width, "no release command: the key is not a lock%s",
                   lock_key_excluded(lc->t, l->key, l->keylen) ? ""
                   : " (release the lock it serves)");
        return;
    }
    if (!inpat) {
        table_line(stdout, width, "no release command: the key is outside the target's "
                   "patterns");
        return;
    }
    if (n == 0 && l->type == RAW_HASH) {
        /* an on-call trial found no way on: say whose it may be, and
         * that only a person who knows can remove it */
        char cli[600];

        session_redis_cli(lc, cli, sizeof(cli));
        table_line(stdout, width, "no release command: lockctl releases a holder it can name, "
                   "and this hash's fields name none it knows; read them with %s HGETALL %s, "
                   "find who holds it, and if that holder is gone for good, remove the key "
                   "there yourself (lockctl never deletes a lock whose holder it cannot check)",
                   cli, key_word(l) ? l->key : "KEY");
        return;
    }
    if (n == 0) {
        table_line(stdout, width, "no release command: the format names no holder (lockctl "
                   "show --json shows the value)");
        return;
    }
    for (size_t i = 0; i < n && i < SHOW_RELEASE_MAX; i++) {
        const struct lock_holder *h = &l->view.holders[i];
        struct pasteline pl;
        char heading[64];
        bool stop;

        if (h->id_truncated) {
            cut_holder_next(lc, l, i);
            continue;
        }
        paste_init(&pl, lc, "release");
        paste_key_holder(&pl, l->key, l->keylen, h->id, h->idlen);
        if (n > 1)
            snprintf(heading, sizeof(heading), "release holder %zu of %zu with:", i + 1,
                     l->view.holders_total);
        else
            snprintf(heading, sizeof(heading), "release with:");
        paste_show(stdout, &pl, width, heading);
        stop = pl.failed;       /* the key's reason: the same for each holder */
        paste_release(&pl);
        if (stop)
            return;
    }
    if (l->view.holders_total > SHOW_RELEASE_MAX)
        table_line(stdout, width, "the other %zu holders: the same command with their "
                   "holder (lockctl show --json lists their id_escaped)",
                   l->view.holders_total - SHOW_RELEASE_MAX);
}

/* The lock as a FIELD / VALUE table, the agent's note, and the release
 * command when it can be pasted. */
static int
show_table(const struct lockctl *lc, const struct cli_lock *l, const struct waiting *w,
           const struct agent_view *av, bool inpat, bool from_agent)
{
    struct table t;
    char why[512];

    table_init(&t, show_cols, 2);
    if (rows(&t, lc, l, inpat, w) != 0) {
        table_release(&t);
        lockctl_warnx("out of memory");
        return LOCKCTL_REDIS;
    }
    table_print(&t, stdout, lockctl_width(lc));
    table_release(&t);
    if (not_a_lock(lc, l, why, sizeof(why)))
        ;                       /* no age shown, so no word on where ages come from */
    else if (av->answered && !from_agent)
        table_line(stdout, lockctl_width(lc), "the agent at %s has no times for this holder (not "
                   "in its last scan, or not kept in detail)", av->url);
    else
        agent_print_note(av, from_agent, stdout, lockctl_width(lc));
    release_lines(lc, l, inpat);
    return LOCKCTL_DONE;
}

/*
 * Redis did not answer, but the agent did: its view of the key, from its
 * last scan (the last known, with why, when it cannot scan the target
 * either), as list shows its view then.  Text only: --json's error object
 * stays the connect failure.  Not when its view is of another server
 * (--url, or another address: dropped by agent_drop_elsewhere(), which
 * said so).  The exit code stays LOCKCTL_REDIS.
 */
static void
show_last_known(const struct lockctl *lc, const struct agent_view *av, const char *key,
                size_t keylen)
{
    const struct agent_lock *a = agent_find(av, key, keylen);
    size_t width = lockctl_width(lc);
    char holder[OUT_HOLDER_MAX(HOLDER_ID_MAX) + 32], age[32], st[96], ttl[48], ago[32] = "";
    struct table t;

    if (lc->json || !av->answered)
        return;
    if (av->nothing_known) {
        agent_print_nothing_known(av, lc->t->name, stdout, width);
        return;
    }
    if (av->stale_reason[0] != '\0' && av->last_success_ms > 0) {
        memcpy(ago, ", ", 3);
        out_duration(clock_now_ms() - av->last_success_ms, ago + 2, sizeof(ago) - 6);
        strcat(ago, " ago");
    }
    if (av->stale_shard[0] != '\0')
        table_line(stdout, width, "LAST KNOWN (stale): the agent at %s cannot read it either: "
                   "target %s's shard %s%s; its last good read of it%s:", av->url, lc->t->name,
                   av->stale_shard, agent_shard_reason(av), ago);
    else if (av->stale_reason[0] != '\0')
        table_line(stdout, width, "LAST KNOWN (stale): the agent at %s cannot scan target %s "
                   "either (%s); its last good scan%s:", av->url, lc->t->name,
                   av->stale_reason, ago);
    else
        table_line(stdout, width, "FROM THE AGENT at %s (its last scan; Redis did not answer "
                   "lockctl):", av->url);
    if (a == NULL) {
        table_line(stdout, width, "  not among the locks it keeps%s", av->truncated ?
                   " (its list was cut)" : "");
        return;
    }
    if (a->holder != NULL)
        out_holder(a->holder, a->holderlen, holder, sizeof(holder));
    else
        snprintf(holder, sizeof(holder), "-");
    if (a->stale && av->last_success_ms > a->first_seen_ms && a->first_seen_ms > 0) {
        /* its age when last seen, not one that grows with a view that
         * cannot say the holder is still there */
        out_duration(av->last_success_ms - a->first_seen_ms, age, sizeof(age));
        snprintf(age + strlen(age), sizeof(age) - strlen(age), " then");
    } else if (a->age_ms >= 0) {
        out_duration(a->age_ms, age, sizeof(age));
    } else {
        snprintf(age, sizeof(age), "unknown");
    }
    verdict_agent_states(a->states, st, sizeof(st));
    if (a->pttl_ms == -2)
        snprintf(ttl, sizeof(ttl), "unknown");
    else
        out_ttl(a->pttl_ms, ttl, sizeof(ttl));
    if (a->pttl_ms >= 0)        /* read then: it may have run out, or been renewed */
        snprintf(ttl + strlen(ttl), sizeof(ttl) - strlen(ttl), " as read then");
    table_init(&t, show_cols, 2);
    if ((row(&t, "key", key, keylen) | row(&t, "holder", holder, strlen(holder)) |
         row(&t, "age", age, strlen(age)) | row(&t, "ttl", ttl, strlen(ttl)) |
         row(&t, "state", st, strlen(st))) == 0)
        table_print(&t, stdout, width);
    table_release(&t);
}

/*
 * A key outside the target's patterns that the Redis user may not read
 * (NOPERM on a key: an ACL of the target's patterns only): no lock of this
 * target, so nothing to show (exit 1), said as such.  Before, it was a
 * Redis error (exit 3) advising to give the user that key, which the
 * least-privilege ACL means it not to have.  Not for a command refused
 * (a user without +type): that one is the ACL's to fix.
 */
static bool
show_unreadable_outside(const struct lockctl *lc, const char *key, size_t keylen,
                        const char *err)
{
    const char *noperm = strstr(err, "NOPERM");
    char pats[256], addr[300], *safe;

    if (lockstate_in_patterns(lc->t, key, keylen) || noperm == NULL ||
        strstr(noperm, "key") == NULL)
        return false;
    session_patterns(lc, pats, sizeof(pats));
    session_address(lc, addr, sizeof(addr));
    safe = table_safe_text(key, keylen, NULL);
    /* the key whole, as every refusal has it; what to do next is the
     * hint, which the text output prints too */
    lockctl_warnx("show %s on target %s (%s): the key matches none of the target's patterns "
                  "(%s), and the Redis user may not read it (%s): it is no lock of this "
                  "target", safe ? safe : "?", lc->t->name, addr, pats, err);
    out_error_hint("lockctl shows the locks of the target's patterns: a lock of another "
                   "target is shown with -t that target");
    free(safe);
    return true;
}

int
cmd_show(struct lockctl *lc, int argc, char **argv)
{
    struct cli_lock l;
    struct agent_view av;
    struct waiting w;
    bool inpat, from_agent = false;
    char *key = NULL, err[512];
    const char *kp;
    size_t keylen = 0;
    int rc;

    memset(&l, 0, sizeof(l));
    memset(&av, 0, sizeof(av));
    memset(&w, 0, sizeof(w));
    if ((rc = parse(lc, argc, argv, &key, &keylen)) != LOCKCTL_DONE)
        return rc == -1 ? LOCKCTL_DONE : rc;
    if ((rc = session_load(lc)) != LOCKCTL_DONE ||
        (rc = agent_consult(lc, &av, key, keylen)) != LOCKCTL_DONE)
        goto out;
    agent_drop_elsewhere(lc, &av);
    if ((rc = agent_resolve_label(lc, &av, &key, &keylen)) != LOCKCTL_DONE)
        goto out;
    agent_known_nodes(lc, &av);  /* a cluster: where the agent reads it */
    if ((rc = session_connect_key(lc, key, keylen)) != LOCKCTL_DONE) {
        if (rc == LOCKCTL_REDIS)
            show_last_known(lc, &av, key, keylen);
        goto out;
    }
    kp = key;
    if (inspect_keys(lc, &kp, &keylen, 1, clock_now_ms(), &l, err, sizeof(err)) == -1) {
        rc = show_unreadable_outside(lc, key, keylen, err) ? LOCKCTL_REFUSED
            : session_redis_error(lc, err);
        goto out;
    }
    /* a liblockwatch reentrant lock's host, pid and acquisition time are
     * in its client's registry, as the agent reads them; judged again
     * with that time when the agent does not answer */
    if (l.type != RAW_NONE && (inspect_registry(lc, &l) || av.answered))
        from_agent = verdict_judge(&lc->cfg->rules.judge, &l, av.answered ?
                                   agent_find(&av, key, keylen) : NULL, clock_now_ms());
    inpat = lockstate_in_patterns(lc->t, key, keylen);
    if (l.type == RAW_NONE) {
        rc = show_missing(lc, key, keylen);
        goto out;
    }
    if (read_waiting(lc, &l, &w, err, sizeof(err)) == -1) {
        rc = session_redis_error(lc, err);
        goto out;
    }
    if (lc->json)
        rc = show_json(lc, &l, &w, &av, inpat, from_agent);
    else
        rc = show_table(lc, &l, &w, &av, inpat, from_agent);
out:
    waiting_release(&w);
    cli_lock_release(&l);
    agent_view_release(&av);
    free(key);
    return rc;
}
