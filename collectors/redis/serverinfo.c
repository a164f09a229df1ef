/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * serverinfo.c - INFO sections, their numbers and run_id, and a node's
 * identity (serverinfo.h).
 */
#include "collectors/redis/serverinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/redis/conn.h"
#include "common/clock.h"

const char *const serverinfo_flush_prefixes[2] = {
    "cmdstat_flushdb:calls=", "cmdstat_flushall:calls=",
};

long long
serverinfo_number(const char *text, size_t len, const char *prefix, long long def)
{
    size_t plen = strlen(prefix), i = 0;
    char *end;
    long long v;

    while (i + plen <= len) {
        if (memcmp(text + i, prefix, plen) == 0) {
            errno = 0;
            v = strtoll(text + i + plen, &end, 10);
            return errno == 0 && end != text + i + plen ? v : def;
        }
        while (i < len && text[i] != '\n')
            i++;
        i++;
    }
    return def;
}

void
serverinfo_string(const char *text, size_t len, const char *prefix, char *out, size_t size)
{
    size_t plen = strlen(prefix), i = 0, k = 0;
    const char *p = NULL;

    if (size == 0)
        return;
    while (p == NULL && i + plen <= len) {
        if (memcmp(text + i, prefix, plen) == 0)
            p = text + i + plen;
        while (i < len && text[i] != '\n')
            i++;
        i++;
    }
    if (p != NULL)
        for (; k + 1 < size && p + k < text + len && p[k] != '\r' && p[k] != '\n'; k++)
            out[k] = p[k];
    out[k] = '\0';
}

bool
serverinfo_replica(const char *text, size_t len)
{
    char role[16];

    serverinfo_string(text, len, "role:", role, sizeof(role));
    return strcmp(role, "slave") == 0;
}

long long
serverinfo_silence_s(const struct target_conf *t)
{
    return t->replica_silence_ms >= 2000 ? t->replica_silence_ms / 1000 : 1;
}

bool
serverinfo_link_down(const char *text, size_t len, long long limit_s, long long *down_s,
                     long long *silent_s)
{
    char status[16];

    *down_s = -1;
    *silent_s = -1;
    serverinfo_string(text, len, "master_link_status:", status, sizeof(status));
    if (!serverinfo_replica(text, len) || status[0] == '\0')
        return false;
    if (strcmp(status, "up") == 0) {
        /* a link cut without a FIN stays "up" until repl-timeout (60 s by
         * default), while nothing comes from the primary, not even the ping
         * it sends every repl-ping-replica-period (10 s by default) */
        *silent_s = serverinfo_number(text, len, "master_last_io_seconds_ago:", -1);
        if (*silent_s <= limit_s)
            *silent_s = -1;
        return *silent_s > 0;
    }
    *down_s = serverinfo_number(text, len, "master_link_down_since_seconds:", -1);
    /* Redis before 7 says the seconds since 1970 for a link never up */
    if (*down_s < 0 || *down_s > 10LL * 365 * 86400)
        *down_s = -1;
    return true;
}

void
serverinfo_link_why(const char *node, long long down_s, long long silent_s,
                    long long limit_s, bool timed, char *out, size_t size)
{
    char since[200] = " (not up since the replica started)";

    if (silent_s > 0) {
        /* "up" says Redis: the link dropped without a close, or the
         * primary stalled (DEBUG SLEEP, a long script); either way
         * nothing proves the data current (a freshness trial) */
        snprintf(out, size, "%s is a replica that heard nothing from its primary for over "
                 "%lld s (replica_silence): its link says up, but dropped silently or the "
                 "primary stalled; its data is not proven current", node, limit_s);
        return;
    }
    if (down_s >= 0 && timed)
        snprintf(since, sizeof(since), " (for %lld s)", down_s);
    else if (down_s >= 0)
        since[0] = '\0';
    snprintf(out, size, "%s is a replica whose link to its primary is down%s: its data is "
             "not current", node, since);
}

