/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notifier.c - the notifier thread: per-sink queues, libcurl multi,
 * retries with backoff (see notifier.h for the contract).
 *
 * One mutex guards the sinks, their queues and counters.  The thread holds
 * it while it picks what to send and books results, and never while curl
 * works: curl_multi_poll sleeps until a transfer has news, the next retry
 * is due (at most a second), or notifier_enqueue wakes it with
 * curl_multi_wakeup.  Only this thread touches the multi handle and the
 * easy handles.
 *
 * A sink's in-flight notice is off its queue, owned by its transfer, so a
 * queue overflow never frees a body curl is still sending.  A sink that a
 * reload removes while a transfer is in flight moves to a graveyard and
 * is freed when that transfer ends.
 *
 * webhook-id: "msg_" + a random per-process nonce + a sequence number,
 * fixed when a notice is queued, so every retry carries the same id.
 */
#include "alerts/notifier.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "alerts/pace.h"
#include "common/clock.h"
#include "common/log.h"

#include "alerts/notifier_impl.h"


static int64_t
unix_s(void)
{
    return (int64_t)time(NULL);
}

int
notifier_global_init(void)
{
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void
notifier_global_cleanup(void)
{
    curl_global_cleanup();
}

void
ntf_notice_free(struct notice *nt)
{
    if (nt == NULL)
        return;
    free(nt->body);
    free(nt);
}

/* Drop every queued notice of s; returns how many (*nres: of which
 * resolutions, when not NULL). */
static uint64_t
drop_queue(struct nsink *s, uint64_t *nres)
{
    uint64_t k = 0;

    while (s->head != NULL) {
        struct notice *nt = s->head;

        s->head = nt->next;
        if (nres != NULL && nt->resolve)
            (*nres)++;
        ntf_notice_free(nt);
        k++;
    }
    s->tail = NULL;
    s->queued = 0;
    s->bytes = 0;
    if (s->held != NULL) {
        if (nres != NULL && s->held->resolve)
            (*nres)++;
        ntf_notice_free(s->held);
        s->held = NULL;
        k++;
    }
    return k;
}

static void
sink_free(struct nsink *s)
{
    if (s == NULL)
        return;
    drop_queue(s, NULL);
    sink_key_clear(&s->key);
    free(s->name);
    free(s->url);
    free(s);
}

void
ntf_push_front(struct nsink *s, struct notice *nt)
{
    nt->next = s->head;
    s->head = nt;
    if (s->tail == NULL)
        s->tail = nt;
    s->queued++;
    s->bytes += nt->len;
}

static struct notice *
pop_front(struct nsink *s)
{
    struct notice *nt = s->head;

    if (nt == NULL)
        return NULL;
    s->head = nt->next;
    if (s->head == NULL)
        s->tail = NULL;
    nt->next = NULL;
    s->queued--;
    s->bytes -= nt->len;
    return nt;
}

/* A full queue is said in the log, at most once a minute. */
static void
overflow_say(struct nsink *s)
{
    int64_t now = clock_mono_ms();

    if (s->overflowed == 0 ||
        (s->overflow_said_mono != 0 && now - s->overflow_said_mono < 60000))
        return;
    log_warnx("webhook %s: queue full (%d notices or %u MiB): dropping the oldest for room "
              "(%" PRIu64 " since the last such line; every drop counts in "
              "lockwatch_notifications_total{result=\"dropped\"}); the receiver is down or "
              "slower than the alerts", s->name, NOTIFY_QUEUE_MAX, NOTIFY_QUEUE_BYTES >> 20,
              s->overflowed);
    s->overflowed = 0;
    s->overflow_said_mono = now;
}

static size_t
discard(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)p;
    (void)ud;
    return size * nmemb;
}

void
notifier_easy_common(CURL *easy, long timeout_ms, void *priv)
{
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(easy, CURLOPT_USERAGENT, "lockwatch/" LOCKWATCH_VERSION);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, priv);
}

