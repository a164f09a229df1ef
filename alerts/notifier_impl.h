/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notifier_impl.h - the notifier's own structures, shared by notifier.c
 * (the thread, the queues, the transfers) and notifier_retry.c (what a
 * failed try comes to).  Not for other modules: alerts/notifier.h is the
 * notifier's interface.
 */
#ifndef LOCKWATCH_NOTIFIER_IMPL_H
#define LOCKWATCH_NOTIFIER_IMPL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "alerts/notifier.h"
#include "alerts/pace.h"

#define POLL_MAX_MS 1000

struct notice {
    struct notice *next;
    char *body;
    size_t len;
    char id[48];
    int tries;
    int64_t due_mono;
    long long fence;            /* its leader term; 0: not gated */
    bool resolve;               /* says alerts ended: outlives its term */
    int64_t made_boot;          /* CLOCK_BOOTTIME ms it was queued */
    int64_t at_ms;              /* replaceable: a refresh of a later tick says
                                 * it again (Alertmanager); 0: not */
    bool refresh;               /* it is such a refresh (replaces older ones) */
    int64_t first_try_mono;     /* when its first try started; 0: none yet */
    bool probed;                /* was set aside for a probe (said once) */
};

struct transfer;

struct nsink {
    char *name;
    const struct sink_type *type;
    char *url;
    struct sink_key key;
    struct webhook_delivery delivery;
    struct notice *head, *tail;
    size_t queued, bytes;
    uint64_t sent, retried, dropped;
    struct pace pace;           /* its attempts' ends (type->min_interval_ms) */
    bool disabled;              /* 410 Gone: until the next reload */
    bool failing;               /* retryable failures: for logging transitions only */
    uint64_t unsent_stop, unsent_stop_res;  /* tries failed at shutdown (and of
                                             * them resolutions), for its line */
    uint64_t overflowed;        /* notices dropped for room, not said in the log yet */
    int64_t overflow_said_mono; /* when the log last said so; 0: never */
    struct notice *held;        /* set aside after NOTIFY_MAX_TRIES failed tries
                                 * while others wait: the next try (a probe)
                                 * tells a receiver that is down from one that
                                 * refuses this notice (finish()) */
    bool removed;               /* in the graveyard */
    struct transfer *xfer;      /* in flight, or NULL */
    struct nsink *next_dead;
};

struct transfer {
    CURL *easy;
    struct curl_slist *hdrs;
    struct nsink *sink;
    struct notice *notice;
};

struct notifier {
    pthread_mutex_t mu;
    pthread_t thread;
    bool started;
    CURLM *multi;
    struct nsink **sinks;
    size_t nsinks;
    struct nsink *graveyard;
    bool stopping;
    int64_t deadline_mono;
    uint64_t nonce, seq, rng;
    size_t inflight;
    notifier_fence_fn fence;    /* leader election; NULL: none */
    void *fence_arg;
    int64_t grace_ms;           /* a resolution outlives its term by this */
};

/* notifier.c: a notice freed; one back at the head of its sink's queue. */
void ntf_notice_free(struct notice *nt);
void ntf_push_front(struct nsink *s, struct notice *nt);

/* notifier_retry.c; mu held */
bool ntf_retryable(CURLcode res, long code);
void ntf_failed(struct notifier *n, struct nsink *s, struct notice *nt, CURLcode res,
                long code, curl_off_t retry_after);
void ntf_held_refused(struct nsink *s);
void ntf_held_back(struct notifier *n, struct nsink *s);

#endif