bool
serverinfo_resynced(const char *was_replid, bool was_replica, const char *now_replid,
                    const char *now_replid2, bool now_replica)
{
    bool promoted_from_another = now_replid2[0] != '\0' &&
        strspn(now_replid2, "0") != strlen(now_replid2) && strcmp(now_replid2, was_replid) != 0;

    return was_replid[0] != '\0' && now_replid[0] != '\0' &&
           strcmp(was_replid, now_replid) != 0 &&
           (was_replica || now_replica || promoted_from_another);
}

bool
serverinfo_loaded_nothing(const char *text, size_t len)
{
    return serverinfo_number(text, len, "rdb_last_load_keys_loaded:", -1) == 0 &&
           serverinfo_number(text, len, "aof_enabled:", -1) == 0 &&
           serverinfo_number(text, len, "loading:", -1) == 0 &&
           serverinfo_number(text, len, "async_loading:", 0) == 0;
}

void
serverinfo_run_id(const char *text, size_t len, char *out, size_t size)
{
    serverinfo_string(text, len, "run_id:", out, size);
}

int
serverinfo_section(redisContext *c, const struct target_conf *node, const char *section,
                   redisReply **out, char *err, size_t errlen)
{
    const char *argv[2] = { "INFO", section };
    const size_t lens[2] = { 4, strlen(section) };
    redisReply *r = redisconn_command(c, node, "INFO", 2, argv, lens, err, errlen);

    *out = NULL;
    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_STRING) {
        *out = r;
        return 1;
    }
    if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "INFO %s on %s:%d: %s", section, node->host, node->port, r->str);
    else
        snprintf(err, errlen, "INFO %s on %s:%d: unexpected reply", section, node->host,
                 node->port);
    freeReplyObject(r);
    return 0;
}

int
serverinfo_read(redisContext *c, const struct target_conf *node, struct server_id *id,
                char *err, size_t errlen)
{
    redisReply *r;
    long long uptime;
    size_t i;
    int rc;

    memset(id, 0, sizeof(*id));
    if ((rc = serverinfo_section(c, node, "server", &r, err, errlen)) != 1)
        return rc;
    serverinfo_run_id(r->str, r->len, id->run_id, sizeof(id->run_id));
    uptime = serverinfo_number(r->str, r->len, "uptime_in_seconds:", -1);
    /* seconds, cut: the start is up to 1 s earlier; the later bound errs
     * towards a younger lock */
    if (uptime >= 0 && uptime < 100LL * 365 * 86400)
        id->started_ms = clock_now_ms() - uptime * 1000;
    freeReplyObject(r);
    if ((rc = serverinfo_section(c, node, "replication", &r, err, errlen)) != 1)
        return rc;
    serverinfo_string(r->str, r->len, "master_replid:", id->replid, sizeof(id->replid));
    serverinfo_string(r->str, r->len, "master_replid2:", id->replid2, sizeof(id->replid2));
    id->replica = serverinfo_replica(r->str, r->len);
    id->link_down = serverinfo_link_down(r->str, r->len, serverinfo_silence_s(node),
                                         &id->link_down_s, &id->link_silent_s);
    freeReplyObject(r);
    if ((rc = serverinfo_section(c, node, "commandstats", &r, err, errlen)) != 1)
        return rc;
    for (i = 0; i < sizeof(serverinfo_flush_prefixes) / sizeof(serverinfo_flush_prefixes[0]);
         i++)
        id->flushes += serverinfo_number(r->str, r->len, serverinfo_flush_prefixes[i], 0);
    id->flushalls = serverinfo_number(r->str, r->len, serverinfo_flush_prefixes[1], 0);
    id->swaps = serverinfo_number(r->str, r->len, SERVERINFO_SWAPDB_CALLS, 0);
    id->info_calls = serverinfo_number(r->str, r->len, SERVERINFO_INFO_CALLS, 0);
    freeReplyObject(r);
    id->have = id->run_id[0] != '\0';
    return 1;
}