/*
 * May nt, made in a leader term (or unelected), go out now?  Made in a
 * term that is over (a deposed leader says nothing; made unelected, < 0:
 * once another leads), it is dropped and freed, but for a resolution
 * younger than the grace: a receiver that never hears an alert ended
 * keeps it open for good, one that hears it twice loses nothing, and the
 * fence it carries lets a receiver that wants to refuse it.  mu held.
 */
static bool
in_term(struct notifier *n, struct nsink *s, struct notice *nt)
{
    long long cur = n->fence != NULL ? n->fence(n->fence_arg) : 0;

    if ((nt->fence > 0 && cur == nt->fence) || (nt->fence < 0 && cur != 0))
        return true;
    if (nt->resolve && clock_ms_of(CLOCK_BOOTTIME) - nt->made_boot < n->grace_ms)
        return true;
    if (nt->fence > 0)
        log_info("webhook %s: a notice of leader term %lld dropped unsent: this "
                 "replica no longer leads", s->name, nt->fence);
    else
        log_info("webhook %s: a notice made while no replica could lead dropped "
                 "unsent: another replica leads now", s->name);
    s->dropped++;
    ntf_notice_free(nt);
    return false;
}

/* Start sending s's head notice.  Called with mu held. */
static void
start(struct notifier *n, struct nsink *s, int64_t now)
{
    struct transfer *x = NULL;
    struct sink_headers h;
    struct notice *nt;
    int64_t timeout = s->delivery.timeout_ms;
    size_t i;

    nt = pop_front(s);
    if (nt->tries++ == 0)
        nt->first_try_mono = clock_mono_ms();
    if (nt->fence != 0 && !in_term(n, s, nt))
        return;
    if ((x = calloc(1, sizeof(*x))) == NULL || (x->easy = curl_easy_init()) == NULL)
        goto fail;
    x->sink = s;
    x->notice = nt;
    if (s->type->headers(&s->key, nt->id, unix_s(), nt->body, nt->len, &h) == -1)
        goto fail;
    for (i = 0; i < h.n; i++) {
        struct curl_slist *l = curl_slist_append(x->hdrs, h.line[i]);

        if (l == NULL)
            goto fail;
        x->hdrs = l;
    }
    if (nt->fence > 0) {
        char fh[64];
        struct curl_slist *l;

        snprintf(fh, sizeof(fh), "X-Lockwatch-Fence: %lld", nt->fence);
        if ((l = curl_slist_append(x->hdrs, fh)) == NULL)
            goto fail;
        x->hdrs = l;
    }
    /* no "Expect: 100-continue" round trip before larger bodies */
    {
        struct curl_slist *l = curl_slist_append(x->hdrs, "Expect:");

        if (l == NULL)
            goto fail;
        x->hdrs = l;
    }
    if (n->stopping && n->deadline_mono - now < timeout)
        timeout = n->deadline_mono - now > 1 ? n->deadline_mono - now : 1;
    curl_easy_setopt(x->easy, CURLOPT_URL, s->url);
    curl_easy_setopt(x->easy, CURLOPT_POST, 1L);
    curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, nt->body);
    curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)nt->len);
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
    notifier_easy_common(x->easy, (long)timeout, x);
    if (curl_multi_add_handle(n->multi, x->easy) != CURLM_OK)
        goto fail;
    s->xfer = x;
    n->inflight++;
    return;
fail:
    /* out of memory or headers that do not fit: this notice cannot go */
    log_warnx("webhook %s: cannot prepare a request (out of memory?); notice dropped",
              s->name);
    s->dropped++;
    if (x != NULL) {
        if (x->easy != NULL)
            curl_easy_cleanup(x->easy);
        curl_slist_free_all(x->hdrs);
        free(x);
    }
    ntf_notice_free(nt);
}

