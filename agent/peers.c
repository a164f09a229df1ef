/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peers.c - the thread that checks the other shards' agents
 * (agent/peers.h): each round, one GET <peer>/api/v1/shard per other
 * shard, all on one libcurl multi handle, each within PEER_TIMEOUT_MS; a
 * 200 whose answer is that shard's (peer_answer_check()) is an answer,
 * anything else (refused, timed out, another status, another shard) a
 * failure, judged by agent/peerhealth.c.  Rounds start PEER_CHECK_MS
 * apart.  Only this thread touches the multi handle; peers_stop() wakes
 * it (curl_multi_wakeup, the condition variable) and joins it.
 */
#include "agent/peers.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerts/notifier.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"

struct peer {
    int shard;
    char *base;                 /* the shard_peers URL, as configured */
    char *url;                  /* base + PEER_PATH */
    struct peer_health h;       /* under peers.mu */
    CURL *easy;                 /* the check under way, or NULL */
    struct strbuf body;         /* its answer so far */
};

struct peers {
    pthread_mutex_t mu;         /* guards each peer's h, and stop for the cv */
    pthread_cond_t cv;
    atomic_bool stop;
    pthread_t thread;
    CURLM *multi;
    struct peer *p;
    size_t n;
    int shard_index, shard_total;
};

/* The check's answer, kept up to PEER_BODY_MAX bytes (more fails it). */
static size_t
keep_body(char *p, size_t size, size_t n, void *arg)
{
    struct peer *pr = arg;

    sb_add(&pr->body, p, n * size);
    return sb_failed(&pr->body) ? 0 : n * size;
}

/* Add the check of peer i to the multi handle; false when it cannot be
 * made (ENOMEM: this round does not count for it). */
static bool
check_begin(struct peers *ps, size_t i)
{
    struct peer *pr = &ps->p[i];

    if ((pr->easy = curl_easy_init()) == NULL)
        return false;
    curl_easy_setopt(pr->easy, CURLOPT_URL, pr->url);
    curl_easy_setopt(pr->easy, CURLOPT_HTTPGET, 1L);
    notifier_easy_common(pr->easy, (long)PEER_TIMEOUT_MS, pr);
    curl_easy_setopt(pr->easy, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(pr->easy, CURLOPT_WRITEDATA, pr);
    sb_init(&pr->body, PEER_BODY_MAX);
    if (curl_multi_add_handle(ps->multi, pr->easy) != CURLM_OK) {
        curl_easy_cleanup(pr->easy);
        pr->easy = NULL;
        return false;
    }
    return true;
}

static void
check_end(struct peers *ps, struct peer *pr, CURLcode res)
{
    long code = 0;
    char err[160];
    bool ok;

    curl_easy_getinfo(pr->easy, CURLINFO_RESPONSE_CODE, &code);
    ok = false;
    if (res != CURLE_OK)
        snprintf(err, sizeof(err), "%s", curl_easy_strerror(res));
    else if (code != 200)
        snprintf(err, sizeof(err), "HTTP %ld from %s", code, PEER_PATH);
    else
        ok = peer_answer_check(pr->body.buf, pr->body.len, pr->shard, ps->shard_total, err,
                               sizeof(err));
    curl_multi_remove_handle(ps->multi, pr->easy);
    curl_easy_cleanup(pr->easy);
    pr->easy = NULL;
    sb_release(&pr->body);
    pthread_mutex_lock(&ps->mu);
    if (peer_health_record(&pr->h, ok, err, clock_mono_ms())) {
        if (pr->h.down)
            log_warnx("shard %d/%d (%s): %d checks of %s in a row failed (%s): its "
                      "targets are watched by no agent unless a replica of it is up",
                      pr->shard, ps->shard_total, pr->base, PEER_DOWN_CHECKS, PEER_PATH, err);
        else
            log_info("shard %d/%d (%s): answers as that shard again", pr->shard,
                     ps->shard_total, pr->base);
    }
    pthread_mutex_unlock(&ps->mu);
}

/* One round: every peer's check, until all are done (each within
 * PEER_TIMEOUT_MS) or stop. */
static void
round_run(struct peers *ps)
{
    struct CURLMsg *msg;
    int running = 0, left;
    size_t i;

    for (i = 0; i < ps->n; i++)
        (void)check_begin(ps, i);
    do {
        curl_multi_perform(ps->multi, &running);
        while ((msg = curl_multi_info_read(ps->multi, &left)) != NULL) {
            struct peer *pr = NULL;

            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&pr);
            check_end(ps, pr, msg->data.result);
        }
        if (running > 0 && !atomic_load(&ps->stop))
            curl_multi_poll(ps->multi, NULL, 0, 500, NULL);
    } while (running > 0 && !atomic_load(&ps->stop));
    /* stopped mid-round: what is under way is dropped, not judged */
    for (i = 0; i < ps->n; i++)
        if (ps->p[i].easy != NULL) {
            curl_multi_remove_handle(ps->multi, ps->p[i].easy);
            curl_easy_cleanup(ps->p[i].easy);
            ps->p[i].easy = NULL;
        }
}

