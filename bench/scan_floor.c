/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scan_floor.c - the floor the agent's full scan is measured against.
 *
 * SPEC "Performance and behaviour targets": a full scan and classification
 * by lockwatchd must take at most 1.5x the time of "the same keyspace
 * scanned with pipelined SCAN + TYPE + PTTL by a minimal C loop".  This is
 * that loop, and nothing more:
 *
 *   cursor = 0
 *   do:
 *       SCAN cursor MATCH pattern COUNT 1000       (one round trip)
 *       for each key returned: TYPE key, PTTL key  (one pipeline, one flush)
 *       read every reply
 *   until the cursor is 0
 *
 * It is deliberately the naive shape: the next SCAN is not overlapped with
 * the current batch's lookups, keys are not de-duplicated, values are not
 * read.  It is still efficient where it does not change the shape: key
 * bytes are passed to hiredis straight from the SCAN reply (no copies, no
 * per-key allocation of our own), and a batch's 2n commands go out in one
 * write.  Only the hiredis calls that exist in 0.14.1 and 1.x are used
 * (redisConnectWithTimeout, redisSetTimeout, redisAppendCommandArgv,
 * redisGetReply), so it builds on Debian bookworm and newer alike.
 *
 *   scan_floor HOST PORT PATTERN
 *
 * Prints one line that bench/run parses:
 *   keys=N seconds=S keys_per_second=R batches=B strings=N hashes=N other=N no_ttl=N gone=N
 * seconds is wall time from the first SCAN to the last reply (connect not
 * included); bench/run also times the whole process from outside.
 * Exit status: 0 done, 1 Redis error, 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis.h>

#define FLOOR_SCAN_COUNT   "1000"
#define FLOOR_TIMEOUT_SEC  30

struct floor_counts {
    uint64_t keys;      /* keys returned by SCAN (duplicates included) */
    uint64_t batches;   /* SCAN calls */
    uint64_t strings;
    uint64_t hashes;
    uint64_t other;     /* any other TYPE */
    uint64_t no_ttl;    /* PTTL -1 */
    uint64_t gone;      /* TYPE none / PTTL -2: deleted between SCAN and lookup */
};

static double now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_port(const char *s, int *port)
{
    char *end = NULL;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > 65535)
        return -1;
    *port = (int)v;
    return 0;
}

/* Read one reply; on failure say what failed and return NULL. */
static redisReply *get_reply(redisContext *c, const char *what)
{
    void *r = NULL;

    if (redisGetReply(c, &r) != REDIS_OK || r == NULL) {
        fprintf(stderr, "scan_floor: reading %s reply: %s\n", what,
                c->errstr[0] ? c->errstr : "no reply");
        return NULL;
    }
    return r;
}

static void count_type(struct floor_counts *n, const redisReply *r)
{
    if (r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_STRING) {
        n->other++;
        return;
    }
    if (strcmp(r->str, "string") == 0)
        n->strings++;
    else if (strcmp(r->str, "hash") == 0)
        n->hashes++;
    else if (strcmp(r->str, "none") == 0)
        n->gone++;
    else
        n->other++;
}

/*
 * One pipeline of TYPE + PTTL for every key in the SCAN reply KEYS, then
 * read all 2n replies.  0 / -1.
 */
static int lookup_batch(redisContext *c, const redisReply *keys, struct floor_counts *n)
{
    const char *argv[2];
    size_t argvlen[2];
    redisReply *r;
    size_t i;

    for (i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];

        if (k->type != REDIS_REPLY_STRING) {
            fprintf(stderr, "scan_floor: SCAN returned a non-string key\n");
            return -1;
        }
        argvlen[1] = k->len;
        argv[1] = k->str;
        argv[0] = "TYPE";
        argvlen[0] = 4;
        if (redisAppendCommandArgv(c, 2, argv, argvlen) != REDIS_OK)
            goto append_failed;
        argv[0] = "PTTL";
        if (redisAppendCommandArgv(c, 2, argv, argvlen) != REDIS_OK)
            goto append_failed;
    }
    for (i = 0; i < keys->elements; i++) {
        if ((r = get_reply(c, "TYPE")) == NULL)
            return -1;
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "scan_floor: TYPE: %s\n", r->str);
            freeReplyObject(r);
            return -1;
        }
        count_type(n, r);
        freeReplyObject(r);

        if ((r = get_reply(c, "PTTL")) == NULL)
            return -1;
        if (r->type != REDIS_REPLY_INTEGER) {
            fprintf(stderr, "scan_floor: PTTL: unexpected reply%s%s\n",
                    r->type == REDIS_REPLY_ERROR ? ": " : "",
                    r->type == REDIS_REPLY_ERROR ? r->str : "");
            freeReplyObject(r);
            return -1;
        }
        if (r->integer == -1)
            n->no_ttl++;
        freeReplyObject(r);
    }
    n->keys += keys->elements;
    return 0;