/* Book a finished transfer.  Called with mu held. */
static void
finish(struct notifier *n, struct transfer *x, CURLcode res)
{
    struct nsink *s = x->sink;
    struct notice *nt = x->notice;
    curl_off_t retry_after = 0;
    long code = 0;

    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(x->easy, CURLINFO_RETRY_AFTER, &retry_after);
    curl_multi_remove_handle(n->multi, x->easy);
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdrs);
    free(x);
    n->inflight--;
    s->xfer = NULL;
    /* the clock counts whole milliseconds, truncated: the answer came up to
     * 1 ms after the millisecond read, so the end counts from the next one
     * and the spacing is never short by the truncation (a receiver saw
     * 999.x ms between two messages) */
    pace_ended(&s->pace, clock_mono_ms() + 1);

    if (s->removed) {
        /* the sink left the config while this was in flight */
        struct nsink **pp;

        for (pp = &n->graveyard; *pp != NULL; pp = &(*pp)->next_dead)
            if (*pp == s) {
                *pp = s->next_dead;
                break;
            }
        ntf_notice_free(nt);
        sink_free(s);
        return;
    }
    if (res == CURLE_OK && code >= 200 && code <= 299) {
        s->sent++;
        if (s->failing)
            log_info("webhook %s: delivering again", s->name);
        s->failing = false;
        ntf_notice_free(nt);
        ntf_held_refused(s);
        return;
    }
    if (res == CURLE_OK && code == 410) {
        uint64_t k = 1 + drop_queue(s, NULL);

        log_warnx("webhook %s: the receiver answered 410 Gone; sink disabled until the "
                  "next reload (SIGHUP), %" PRIu64 " notice(s) dropped", s->name, k);
        s->disabled = true;
        s->dropped += k;
        ntf_notice_free(nt);
        return;
    }
    if (!ntf_retryable(res, code)) {
        /* said each time: a receiver that refuses is no outage, and the
         * next outage is said as it begins */
        log_warnx("webhook %s: HTTP %ld is not retried; %s dropped%s", s->name, code,
                  nt->resolve ? "a resolution" : "notice",
                  code >= 300 && code < 400 ? " (redirects are not followed: give the "
                  "final URL)" : code == 401 || code == 403 || code == 404 ?
                  " (check the URL and its token)" : "");
        s->dropped++;
        ntf_notice_free(nt);
        ntf_held_back(n, s);        /* a probe refused: the held notice is tried again */
        return;
    }
    ntf_failed(n, s, nt, res, code, retry_after);
}

static bool
idle(const struct notifier *n)
{
    size_t i;

    if (n->inflight > 0)
        return false;
    for (i = 0; i < n->nsinks; i++)
        if (n->sinks[i]->head != NULL && !n->sinks[i]->disabled)
            return false;
    return true;
}

/*
 * When s's head notice may start, due at due: for a rate-limited format,
 * not before its spacing after the last attempt to the same URL by any
 * sink, and INT64_MAX while another sink's request to that URL is in
 * flight (its end wakes the thread).  Sinks are few; mu held.
 */
static int64_t
start_at(const struct notifier *n, const struct nsink *s, int64_t due)
{
    const struct pace *last = &s->pace;
    size_t i;

    if (s->type->min_interval_ms <= 0)
        return due;
    for (i = 0; i < n->nsinks; i++) {
        const struct nsink *o = n->sinks[i];

        if (o == s || strcmp(o->url, s->url) != 0)
            continue;
        if (o->xfer != NULL)
            return INT64_MAX;
        last = pace_later(last, &o->pace);
    }
    return pace_start_at(s->type->min_interval_ms, last, due);
}

/* Start what is due; return how long the thread may sleep.  mu held. */
static int64_t
schedule(struct notifier *n, int64_t now)
{
    int64_t wait = POLL_MAX_MS, at;
    size_t i;

    for (i = 0; i < n->nsinks; i++) {
        struct nsink *s = n->sinks[i];

        if (s->xfer != NULL || s->head == NULL)
            continue;
        if (s->disabled) {
            s->dropped += drop_queue(s, NULL);
            continue;
        }
        /* at shutdown retries wait no more, the receiver's rate limit still holds */
        at = start_at(n, s, n->stopping ? now : s->head->due_mono);
        if (at <= now) {
            start(n, s, now);
            if (s->xfer == NULL && s->head != NULL)
                wait = 0;       /* dropped unsent (a past leader term): the next */
            continue;
        }
        if (at - now < wait)
            wait = at - now;
    }
    if (n->stopping && n->deadline_mono - now < wait)
        wait = n->deadline_mono - now;
    return wait < 0 ? 0 : wait;
}

