/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sinks.h - where notices go: the table of sink formats ([webhook NAME]
 * format =), one row and one file each.
 *
 * A row says which events the format takes, how a batch of alerts becomes
 * a request body, which headers one delivery attempt carries (signing
 * happens here, per attempt, because the signature covers the attempt's
 * timestamp), and which URL the configured one means.  Rows are pure
 * functions: no network, no clock, no locks, so tests/unit/test_sinks.c
 * checks every byte.  The notifier (notifier.c) does the sending.
 *
 * Adding a format: one row X(NAME, "name", sink_name) in
 * conf/sink_formats.h, which makes the enum, the name format = accepts,
 * the declaration below and the row in sinks.c; and one file
 * alerts/sinks/name.c defining const struct sink_type sink_name.
 */
#ifndef LOCKWATCH_SINKS_H
#define LOCKWATCH_SINKS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "alerts/alertset.h"
#include "conf/config.h"

#define SINK_BATCH_MAX      100     /* alerts per request */
#define SINK_HEADERS_MAX    8
#define SINK_HEADER_LEN     256
#define SINK_AM_VALID_MS    (4 * 60 * 1000)   /* endsAt = now + 4m while firing */

/* Bit of an alert_event_kind in sink_type.kinds. */
#define SINK_KIND(k)        (1u << (k))

/* One request's worth of alerts, all from one event kind. */
struct sink_batch {
    enum alert_event_kind kind;
    const struct alert *const *alerts;
    size_t n;
    int64_t now_ms;                 /* Unix ms the batch was made */
    const char *generator_url;      /* link back to the agent; NULL: none */
    long long fence;                /* the leader's fencing token (agent/leader.h),
                                     * in the body of a leader_only format; 0:
                                     * no election */
    const char *replica;            /* [agent] replica: an annotation, never
                                     * a label (replicas' alerts must have
                                     * equal labels); NULL: none */
    const char *runbook;            /* [rules] runbook_url, {alertname} not
                                     * yet replaced; NULL: none */
    int64_t watchdog_since_ms;      /* > 0: add LockwatchWatchdog, firing
                                     * since then (a sink's watchdog = on) */
};

/* Header lines, "Name: value", for one attempt. */
struct sink_headers {
    size_t n;
    char line[SINK_HEADERS_MAX][SINK_HEADER_LEN];
};

/* A signing key: the secret's bytes (see sink_signing_key). */
struct sink_key {
    unsigned char *bytes;           /* NULL: do not sign */
    size_t len;
};

struct sink_type {
    const char *name;               /* as in format = */
    unsigned kinds;                 /* SINK_KIND() of the events it takes */
    /* The body for a batch, malloc'd into *body (not NUL-counted in *len).
     * 0, or -1 on ENOMEM. */
    int (*render)(const struct sink_batch *b, char **body, size_t *len);
    /* The headers of one attempt: msg_id is stable across the retries of
     * one notice, ts is the attempt's Unix time in seconds.  0 / -1. */
    int (*headers)(const struct sink_key *key, const char *msg_id, int64_t ts,
                   const char *body, size_t len, struct sink_headers *h);
    /* The URL to POST to, given the configured url (malloc'd; NULL on
     * ENOMEM). */
    char *(*endpoint)(const char *url);
    /* The receiver's rate limit as the least spacing between requests to
     * one URL, kept by the notifier (alerts/pace.h); 0: none. */
    int64_t min_interval_ms;
    /* With replicas electing a leader ([agent] leader_target), only the
     * leader sends it, each notice with the fence of the term it was made
     * in (X-Lockwatch-Fence), dropped unsent once that term is over: a
     * receiver that talks to no deduplicating cluster (generic, slack). */
    bool leader_only;
};

/* One per row of SINK_FORMATS (conf/sink_formats.h), each in its file. */
#define SINK_DECL(e, name, sym) extern const struct sink_type sym;
SINK_FORMATS(SINK_DECL)
#undef SINK_DECL

/* The row for a configured format. */
const struct sink_type *sink_type_of(enum sink_format f);

/*
 * The HMAC key from a secret_file's contents: a secret that starts with
 * "whsec_" is the Standard Webhooks serialisation, and the key is the
 * base64 decoding of the rest; any other secret is used byte for byte.
 * 0; -1 with errno EINVAL (whsec_ but not base64) or ENOMEM.  Free with
 * sink_key_clear (which wipes the bytes).
 */
int sink_signing_key(const char *secret, struct sink_key *key);
void sink_key_clear(struct sink_key *key);

/*
 * The Standard Webhooks signature "v1,<base64 HMAC-SHA256 of
 * msg_id.ts.body>" into out (at least 64 bytes).  0 / -1.
 */
int sink_sign(const struct sink_key *key, const char *msg_id, int64_t ts,
              const char *body, size_t len, char *out, size_t outlen);

/* Helpers the rows share. */
json_t *sink_json_labels(const struct alert *a);
/* summary, description, and replica and runbook_url when the batch has
 * them */
json_t *sink_json_annotations(const struct sink_batch *b, const struct alert *a);
/* The batch's runbook URL for an alert named name ({alertname} replaced),
 * malloc'd; NULL without one (or out of memory). */
char *sink_runbook(const struct sink_batch *b, enum alert_name name);
/* json_dumps into *body / *len, consuming root.  0 / -1. */
int sink_dump(json_t *root, char **body, size_t *len);
/* Append one header line; -1 if it does not fit. */
int sink_header(struct sink_headers *h, const char *name, const char *value);
/* Headers of an unsigned JSON post: Content-Type alone (a row's headers
 * for a format that does not sign). */
int sink_headers_json(const struct sink_key *key, const char *msg_id, int64_t ts,
                      const char *body, size_t len, struct sink_headers *h);
/* The configured url as is (generic and slack POST there). */
char *sink_endpoint_as_is(const char *url);
/* "firing" / "resolved" for an alert as of a batch */
const char *sink_alert_status(const struct alert *a);

#endif
