/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * followsub.c - follow mode's subscriptions (follow_impl.h): one
 * keyspace-notification subscriber a node, each read by a thread of its
 * own that puts the keys named in the pending set (bounded: a cap hit is
 * an overflow, and a full scan repairs it), and proves its subscriber with
 * a PING every FOLLOW_PING_MS (ksub_ping()): one that goes silent ends
 * the subscription, one that falls behind says so (the view is behind
 * until a PING is answered within command_timeout).
 */
#include "collectors/follow/follow_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

/* ---- the reader threads ------------------------------------------------------- */

/* Under mu: an event is lost to a cap (why); a full scan repairs it. */
__attribute__((format(printf, 2, 3)))
static void
overflowed(struct follow *fw, const char *fmt, ...)
{
    va_list ap;

    if (fw->overflow)
        return;
    fw->overflow = true;
    va_start(ap, fmt);
    vsnprintf(fw->overflow_why, sizeof(fw->overflow_why), fmt, ap);
    va_end(ap);
}

static void
on_event(void *arg, const char *key, size_t keylen, const char *event, size_t evlen)
{
    struct follow *fw = arg;

    pthread_mutex_lock(&fw->mu);
    fw->events_total++;
    fw->ev_classes |= ksub_event_class(event, evlen);
    if (key == NULL)
        overflowed(fw, "a notification named a key of %zu bytes, over the %u-byte cap",
                   keylen, (unsigned)FOLLOW_KEY_MAX);
    else if (!fw->overflow &&
             keymap_put(fw->pending, key, keylen, NULL, clock_mono_ms(), NULL) == -1)
        overflowed(fw, "%s the pending set of keys to re-read (%u keys, %u MiB)",
                   errno == ENOSPC ? "notifications overflowed" : "out of memory for",
                   (unsigned)FOLLOW_PENDING_MAX, (unsigned)(FOLLOW_PENDING_BYTES >> 20));
    pthread_cond_signal(&fw->cv);
    pthread_mutex_unlock(&fw->mu);
}

static void *
reader_main(void *arg)
{
    struct fsub *fs = arg;
    struct follow *fw = fs->fw;
    char err[256];
    int rc;

    while (!atomic_load(&fw->th_quit)) {
        /* read first: after this thread was held up (the agent stopped,
         * starved of CPU), what came meanwhile says behind, or answers
         * the PING, before the PING's deadline is judged */
        rc = ksub_read(fs->k, 100, on_event, fw, err, sizeof(err));
        atomic_store(&fs->proven_mono, ksub_proven_mono(fs->k));
        if (rc == 0 && (rc = ksub_ping(fs->k, fs->ping_ms, err, sizeof(err))) >= 0) {
            if (rc == 1 && !atomic_load(&fs->behind)) {
                pthread_mutex_lock(&fw->mu);
                snprintf(fs->behind_why, sizeof(fs->behind_why), "%s", err);
                pthread_mutex_unlock(&fw->mu);
            }
            atomic_store(&fs->behind, rc == 1);
            rc = 0;
        }
        if (rc != 0) {
            pthread_mutex_lock(&fw->mu);
            if (!fw->sub_lost)
                snprintf(fw->sub_err, sizeof(fw->sub_err), "%s", err);
            fw->sub_lost = true;
            fw->sub_over |= rc == -2;
            pthread_cond_signal(&fw->cv);
            pthread_mutex_unlock(&fw->mu);
            break;
        }
    }
    return NULL;
}

bool
follow_subs_behind(struct follow *fw, char *why, size_t whylen)
{
    size_t i;

    for (i = 0; i < fw->nsubs; i++) {
        if (!atomic_load(&fw->subs[i].behind))
            continue;
        pthread_mutex_lock(&fw->mu);
        snprintf(why, whylen, "%s", fw->subs[i].behind_why);
        pthread_mutex_unlock(&fw->mu);
        return true;
    }
    return false;
}

/* Stop the readers and close the subscriptions.  The records stay (a
 * reconcile compares with them) but are no longer followed. */
void
follow_unsubscribe(struct follow *fw)
{
    struct keymap *fresh;
    size_t i;

    fw->following = false;
    fw->behind_since_ms = 0;
    atomic_store(&fw->th_quit, 1);
    for (i = 0; i < fw->nsubs; i++) {
        if (fw->subs[i].th_running)
            pthread_join(fw->subs[i].th, NULL);
        fw->subs[i].th_running = false;
        ksub_close(fw->subs[i].k);
        fw->subs[i].k = NULL;
    }
    fw->nsubs = 0;
    fw->sub_key = 0;
    fresh = keymap_new(FOLLOW_PENDING_MAX, FOLLOW_PENDING_BYTES);
    pthread_mutex_lock(&fw->mu);
    if (fresh != NULL) {
        /* on ENOMEM the old set stays: never NULL, and a little stale at
         * worst (its keys are re-read once more) */
        keymap_free(fw->pending, NULL);
        fw->pending = fresh;
    }
    fw->overflow = false;
    fw->sub_lost = false;
    fw->sub_over = false;
    fw->sub_err[0] = '\0';
    pthread_mutex_unlock(&fw->mu);
    /* the full scan that follows reads those keys too */
    if ((fresh = keymap_new(FOLLOW_PENDING_MAX, FOLLOW_PENDING_BYTES)) != NULL) {
        keymap_free(fw->retry, NULL);
        fw->retry = fresh;
        fw->retry_overflow = false;
    }
}

/* Subscribe on every node, each with its reader thread.  1, or (nothing
 * subscribed, fw->note saying why) -1 when a server refused, 0 when one
 * could not be reached or did not answer in time (try again). */
int
follow_subscribe(struct follow *fw, const struct target_conf *t, const struct target_conf *nodes,
          size_t n)
{
    char *pats[65];
    char err[256];
    size_t i, np = 0;
    bool refused = false;

    for (i = 0; i < t->npatterns && np < 64; i++)
        pats[np++] = t->patterns[i];
    pats[np++] = (char *)REGISTRY_PREFIX "*";
    atomic_store(&fw->th_quit, 0);
    for (i = 0; i < n; i++) {
        struct fsub *fs = &fw->subs[fw->nsubs];

        fs->fw = fw;
        fs->ping_ms = FOLLOW_PING_MS(t);
        atomic_store(&fs->proven_mono, 0);
        atomic_store(&fs->behind, false);
        if ((fs->k = ksub_open(&nodes[i], pats, np, FOLLOW_KEY_MAX, &refused, err,
                               sizeof(err))) == NULL) {
            follow_note(fw, "not following keyspace notifications: %s; %s", err, refused ?
                        "scanning every scan_interval" : "scanning, and subscribing again at "
                        "the next full scan");
            goto fail;
        }
        fw->nsubs++;
        if (pthread_create(&fs->th, NULL, reader_main, fs) != 0) {
            follow_note(fw, "not following keyspace notifications: no thread for the subscriber; "
                 "scanning every scan_interval");
            goto fail;
        }
        fs->th_running = true;
    }
    return 1;
fail:
    follow_unsubscribe(fw);
    return refused ? -1 : 0;
}