static void *
notifier_main(void *arg)
{
    struct notifier *n = arg;
    struct CURLMsg *msg;
    int64_t now, wait;
    int running, left;
    size_t i;

    pthread_mutex_lock(&n->mu);
    for (;;) {
        now = clock_mono_ms();
        if (n->stopping && (now >= n->deadline_mono || idle(n)))
            break;
        wait = schedule(n, now);
        pthread_mutex_unlock(&n->mu);
        curl_multi_poll(n->multi, NULL, 0, (int)wait, NULL);
        curl_multi_perform(n->multi, &running);
        pthread_mutex_lock(&n->mu);
        while ((msg = curl_multi_info_read(n->multi, &left)) != NULL) {
            struct transfer *x = NULL;

            if (msg->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            if (x != NULL)
                finish(n, x, msg->data.result);
        }
    }
    /* out of time: abandon what is in flight or queued, and say so (the
     * counters die with the process) */
    for (i = 0; i < n->nsinks; i++) {
        struct nsink *s = n->sinks[i];
        struct transfer *x = s->xfer;
        uint64_t k = 0, nres = 0;

        if (x != NULL) {
            curl_multi_remove_handle(n->multi, x->easy);
            curl_easy_cleanup(x->easy);
            curl_slist_free_all(x->hdrs);
            nres += x->notice->resolve;
            ntf_notice_free(x->notice);
            free(x);
            s->xfer = NULL;
            k++;
        }
        k += drop_queue(s, &nres);
        s->dropped += k;
        k += s->unsent_stop;            /* tried in the last chance, failed */
        nres += s->unsent_stop_res;
        if (k > 0)
            log_warnx("webhook %s: %" PRIu64 " notice(s) unsent at shutdown, %" PRIu64
                      " of them resolutions (the receiver keeps those alerts open until "
                      "it hears otherwise)", s->name, k, nres);
    }
    while (n->graveyard != NULL) {
        struct nsink *s = n->graveyard;

        n->graveyard = s->next_dead;
        if (s->xfer != NULL) {
            curl_multi_remove_handle(n->multi, s->xfer->easy);
            curl_easy_cleanup(s->xfer->easy);
            curl_slist_free_all(s->xfer->hdrs);
            ntf_notice_free(s->xfer->notice);
            free(s->xfer);
        }
        sink_free(s);
    }
    pthread_mutex_unlock(&n->mu);
    return NULL;
}

struct notifier *
notifier_new(void)
{
    struct notifier *n = calloc(1, sizeof(*n));
    int err;

    if (n == NULL)
        return NULL;
    pthread_mutex_init(&n->mu, NULL);
    if (getrandom(&n->nonce, sizeof(n->nonce), GRND_NONBLOCK) != (ssize_t)sizeof(n->nonce))
        n->nonce = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)clock_mono_ms();
    n->rng = n->nonce | 1;
    if ((n->multi = curl_multi_init()) == NULL) {
        errno = ENOMEM;
        goto fail;
    }
    err = pthread_create(&n->thread, NULL, notifier_main, n);
    if (err != 0) {
        errno = err;
        goto fail;
    }
    n->started = true;
    return n;
fail:
    if (n->multi != NULL)
        curl_multi_cleanup(n->multi);
    pthread_mutex_destroy(&n->mu);
    free(n);
    return NULL;
}

