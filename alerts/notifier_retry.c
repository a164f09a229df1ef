/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notifier_retry.c - what the notifier thread does with a try that failed
 * (alerts/notifier.h): the backoff with full jitter, what is retried, how
 * long a notice is kept, and the probe that keeps one notice the receiver
 * fails for ever from holding back those behind it.  Called by
 * notifier.c's finish() with the notifier's mutex held.
 */
#include "alerts/notifier_impl.h"

#include <inttypes.h>

#include "common/clock.h"
#include "common/log.h"

static uint64_t
rng_next(struct notifier *n)
{
    /* xorshift64*: jitter needs spread, not secrecy */
    n->rng ^= n->rng >> 12;
    n->rng ^= n->rng << 25;
    n->rng ^= n->rng >> 27;
    return n->rng * 2685821657736338717ULL;
}

/* Full jitter: uniform in [0, min(cap, base * 2^(tries-1))], at least
 * 10 ms so a zero draw does not spin. */
static int64_t
backoff_ms(struct notifier *n, const struct nsink *s, int tries)
{
    int64_t ceiling = s->delivery.retry_base_ms;
    int i;

    for (i = 1; i < tries && ceiling < NOTIFY_BACKOFF_CAP_MS; i++)
        ceiling *= 2;
    if (ceiling > NOTIFY_BACKOFF_CAP_MS)
        ceiling = NOTIFY_BACKOFF_CAP_MS;
    ceiling = (int64_t)(rng_next(n) % (uint64_t)(ceiling + 1));
    return ceiling < 10 ? 10 : ceiling;
}

bool
ntf_retryable(CURLcode res, long code)
{
    return res != CURLE_OK || code == 408 || code == 429 || code >= 500;
}

/* A probe was delivered: the receiver is up, and fails only the held
 * notice, which is dropped.  mu held. */
void
ntf_held_refused(struct nsink *s)
{
    struct notice *nt = s->held;

    if (nt == NULL)
        return;
    s->held = NULL;
    log_warnx("webhook %s: the receiver takes other notices but failed %s %d times: dropped%s",
              s->name, nt->resolve ? "a resolution" : "one", nt->tries,
              nt->resolve ? " (the receiver keeps those alerts open until it hears otherwise)" :
              "");
    s->dropped++;
    ntf_notice_free(nt);
}

/* The held notice back at the head, its next try after the backoff.  mu
 * held. */
void
ntf_held_back(struct notifier *n, struct nsink *s)
{
    struct notice *nt = s->held;

    if (nt == NULL)
        return;
    s->held = NULL;
    nt->due_mono = clock_deadline(backoff_ms(n, s, nt->tries));
    ntf_push_front(s, nt);
}

/*
 * A try of nt that may succeed later failed.  Every notice is tried for
 * NOTIFY_KEEP_MS from its first try: a receiver down for minutes loses
 * nothing (a firing notice is said again only at repeat_interval, a
 * resolution never).  But a sink's notices go in order, and one the
 * receiver fails for ever (a body it cannot take, answered 500) must not
 * hold back those behind it: after NOTIFY_MAX_TRIES failed tries, while
 * others wait, it is set aside and the next is tried (a probe).  The probe
 * delivered: the receiver is up and fails only that one, which is
 * dropped (held_refused()); the probe failed too: the receiver is down,
 * and both wait in their order.  mu held.
 */
void
ntf_failed(struct notifier *n, struct nsink *s, struct notice *nt, CURLcode res, long code,
           curl_off_t retry_after)
{
    int64_t delay, age = clock_mono_ms() - nt->first_try_mono;

    if (!s->failing) {
        if (res != CURLE_OK)
            log_warnx("webhook %s: delivery failed: %s (timeout %" PRId64 " ms)", s->name,
                      curl_easy_strerror(res), (int64_t)s->delivery.timeout_ms);
        else
            log_warnx("webhook %s: delivery failed: HTTP %ld", s->name, code);
    }
    s->failing = true;
    if (n->stopping || (nt->tries >= 2 && age >= NOTIFY_KEEP_MS)) {
        if (n->stopping) {
            s->unsent_stop++;
            s->unsent_stop_res += nt->resolve;
        } else {
            log_warnx("webhook %s: %s dropped after %d tries over an hour%s", s->name,
                      nt->resolve ? "a resolution" : "notice", nt->tries,
                      nt->resolve ? " (the receiver keeps those alerts open until it hears "
                      "otherwise)" : "");
        }
        s->dropped++;
        ntf_notice_free(nt);
        ntf_held_back(n, s);
        return;
    }
    s->retried++;
    if (s->held != NULL) {
        /* the probe failed: the receiver is down; both wait, in order */
        ntf_push_front(s, nt);
        ntf_held_back(n, s);
        return;
    }
    if (nt->tries >= NOTIFY_MAX_TRIES && s->head != NULL) {
        if (!nt->probed)        /* said once: a receiver down probes at each retry */
            log_warnx("webhook %s: a %s failed %d tries, %zu notice(s) behind it: trying the "
                      "next to tell a receiver that is down (then all wait) from one that "
                      "fails only this one (then it is dropped)", s->name,
                      nt->resolve ? "resolution" : "notice", nt->tries, s->queued);
        nt->probed = true;
        s->held = nt;
        return;
    }
    delay = backoff_ms(n, s, nt->tries);
    if (retry_after > 0) {
        int64_t ra = (int64_t)retry_after * 1000;

        if (ra > NOTIFY_RETRY_AFTER_MAX_MS)
            ra = NOTIFY_RETRY_AFTER_MAX_MS;
        if (ra > delay)
            delay = ra;
    }
    log_debug("webhook %s: try %d failed (%s, HTTP %ld); next in %" PRId64 " ms", s->name,
              nt->tries, curl_easy_strerror(res), code, delay);
    nt->due_mono = clock_deadline(delay);
    /* back at the head: a sink's notices go out in order */
    ntf_push_front(s, nt);
}
