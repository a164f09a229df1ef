/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plain.c - plain locks: a string key holding the holder's lw1 token.
 *
 *   acquire   SET key <token> NX PX <lease>; with LW_FENCING a script that
 *             does the same SET and INCRs lockwatch_fence:{key} in one
 *             atomic step (a fence taken apart from the SET could be
 *             overtaken by the next holder's);
 *   release   compare-and-delete script, which also PUBLISHes "0" on
 *             lockwatch_lock__channel:{key} so waiters retry at once;
 *   extend    compare-and-pexpire script (the watchdog's renewal too).
 *
 * A fresh token is made for every attempt: its acquisition time must be
 * when the lock was really taken (the agent ages locks from it), and its 64
 * random bits make it unique, which compare-and-delete relies on.  Its
 * party (host, pid with the process's nonce, thread) stays the thread's.
 */
#include <string.h>

#include "client_impl.h"

static lw_status
make_token(lw_client *c, struct lw_lock *lk, lw_error *err)
{
    struct lwc_token t;
    int n;

    memcpy(t.host, c->hostname, sizeof(t.host));
    t.pid = c->pid;
    t.has_nonce = true;
    t.thread = lk->tid;
    t.acquired_ms = clock_now_ms();
    if (lwc_process_nonce(&t.nonce) != 0 || lwc_random(&t.random, sizeof(t.random)) != 0)
        return lwc_seterr(err, LW_ERR, "cannot read random bytes for the token");
    n = lwc_token_format(lk->holder, sizeof(lk->holder), &t);
    if (n < 0)
        return lwc_seterr(err, LW_ERR, "cannot make a token (is the system "
                          "clock before 2000 or after 2100?)");
    lk->holderlen = (size_t)n;
    lk->acquired_unix_ms = t.acquired_ms;
    return LW_OK;
}

static lw_status
plain_attempt(lw_client *c, redisContext *ctx, struct lw_lock *lk,
              bool want_pttl, long long *pttl, lw_error *err)
{
    char lease[24];
    size_t leaselen = lwc_fmt_u64(lease, (uint64_t)lk->lease_ms);
    redisReply *set = NULL, *ttl = NULL;
    lw_status st;

    st = make_token(c, lk, err);
    if (st != LW_OK)
        return st;

    if (lk->fencing) {
        const char *kv[4] = { lk->key, lk->fence_key, lk->holder, lease };
        size_t kvlen[4] = { lk->keylen, lk->fence_keylen, lk->holderlen, leaselen };
        redisReply *r = lwc_eval(c, ctx, LWC_PLAIN_ACQUIRE_FENCED, 2, 2, kv,
                                 kvlen, err);

        if (r == NULL)
            return LW_ERR;
        st = lwc_acquire_result(r, lk, pttl, err);
        freeReplyObject(r);
        return st;
    }

    {
        const char *argv[6] = { "SET", lk->key, lk->holder, "NX", "PX", lease };
        size_t lens[6] = { 3, lk->keylen, lk->holderlen, 2, 2, leaselen };
        const char *pargv[2] = { "PTTL", lk->key };
        size_t plens[2] = { 4, lk->keylen };
        void *v = NULL;

        if (!want_pttl) {
            set = lwc_command(ctx, 6, argv, lens, "SET", err);
            if (set == NULL)
                return LW_ERR;
        } else {
            /* One round trip for both: a waiter needs the holder's TTL. */
            if (redisAppendCommandArgv(ctx, 6, argv, lens) != REDIS_OK ||
                redisAppendCommandArgv(ctx, 2, pargv, plens) != REDIS_OK ||
                lwc_get_reply(ctx, &v) != REDIS_OK) {
                st = lwc_conn_error(ctx, "SET", err);
                goto out;
            }
            set = v;
            v = NULL;
            if (lwc_get_reply(ctx, &v) != REDIS_OK) {
                st = lwc_conn_error(ctx, "PTTL", err);
                goto out;
            }
            ttl = v;
            *pttl = ttl->type == REDIS_REPLY_INTEGER ? ttl->integer : -1;
        }
    }
    if (set->type == REDIS_REPLY_STATUS) {
        lk->holds = 1;
        st = LW_OK;
    } else if (set->type == REDIS_REPLY_NIL) {
        st = LW_BUSY;
    } else {
        st = lwc_reply_error(set, "SET", err);
    }
out:
    if (set != NULL)
        freeReplyObject(set);
    if (ttl != NULL)
        freeReplyObject(ttl);
    return st;
}

static lw_status
plain_release(lw_client *c, redisContext *ctx, struct lw_lock *lk, lw_error *err)
{
    const char *kv[3] = { lk->key, lk->channel, lk->holder };
    size_t kvlen[3] = { lk->keylen, lk->channellen, lk->holderlen };
    redisReply *r = lwc_eval(c, ctx, LWC_PLAIN_RELEASE, 2, 1, kv, kvlen, err);
    lw_status st;

    if (r == NULL)
        return LW_ERR;
    if (r->type != REDIS_REPLY_INTEGER)
        st = lwc_reply_error(r, "release script", err);
    else if (r->integer == 1)
        st = LW_OK;
    else
        st = lwc_seterr(err, LW_LOST, "lw_unlock %.200s: the lock was no longer "
                        "ours (it expired or was taken over); it was left alone",
                        lk->key);
    freeReplyObject(r);
    return st;
}

const struct lwc_kind lwc_kind_plain = {
    .name = "plain",
    .redis_type = "string",
    .channel_prefix = LWC_PLAIN_CHANNEL,
    .extend_script = LWC_PLAIN_EXTEND,
    .attempt = plain_attempt,
    .release = plain_release,
};
