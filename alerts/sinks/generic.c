/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * generic.c - format = generic: signed JSON for any HTTP receiver.
 *
 * Body (docs/alerts.md has the full description):
 *
 *   {"version": "1", "status": "firing" | "resolved",
 *    "reason": "new" | "repeat" | "resolved",
 *    "fence": N (only from an elected leader: its fencing token),
 *    "alerts": [{"status", "labels", "annotations", "startsAt",
 *                "endsAt" (resolved only), "fingerprint", "generatorURL"}]}
 *
 * Headers follow Standard Webhooks: webhook-id (the same on every retry of
 * a notice, so a receiver can drop duplicates), webhook-timestamp (Unix
 * seconds of this attempt) and, when secret_file is set,
 * webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alerts/sinks/sinks.h"
#include "collectors/locks/lockjson.h"

static const char *
reason(enum alert_event_kind k)
{
    switch (k) {
    case EV_FIRING:
        return "new";
    case EV_REPEAT:
        return "repeat";
    case EV_RESOLVED:
        return "resolved";
    default:
        return "refresh";
    }
}

static int
generic_render(const struct sink_batch *b, char **body, size_t *len)
{
    json_t *root = NULL, *list = NULL, *o;
    char fp[17];
    size_t i;

    root = json_object();
    list = json_array();
    if (root == NULL || list == NULL)
        goto fail;
    json_object_set_new(root, "version", json_string("1"));
    json_object_set_new(root, "status", json_string(b->kind == EV_RESOLVED ? "resolved" :
                                                    "firing"));
    json_object_set_new(root, "reason", json_string(reason(b->kind)));
    if (b->fence > 0)
        json_object_set_new(root, "fence", json_integer(b->fence));
    for (i = 0; i < b->n; i++) {
        const struct alert *a = b->alerts[i];

        if ((o = json_object()) == NULL)
            goto fail;
        snprintf(fp, sizeof(fp), "%016" PRIx64, a->fp);
        json_object_set_new(o, "status", json_string(sink_alert_status(a)));
        json_object_set_new(o, "labels", sink_json_labels(a));
        json_object_set_new(o, "annotations", sink_json_annotations(b, a));
        json_object_set_new(o, "startsAt", lockjson_time(a->starts_ms));
        if (a->state == ALERT_RESOLVED)
            json_object_set_new(o, "endsAt", lockjson_time(a->ends_ms));
        json_object_set_new(o, "fingerprint", json_string(fp));
        if (b->generator_url != NULL)
            json_object_set_new(o, "generatorURL", json_string(b->generator_url));
        if (json_array_append_new(list, o) == -1)
            goto fail;
    }
    json_object_set_new(root, "alerts", list);
    return sink_dump(root, body, len);
fail:
    json_decref(list);
    json_decref(root);
    return -1;
}

static int
generic_headers(const struct sink_key *key, const char *msg_id, int64_t ts,
                const char *body, size_t len, struct sink_headers *h)
{
    char tsbuf[32], sig[128];

    snprintf(tsbuf, sizeof(tsbuf), "%" PRId64, ts);
    h->n = 0;
    if (sink_header(h, "Content-Type", "application/json") == -1 ||
        sink_header(h, "webhook-id", msg_id) == -1 ||
        sink_header(h, "webhook-timestamp", tsbuf) == -1)
        return -1;
    if (key->bytes == NULL)
        return 0;
    if (sink_sign(key, msg_id, ts, body, len, sig, sizeof(sig)) == -1)
        return -1;
    return sink_header(h, "webhook-signature", sig);
}

const struct sink_type sink_generic = {
    .name = "generic",
    .kinds = SINK_KIND(EV_FIRING) | SINK_KIND(EV_REPEAT) | SINK_KIND(EV_RESOLVED),
    .render = generic_render,
    .leader_only = true,
    .headers = generic_headers,
    .endpoint = sink_endpoint_as_is,
};
