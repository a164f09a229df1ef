/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * audit.c - lockctl audit: the newest entries of the audit stream.
 *
 * Every release and expire, refused or done, leaves an entry (XADD
 * MAXLEN ~ 10000 to [unlock] audit_stream) with time, operator, reason,
 * key, holder, old value and outcome; dry runs leave none.  This reads the
 * newest --limit of them with XREVRANGE, newest first, as the target's
 * release_user when it has one (the user that writes the stream).  Fields are bytes
 * a client or an operator chose, so they are shown like keys: sanitised
 * and cut in tables, sanitised and percent-encoded in JSON.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "collectors/redis/conn.h"
#include "collectors/release/aclhint.h"
#include "collectors/release/audittail.h"

#define AUDIT_LIMIT_DEFAULT 20
#define AUDIT_LIMIT_MAX     10000

static int64_t
field_int(const redisReply *kv, const char *name, int64_t dflt)
{
    const redisReply *f = audit_field(kv, name);
    char buf[32], *end;
    long long v;

    if (f == NULL || f->len == 0 || f->len >= sizeof(buf))
        return dflt;
    memcpy(buf, f->str, f->len);
    buf[f->len] = '\0';
    v = strtoll(buf, &end, 10);
    return *end == '\0' ? (int64_t)v : dflt;
}

static bool
valid_entry(const redisReply *e)
{
    return e->type == REDIS_REPLY_ARRAY && e->elements == 2 &&
        e->element[0]->type == REDIS_REPLY_STRING && e->element[1]->type == REDIS_REPLY_ARRAY;
}

static json_t *
entry_json(const redisReply *e)
{
    static const char *const texts[] = { "operator", "reason", "action", "target", "type",
                                         "outcome" };
    static const char *const bytes[] = { "key", "holder", "old" };
    const redisReply *kv = e->element[1], *f;
    json_t *o = json_object();
    int64_t ms = field_int(kv, "time", 0), v;
    char esc[32];
    size_t i;

    if (o == NULL)
        return NULL;
    json_object_set_new(o, "id", json_stringn(e->element[0]->str, e->element[0]->len));
    json_object_set_new(o, "time", lockjson_time(ms));
    json_object_set_new(o, "time_ms", json_integer(ms));
    for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        f = audit_field(kv, texts[i]);
        json_object_set_new(o, texts[i], f ? lockjson_text(f->str, f->len) : json_null());
    }
    for (i = 0; i < sizeof(bytes) / sizeof(bytes[0]); i++) {
        f = audit_field(kv, bytes[i]);
        snprintf(esc, sizeof(esc), "%s_escaped", bytes[i]);
        json_object_set_new(o, bytes[i], f ? lockjson_text(f->str, f->len) : json_null());
        json_object_set_new(o, esc, f ? lockjson_escaped(f->str, f->len) : json_null());
    }
    v = field_int(kv, "pttl", -3);
    json_object_set_new(o, "pttl_ms", v == -3 ? json_null() : json_integer(v));
    if ((v = field_int(kv, "ttl", 0)) > 0)
        json_object_set_new(o, "ttl_ms", json_integer(v));
    return o;
}

static const struct table_col audit_cols[] = {
    { "TIME (UTC)", 14, 0, 0 },
    { "OPERATOR", 20, TABLE_MIDDLE, 8 },   /* "http:127.0.0.1" whole when there is room */
    { "ACTION", 7, 0, 0 },
    { "OUTCOME", 14, 0, 0 },
    { "KEY", 0, TABLE_FLEX | TABLE_MIDDLE, 0 },
    { "REASON", 18, TABLE_WRAP, 12 },
};

static int
print_table(const struct lockctl *lc, const redisReply *rep)
{
    struct table t;
    size_t i, n = 0;

    table_init(&t, audit_cols, sizeof(audit_cols) / sizeof(audit_cols[0]));
    for (i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i], *kv;
        const char *names[6] = { NULL, "operator", "action", "outcome", "key", "reason" };
        const char *cells[6];
        size_t lens[6], c;
        char when[32];

        if (!valid_entry(e))
            continue;
        kv = e->element[1];
        out_time(field_int(kv, "time", 0), when, sizeof(when));
        /* "2026-08-21 12:30:37Z": the month, day and time fit 14 columns */
        cells[0] = strlen(when) > 5 ? when + 5 : when;
        lens[0] = strlen(cells[0]);
        if (lens[0] > 0 && cells[0][lens[0] - 1] == 'Z')
            lens[0]--;
        for (c = 1; c < 6; c++) {
            const redisReply *f = audit_field(kv, names[c]);

            cells[c] = f ? f->str : "";
            lens[c] = f ? f->len : 0;
        }
        if (table_add(&t, cells, lens) == -1) {
            table_release(&t);
            lockctl_warnx("out of memory");
            return LOCKCTL_REDIS;
        }
        n++;
    }
    if (n > 0)
        table_print(&t, stdout, lockctl_width(lc));
    table_release(&t);
    table_line(stdout, lockctl_width(lc), "%zu audit entr%s (newest first) from %s on target %s", n,
               n == 1 ? "y" : "ies",
           lc->cfg->audit_stream, lc->t->name);
    return LOCKCTL_DONE;
}