static void *
peers_main(void *arg)
{
    struct peers *ps = arg;
    int64_t next;

    while (!atomic_load(&ps->stop)) {
        next = clock_deadline(PEER_CHECK_MS);
        round_run(ps);
        pthread_mutex_lock(&ps->mu);
        while (!atomic_load(&ps->stop) && clock_cond_wait_until(&ps->cv, &ps->mu, next) == 0)
            ;
        pthread_mutex_unlock(&ps->mu);
    }
    return NULL;
}

static void
peers_free(struct peers *ps)
{
    size_t i;

    for (i = 0; i < ps->n; i++) {
        free(ps->p[i].base);
        free(ps->p[i].url);
        sb_release(&ps->p[i].body);
    }
    free(ps->p);
    if (ps->multi != NULL)
        curl_multi_cleanup(ps->multi);
    pthread_cond_destroy(&ps->cv);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
}

/* ps's peers: every shard of cfg but its own.  0, or -1 on ENOMEM. */
static int
peers_fill(struct peers *ps, const struct config *cfg)
{
    size_t i, len;

    if ((ps->p = calloc(cfg->nshard_peers, sizeof(*ps->p))) == NULL)
        return -1;
    for (i = 0; i < cfg->nshard_peers; i++) {
        struct peer *pr = &ps->p[ps->n];
        const char *base = cfg->shard_peers[i];

        if ((int)i == cfg->shard_index)
            continue;
        len = strlen(base);
        while (len > 0 && base[len - 1] == '/')
            len--;
        pr->shard = (int)i;
        if ((pr->base = strdup(base)) == NULL ||
            (pr->url = malloc(len + sizeof(PEER_PATH))) == NULL)
            return -1;
        memcpy(pr->url, base, len);
        memcpy(pr->url + len, PEER_PATH, sizeof(PEER_PATH));
        ps->n++;
    }
    return 0;
}

struct peers *
peers_start(const struct config *cfg)
{
    struct peers *ps;

    if (cfg->shard_total <= 1 || cfg->nshard_peers != (size_t)cfg->shard_total)
        return NULL;
    if ((ps = calloc(1, sizeof(*ps))) == NULL)
        goto nomem;
    pthread_mutex_init(&ps->mu, NULL);
    clock_cond_init(&ps->cv);
    ps->shard_index = cfg->shard_index;
    ps->shard_total = cfg->shard_total;
    if (peers_fill(ps, cfg) == -1 || (ps->multi = curl_multi_init()) == NULL)
        goto nomem;
    if (pthread_create(&ps->thread, NULL, peers_main, ps) != 0) {
        log_warnx("cannot start the thread that checks the shard peers: they are not "
                  "checked until a reload or restart that can");
        peers_free(ps);
        return NULL;
    }
    return ps;
nomem:
    log_warnx("out of memory: the shard peers are not checked until a reload or restart");
    if (ps != NULL)
        peers_free(ps);
    return NULL;
}

bool
peers_same(const struct config *a, const struct config *b)
{
    size_t i;

    if (a->shard_index != b->shard_index || a->shard_total != b->shard_total ||
        a->nshard_peers != b->nshard_peers)
        return false;
    for (i = 0; i < a->nshard_peers; i++)
        if (strcmp(a->shard_peers[i], b->shard_peers[i]) != 0)
            return false;
    return true;
}

void
peers_stop(struct peers *ps)
{
    if (ps == NULL)
        return;
    pthread_mutex_lock(&ps->mu);
    atomic_store(&ps->stop, true);
    pthread_cond_signal(&ps->cv);
    pthread_mutex_unlock(&ps->mu);
    curl_multi_wakeup(ps->multi);
    pthread_join(ps->thread, NULL);
    peers_free(ps);
}

int
peers_view(struct peers *ps, struct peer_view **out, size_t *n)
{
    int64_t now = clock_mono_ms();
    size_t i;

    *out = NULL;
    *n = 0;
    if (ps == NULL || ps->n == 0)
        return 0;
    if ((*out = calloc(ps->n, sizeof(**out))) == NULL)
        return -1;
    pthread_mutex_lock(&ps->mu);
    for (i = 0; i < ps->n; i++) {
        const struct peer_health *h = &ps->p[i].h;
        struct peer_view *pv = &(*out)[i];

        pv->shard = ps->p[i].shard;
        pv->down = h->down;
        pv->checks = h->checks;
        pv->failing_ms = h->fails > 0 ? now - h->failing_since_ms : 0;
        snprintf(pv->err, sizeof(pv->err), "%s", h->err);
    }
    pthread_mutex_unlock(&ps->mu);
    *n = ps->n;
    return 0;
}
