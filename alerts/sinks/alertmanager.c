/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alertmanager.c - format = alertmanager: Alertmanager's API v2.
 *
 * url is Alertmanager's base URL (http://am:9093); alerts are POSTed to
 * <url>/api/v2/alerts as a JSON array of postable alerts:
 *
 *   [{"labels": {...}, "annotations": {...}, "startsAt": "...",
 *     "endsAt": "...", "generatorURL": "..."}]
 *
 * Alertmanager forgets an alert at its endsAt, so a firing alert is
 * posted with endsAt = now + 4m and re-posted every minute (EV_REFRESH)
 * while it fires: two lost posts later it still fires, the way Prometheus
 * does it (resend delay 1m, valid for 4 x that).  A resolved alert is
 * posted with endsAt = the time it resolved, and re-posted on the same
 * schedule for ALERTSET_RESOLVED_KEEP_MS (5 min), as Alertmanager's API
 * documentation asks of clients.  Deduplication, grouping, repeat and
 * routing are Alertmanager's job, so EV_REPEAT is not taken.
 *
 * Replicas (docs/deploying.md): every replica posts to every Alertmanager
 * of the cluster; their alerts have equal labels, hence one fingerprint,
 * and the cluster delivers each once.  The replica's name is only the
 * annotation "replica", which Alertmanager keeps from the newest post.
 */
#include <stdlib.h>
#include <string.h>

#include "alerts/sinks/sinks.h"
#include "collectors/locks/lockjson.h"

#define AM_PATH "/api/v2/alerts"

/*
 * watchdog = on: LockwatchWatchdog, an alert that always fires while this
 * agent runs (a dead man's switch: a route sends it to a receiver that
 * pages when it stops hearing it).  Posted with every refresh and at start,
 * valid 4 minutes like every alert here, so it ends 4 minutes after this
 * agent stops posting: stopped, hung, or cut off from Alertmanager.  It is
 * about one agent, so a replica's name is a label of it, not only an
 * annotation: each replica has its own.
 */
static json_t *
am_watchdog(const struct sink_batch *b)
{
    json_t *o = json_object(), *labels = json_object();

    if (o == NULL || labels == NULL) {
        json_decref(o);
        json_decref(labels);
        return NULL;
    }
    json_object_set_new(labels, "alertname", json_string("LockwatchWatchdog"));
    json_object_set_new(labels, "severity", json_string("none"));
    if (b->replica != NULL)
        json_object_set_new(labels, "replica", json_string(b->replica));
    json_object_set_new(o, "labels", labels);
    json_object_set_new(o, "annotations", json_pack(
        "{s:s, s:s}", "summary", "lockwatch is alive: this alert always fires while the agent runs",
        "description", "lockwatchd posts this alert every minute while it runs and evaluates "
        "its rules, valid for 4 minutes. Route it to a dead man's switch, a receiver that pages "
        "when it stops hearing it: when it ends, this agent stopped, hung, or cannot reach "
        "Alertmanager, and the lock alerts it sends here stopped with it (they end 4 minutes "
        "after its last post)."));
    json_object_set_new(o, "startsAt", lockjson_time(b->watchdog_since_ms));
    json_object_set_new(o, "endsAt", lockjson_time(b->now_ms + SINK_AM_VALID_MS));
    if (b->generator_url != NULL)
        json_object_set_new(o, "generatorURL", json_string(b->generator_url));
    return o;
}

static int
am_render(const struct sink_batch *b, char **body, size_t *len)
{
    json_t *list, *o;
    size_t i;

    if ((list = json_array()) == NULL)
        return -1;
    for (i = 0; i < b->n; i++) {
        const struct alert *a = b->alerts[i];

        if ((o = json_object()) == NULL)
            goto fail;
        json_object_set_new(o, "labels", sink_json_labels(a));
        json_object_set_new(o, "annotations", sink_json_annotations(b, a));
        json_object_set_new(o, "startsAt", lockjson_time(a->starts_ms));
        json_object_set_new(o, "endsAt", lockjson_time(a->state == ALERT_RESOLVED ?
                                                        a->ends_ms :
                                                        b->now_ms + SINK_AM_VALID_MS));
        if (b->generator_url != NULL)
            json_object_set_new(o, "generatorURL", json_string(b->generator_url));
        if (json_array_append_new(list, o) == -1)
            goto fail;
    }
    if (b->watchdog_since_ms > 0 &&
        ((o = am_watchdog(b)) == NULL || json_array_append_new(list, o) == -1))
        goto fail;
    return sink_dump(list, body, len);
fail:
    json_decref(list);
    return -1;
}

/* <url>/api/v2/alerts, unless url already names that path. */
static char *
am_endpoint(const char *url)
{
    size_t n = strlen(url), plen = strlen(AM_PATH);
    char *out;

    if (n >= plen && strcmp(url + n - plen, AM_PATH) == 0)
        return strdup(url);
    while (n > 0 && url[n - 1] == '/')
        n--;
    if ((out = malloc(n + plen + 1)) == NULL)
        return NULL;
    memcpy(out, url, n);
    memcpy(out + n, AM_PATH, plen + 1);
    return out;
}

const struct sink_type sink_alertmanager = {
    .name = "alertmanager",
    .kinds = SINK_KIND(EV_FIRING) | SINK_KIND(EV_RESOLVED) | SINK_KIND(EV_REFRESH),
    .render = am_render,
    .headers = sink_headers_json,
    .endpoint = am_endpoint,
};