static int
print_json(const struct lockctl *lc, const redisReply *rep)
{
    json_t *root = json_object(), *arr = json_array();
    size_t i;

    if (root == NULL || arr == NULL)
        goto oom;
    for (i = 0; i < rep->elements; i++) {
        json_t *o;

        if (!valid_entry(rep->element[i]))
            continue;
        if ((o = entry_json(rep->element[i])) == NULL || json_array_append_new(arr, o) == -1)
            goto oom;
    }
    json_object_set_new(root, "target", json_string(lc->t->name));
    json_object_set_new(root, "stream", lockjson_text(lc->cfg->audit_stream,
                                                      strlen(lc->cfg->audit_stream)));
    json_object_set_new(root, "count", json_integer((json_int_t)json_array_size(arr)));
    json_object_set_new(root, "entries", arr);
    return out_json_print(root) == 0 ? LOCKCTL_DONE : LOCKCTL_REDIS;
oom:
    json_decref(root);
    json_decref(arr);
    lockctl_warnx("out of memory");
    return LOCKCTL_REDIS;
}

int
cmd_audit(struct lockctl *lc, int argc, char **argv)
{
    static const struct option opts[] = {
        { "limit", required_argument, NULL, 'n' },
        { "help", no_argument, NULL, 'h' },
        SESSION_LONG_OPTIONS,
        { NULL, 0, NULL, 0 }
    };
    long limit = AUDIT_LIMIT_DEFAULT;
    char count[24], err[1024], *end;
    redisReply *rep = NULL;
    int opt, rc;

    optind = 0;
    while ((opt = getopt_long(argc, argv, SESSION_SHORT_OPTIONS "n:h", opts, NULL)) != -1) {
        {
            int common = session_common_option(lc, opt, optarg);

            if (common < 0)
                return LOCKCTL_USAGE;   /* a bad value: said */
            if (common > 0)
                continue;
        }
        if (opt == 'n') {
            limit = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || limit < 1 || limit > AUDIT_LIMIT_MAX) {
                lockctl_warnx("audit: --limit must be an integer from 1 to %d",
                              AUDIT_LIMIT_MAX);
                return LOCKCTL_USAGE;
            }
        } else if (opt == 'h') {
            lockctl_command_help("audit", stdout);
            return LOCKCTL_DONE;
        } else {
            lockctl_command_help("audit", stderr);
            return LOCKCTL_USAGE;
        }
    }
    if (optind != argc) {
        lockctl_warnx("audit: unexpected argument \"%s\"", argv[optind]);
        return LOCKCTL_USAGE;
    }
    if ((rc = session_load(lc)) != LOCKCTL_DONE)
        return rc;
    /* the stream is the writes': read it as they write it */
    session_as_writer(lc);
    {
        struct agent_view av;   /* a cluster: where the agent reads it */

        memset(&av, 0, sizeof(av));
        agent_known_nodes(lc, &av);
        agent_view_release(&av);
    }
    if ((rc = session_connect_key(lc, lc->cfg->audit_stream,
                                  strlen(lc->cfg->audit_stream))) != LOCKCTL_DONE)
        return rc;
    snprintf(count, sizeof(count), "%ld", limit);
    {
        const char *av[6] = { "XREVRANGE", lc->cfg->audit_stream, "+", "-", "COUNT", count };

        rep = redisconn_command(lc->c, lc->t, "XREVRANGE", 6, av, NULL, err, sizeof(err));
    }
    if (rep == NULL)
        return session_redis_error(lc, err);
    if (rep->type != REDIS_REPLY_ARRAY) {
        snprintf(err, sizeof(err), "XREVRANGE %s on %s:%d: %.*s", lc->cfg->audit_stream,
                 lc->t->host, lc->t->port, rep->type == REDIS_REPLY_ERROR ? (int)rep->len : 16,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        if (rep->type == REDIS_REPLY_ERROR)
            aclhint_add(lc->t, "lockctl audit (XREVRANGE of the audit stream)", rep->str,
                        rep->len, err, sizeof(err));
        freeReplyObject(rep);
        return session_redis_error(lc, err);
    }
    rc = lc->json ? print_json(lc, rep) : print_table(lc, rep);
    freeReplyObject(rep);
    return rc;
}
