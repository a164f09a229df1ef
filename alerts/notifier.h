/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * notifier.h - delivering notices to the sinks, on a thread of its own.
 *
 * The notifier owns libcurl.  Its thread runs one curl multi handle with
 * at most one request in flight per sink, so a sink that hangs or is down
 * delays only its own queue: never a scan, an HTTP request, the alert tick
 * or another sink.  Each sink has a bounded queue (NOTIFY_QUEUE_MAX
 * notices, NOTIFY_QUEUE_BYTES bytes); when it is full the oldest queued
 * notice is dropped, since the newest says the most about now.
 *
 * A delivery succeeds on 2xx only.  Redirects are not followed, only http
 * and https are spoken, and each attempt gives up after the sink's
 * timeout.  Transport errors, 408, 429 and 5xx are retried after an
 * exponential backoff with full jitter (a random wait up to retry_base x
 * 2^(tries-1), at most NOTIFY_BACKOFF_CAP_MS), or after Retry-After when
 * the receiver says longer, for NOTIFY_KEEP_MS from the first try (a
 * firing notice is said again only at repeat_interval, a resolution
 * never); after NOTIFY_MAX_TRIES failed tries while others wait, the next
 * is tried: delivered, the receiver fails only the first, which is dropped
 * (a sink's notices go in order: one it fails for ever must not hold the
 * others back); failed, both wait.  A format
 * with a rate limit (sink_type.min_interval_ms; Slack's one message per
 * second) starts no attempt to a URL before that long after the previous
 * attempt to the same URL ended, whichever sink made it (alerts/pace.h);
 * its notices wait in the queue meanwhile.  A full queue drops its oldest
 * notice that is no resolution (the oldest, when all are), said in the
 * log at most once a minute.  410 Gone
 * disables the sink until the next reload.  Any other status is a
 * permanent failure for that notice.  Counters per sink: sent, retried (a
 * failed try that will be tried again) and dropped (queue overflow, tries
 * exhausted, a permanent failure, a disabled sink, or shutdown).
 *
 * Secrets: URLs (Slack's embeds its token) and signing keys never reach
 * the log; messages name the sink by its [webhook NAME].
 *
 * Thread safety: every function may be called from any one thread (the
 * agent's main thread) while the notifier thread runs.
 */
#ifndef LOCKWATCH_NOTIFIER_H
#define LOCKWATCH_NOTIFIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "alerts/sinks/sinks.h"

/* The options every request the agent makes shares (the sinks', and the
 * shard peers' checks of agent/peers.c): the whole request and its connect
 * within timeout_ms, no signals, no redirects, http and https only, the
 * agent's User-Agent, the answer's body dropped, priv as CURLOPT_PRIVATE. */
void notifier_easy_common(CURL *easy, long timeout_ms, void *priv);
#include "conf/config.h"

#define NOTIFY_QUEUE_MAX       1000
#define NOTIFY_QUEUE_BYTES     (16u * 1024 * 1024)
#define NOTIFY_MAX_TRIES       10
#define NOTIFY_KEEP_MS         (60 * 60 * 1000)  /* a notice is tried this long */
#define NOTIFY_BACKOFF_CAP_MS  (5 * 60 * 1000)
#define NOTIFY_RETRY_AFTER_MAX_MS (60 * 60 * 1000)

struct notifier;

/* One sink as configured; everything is copied. */
struct notifier_sink_conf {
    const char *name;
    const struct sink_type *type;
    const char *url;                /* the endpoint to POST to */
    const struct sink_key *key;     /* signing key (generic); bytes NULL: none */
    struct webhook_delivery delivery;   /* the [webhook]'s; retry_base <= 0: 1s */
};

struct notifier_stats {
    char *name;
    uint64_t sent, retried, dropped;
    size_t queued;
    bool disabled;
};

/* Once per process, before any thread exists / after all have ended. */
int notifier_global_init(void);
void notifier_global_cleanup(void);

/*
 * Leader election (agent/leader.h): fence(arg) is the fencing token while
 * this agent leads, else 0.  A notice queued with a fence is sent only
 * while fence(arg) still returns it, checked as each attempt starts, and
 * carries it as X-Lockwatch-Fence; otherwise it is dropped (a deposed
 * leader sends nothing), except a resolution queued less than grace_ms
 * before (CLOCK_BOOTTIME, which a stopped process or a suspended machine
 * does not halt): it goes out with the fence of its term, for a page left
 * open is worse than a resolution said twice, and a receiver that refuses
 * a lower fence can still refuse it.  NULL: no election.
 */
typedef long long (*notifier_fence_fn)(void *arg);
void notifier_set_gate(struct notifier *n, notifier_fence_fn fence, void *arg,
                       int64_t grace_ms);

/* Start the thread.  NULL on failure (errno set). */
struct notifier *notifier_new(void);

/*
 * Replace the sinks.  A sink that keeps its name and format keeps its
 * queue and counters (and is enabled again after a 410); others start
 * empty; sinks no longer configured are dropped with their queues.
 * 0, or -1 on ENOMEM with the old sinks kept.
 */
int notifier_configure(struct notifier *n, const struct notifier_sink_conf *sinks,
                       size_t nsinks);

/* Queue a body for sink i of the last configure (ownership of body
 * passes; it is freed even on failure). */
void notifier_enqueue(struct notifier *n, size_t sink, char *body, size_t len);
/* The same for a notice made in the leader term of fence (> 0): sent
 * only while that term lasts (notifier_set_gate); one made while no
 * replica could lead (fence < 0, no X-Lockwatch-Fence): dropped once
 * another replica leads (the gate's fence 0).  resolve: the notice says
 * alerts ended, and outlives its term by the gate's grace.  at_ms: the tick
 * (Unix ms) of a notice that a later refresh says again (Alertmanager's
 * firing notices and refreshes, its re-posts of every alert), 0: none;
 * refresh: it is such a re-post, and replaces the queued ones of older
 * ticks. */
void notifier_enqueue_fenced(struct notifier *n, size_t sink, char *body, size_t len,
                             long long fence, bool resolve, int64_t at_ms, bool refresh);

/* Copy the counters; free with notifier_stats_free.  0 / -1. */
int notifier_stats(struct notifier *n, struct notifier_stats **out, size_t *nout);
void notifier_stats_free(struct notifier_stats *st, size_t n);

/*
 * Stop: for up to flush_ms, deliver what is queued (one try each, no
 * backoff), then abandon what is left (counted as dropped) and end the
 * thread.  NULL is fine.
 */
void notifier_free(struct notifier *n, int64_t flush_ms);

#endif