static struct nsink *
sink_from(const struct notifier_sink_conf *c)
{
    struct nsink *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->name = strdup(c->name);
    s->type = c->type;
    if (s->name == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

/* Give s the settings of c (copies).  -1 on ENOMEM, s unchanged. */
static int
sink_set(struct nsink *s, const struct notifier_sink_conf *c)
{
    struct sink_key key = { NULL, 0 };
    char *url = strdup(c->url);

    if (url == NULL)
        return -1;
    if (c->key != NULL && c->key->bytes != NULL) {
        if ((key.bytes = malloc(c->key->len ? c->key->len : 1)) == NULL) {
            free(url);
            return -1;
        }
        memcpy(key.bytes, c->key->bytes, c->key->len);
        key.len = c->key->len;
    }
    free(s->url);
    sink_key_clear(&s->key);
    s->url = url;
    s->key = key;
    s->delivery = c->delivery;
    if (s->delivery.retry_base_ms <= 0)
        s->delivery.retry_base_ms = 1000;
    s->disabled = false;
    return 0;
}

int
notifier_configure(struct notifier *n, const struct notifier_sink_conf *conf, size_t nconf)
{
    struct nsink **list, **made;
    size_t i, j;
    bool failed = false;

    list = calloc(nconf ? nconf : 1, sizeof(*list));
    made = calloc(nconf ? nconf : 1, sizeof(*made));  /* new ones, to undo */
    if (list == NULL || made == NULL) {
        free(list);
        free(made);
        return -1;
    }
    pthread_mutex_lock(&n->mu);
    for (i = 0; i < nconf && !failed; i++) {
        for (j = 0; j < n->nsinks && list[i] == NULL; j++)
            if (n->sinks[j] != NULL && strcmp(n->sinks[j]->name, conf[i].name) == 0 &&
                n->sinks[j]->type == conf[i].type)
                list[i] = n->sinks[j];
        if (list[i] == NULL) {
            if ((list[i] = made[i] = sink_from(&conf[i])) == NULL)
                failed = true;
        }
    }
    /* on ENOMEM the old list stays in force; a kept sink may then already
     * have its new url, key or timeout, which is as good as the old ones */
    for (i = 0; i < nconf && !failed; i++)
        if (sink_set(list[i], &conf[i]) == -1)
            failed = true;
    if (failed) {
        for (i = 0; i < nconf; i++)
            sink_free(made[i]);
        pthread_mutex_unlock(&n->mu);
        free(list);
        free(made);
        return -1;
    }
    for (j = 0; j < n->nsinks; j++) {
        struct nsink *s = n->sinks[j];
        bool kept = false;

        uint64_t k, nres = 0;

        for (i = 0; i < nconf && !kept; i++)
            kept = list[i] == s;
        if (kept)
            continue;
        k = drop_queue(s, &nres) + (s->xfer != NULL);
        if (k > 0)
            log_warnx("webhook %s: no longer configured: %" PRIu64 " notice(s) dropped unsent, "
                      "%" PRIu64 " of them resolutions", s->name, k, nres);
        if (s->xfer != NULL) {
            s->removed = true;
            s->next_dead = n->graveyard;
            n->graveyard = s;
        } else {
            sink_free(s);
        }
    }
    free(n->sinks);
    n->sinks = list;
    n->nsinks = nconf;
    pthread_mutex_unlock(&n->mu);
    free(made);
    curl_multi_wakeup(n->multi);
    return 0;
}

void
notifier_set_gate(struct notifier *n, notifier_fence_fn fence, void *arg, int64_t grace_ms)
{
    pthread_mutex_lock(&n->mu);
    n->fence = fence;
    n->fence_arg = arg;
    n->grace_ms = grace_ms;
    pthread_mutex_unlock(&n->mu);
}

void
notifier_enqueue(struct notifier *n, size_t sink, char *body, size_t len)
{
    notifier_enqueue_fenced(n, sink, body, len, 0, false, 0, false);
}

/* A refresh of tick at_ms replaces the queued notices a refresh says again
 * (Alertmanager's: the firing ones and the older refreshes) of older ticks:
 * it says every alert again, with an end a few minutes on, so an older one
 * says less and, sent late, an end already past (Alertmanager would take
 * the alert as resolved).  Not the one in flight, which is off the queue.
 * mu held. */
static void
drop_older_refreshes(struct nsink *s, int64_t at_ms)
{
    struct notice **pp = &s->head, *nt;

    if (s->held != NULL && s->held->at_ms > 0 && s->held->at_ms < at_ms) {
        ntf_notice_free(s->held);
        s->held = NULL;
    }
    s->tail = NULL;
    while ((nt = *pp) != NULL) {
        if (nt->at_ms > 0 && nt->at_ms < at_ms) {
            *pp = nt->next;
            s->queued--;
            s->bytes -= nt->len;
            ntf_notice_free(nt);
            continue;
        }
        s->tail = nt;
        pp = &nt->next;
    }
}

void
notifier_enqueue_fenced(struct notifier *n, size_t sink, char *body, size_t len,
                        long long fence, bool resolve, int64_t at_ms, bool refresh)
{
    struct notice *nt;
    struct nsink *s;

    pthread_mutex_lock(&n->mu);
    if (sink >= n->nsinks || n->stopping) {
        pthread_mutex_unlock(&n->mu);
        free(body);
        return;
    }
    s = n->sinks[sink];
    if (s->disabled || (nt = calloc(1, sizeof(*nt))) == NULL) {
        s->dropped++;
        pthread_mutex_unlock(&n->mu);
        free(body);
        return;
    }
    nt->body = body;
    nt->len = len;
    nt->fence = fence;
    nt->resolve = resolve;
    nt->at_ms = at_ms;
    nt->refresh = refresh;
    nt->made_boot = clock_ms_of(CLOCK_BOOTTIME);
    if (refresh && at_ms > 0)
        drop_older_refreshes(s, at_ms);
    snprintf(nt->id, sizeof(nt->id), "msg_%016" PRIx64 "_%" PRIu64, n->nonce, ++n->seq);
    /* full: drop the oldest, the newest says more about now */
    while (s->head != NULL &&
           (s->queued >= NOTIFY_QUEUE_MAX || s->bytes + len > NOTIFY_QUEUE_BYTES)) {
        ntf_notice_free(pop_front(s));
        s->dropped++;
        s->overflowed++;
    }
    overflow_say(s);
    if (s->tail != NULL)
        s->tail->next = nt;
    else
        s->head = nt;
    s->tail = nt;
    s->queued++;
    s->bytes += len;
    pthread_mutex_unlock(&n->mu);
    curl_multi_wakeup(n->multi);
}

int
notifier_stats(struct notifier *n, struct notifier_stats **out, size_t *nout)
{
    struct notifier_stats *st;
    size_t i;

    *out = NULL;
    *nout = 0;
    pthread_mutex_lock(&n->mu);
    st = calloc(n->nsinks ? n->nsinks : 1, sizeof(*st));
    if (st == NULL)
        goto fail;
    for (i = 0; i < n->nsinks; i++) {
        const struct nsink *s = n->sinks[i];

        if ((st[i].name = strdup(s->name)) == NULL) {
            notifier_stats_free(st, i);
            goto fail;
        }
        st[i].sent = s->sent;
        st[i].retried = s->retried;
        st[i].dropped = s->dropped;
        st[i].queued = s->queued + (s->xfer != NULL) + (s->held != NULL);
        st[i].disabled = s->disabled;
    }
    *out = st;
    *nout = n->nsinks;
    pthread_mutex_unlock(&n->mu);
    return 0;
fail:
    pthread_mutex_unlock(&n->mu);
    return -1;
}

void
notifier_stats_free(struct notifier_stats *st, size_t n)
{
    size_t i;

    if (st == NULL)
        return;
    for (i = 0; i < n; i++)
        free(st[i].name);
    free(st);
}

void
notifier_free(struct notifier *n, int64_t flush_ms)
{
    size_t i;

    if (n == NULL)
        return;
    pthread_mutex_lock(&n->mu);
    n->stopping = true;
    n->deadline_mono = clock_deadline(flush_ms > 0 ? flush_ms : 0);    /* bounded, always */
    pthread_mutex_unlock(&n->mu);
    if (n->started) {
        curl_multi_wakeup(n->multi);
        pthread_join(n->thread, NULL);
    }
    for (i = 0; i < n->nsinks; i++)
        sink_free(n->sinks[i]);
    free(n->sinks);
    curl_multi_cleanup(n->multi);
    pthread_mutex_destroy(&n->mu);
    free(n);
}