append_failed:
    fprintf(stderr, "scan_floor: queueing a command: %s\n", c->errstr);
    return -1;
}

/* The whole SCAN iteration.  0 / -1. */
static int scan_all(redisContext *c, const char *pattern, struct floor_counts *n)
{
    /* A SCAN cursor is an unsigned 64-bit number: at most 20 digits. */
    char cursor[32] = "0";
    const char *argv[6];
    size_t argvlen[6];
    redisReply *r = NULL;
    int rc = -1;

    argv[0] = "SCAN";
    argv[2] = "MATCH";
    argv[3] = pattern;
    argv[4] = "COUNT";
    argv[5] = FLOOR_SCAN_COUNT;
    argvlen[0] = 4;
    argvlen[2] = 5;
    argvlen[3] = strlen(pattern);
    argvlen[4] = 5;
    argvlen[5] = strlen(FLOOR_SCAN_COUNT);

    do {
        argv[1] = cursor;
        argvlen[1] = strlen(cursor);
        if (redisAppendCommandArgv(c, 6, argv, argvlen) != REDIS_OK) {
            fprintf(stderr, "scan_floor: queueing SCAN: %s\n", c->errstr);
            goto out;
        }
        if ((r = get_reply(c, "SCAN")) == NULL)
            goto out;
        if (r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "scan_floor: SCAN: %s\n", r->str);
            goto out;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
            || r->element[0]->type != REDIS_REPLY_STRING
            || r->element[0]->len >= sizeof(cursor)
            || r->element[1]->type != REDIS_REPLY_ARRAY) {
            fprintf(stderr, "scan_floor: SCAN: malformed reply\n");
            goto out;
        }
        n->batches++;
        if (r->element[1]->elements > 0 && lookup_batch(c, r->element[1], n) != 0)
            goto out;
        memcpy(cursor, r->element[0]->str, r->element[0]->len);
        cursor[r->element[0]->len] = '\0';
        freeReplyObject(r);
        r = NULL;
    } while (strcmp(cursor, "0") != 0);
    rc = 0;

out:
    if (r != NULL)
        freeReplyObject(r);
    return rc;
}

int main(int argc, char **argv)
{
    struct timeval tv = { FLOOR_TIMEOUT_SEC, 0 };
    struct floor_counts n = { 0 };
    redisContext *c = NULL;
    double start, secs;
    int port = 0;
    int rc = 1;

    if (argc != 4 || parse_port(argv[2], &port) != 0) {
        fprintf(stderr, "usage: scan_floor HOST PORT PATTERN\n");
        return 2;
    }
    c = redisConnectWithTimeout(argv[1], port, tv);
    if (c == NULL || c->err) {
        fprintf(stderr, "scan_floor: connecting to %s:%d: %s\n", argv[1], port,
                c ? c->errstr : "out of memory");
        goto out;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        fprintf(stderr, "scan_floor: setting the command timeout: %s\n", c->errstr);
        goto out;
    }

    start = now_seconds();
    if (scan_all(c, argv[3], &n) != 0)
        goto out;
    secs = now_seconds() - start;

    printf("keys=%" PRIu64 " seconds=%.6f keys_per_second=%.0f batches=%" PRIu64
           " strings=%" PRIu64 " hashes=%" PRIu64 " other=%" PRIu64
           " no_ttl=%" PRIu64 " gone=%" PRIu64 "\n",
           n.keys, secs, secs > 0 ? (double)n.keys / secs : 0.0, n.batches,
           n.strings, n.hashes, n.other, n.no_ttl, n.gone);
    rc = 0;

out:
    if (c != NULL)
        redisFree(c);
    return rc;
}
