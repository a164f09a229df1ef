/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sinks.c - the table of sink formats and what the rows share: JSON for
 * labels, annotations and times, and Standard Webhooks signing.
 *
 * Signing (Standard Webhooks v1): the signed content is
 * "<webhook-id>.<webhook-timestamp>.<body>", the MAC is HMAC-SHA256 with
 * the secret's key, and the header value is "v1," + base64(MAC).  The
 * spec serialises secrets as "whsec_" + base64(key), so such a secret is
 * decoded; a secret without the prefix is used as it is, which is what
 * receivers that take any shared string (most home-grown ones) expect.
 */
#include "alerts/sinks/sinks.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strbuf.h"

#define SINK_ROW(e, name, sym) [SINK_##e] = &sym,
static const struct sink_type *const sink_types[] = { SINK_FORMATS(SINK_ROW) };
#undef SINK_ROW

const struct sink_type *
sink_type_of(enum sink_format f)
{
    if ((size_t)f >= sizeof(sink_types) / sizeof(sink_types[0]))
        return NULL;
    return sink_types[f];
}

#define WHSEC_PREFIX "whsec_"

int
sink_signing_key(const char *secret, struct sink_key *key)
{
    size_t n = strlen(secret), pad = 0;
    const char *b64;
    unsigned char *out;
    int dec;

    key->bytes = NULL;
    key->len = 0;
    if (strncmp(secret, WHSEC_PREFIX, strlen(WHSEC_PREFIX)) != 0) {
        if ((key->bytes = malloc(n ? n : 1)) == NULL)
            return -1;
        memcpy(key->bytes, secret, n);
        key->len = n;
        return 0;
    }
    b64 = secret + strlen(WHSEC_PREFIX);
    n = strlen(b64);
    if (n == 0 || n % 4 != 0 || n > 1024) {
        errno = EINVAL;
        return -1;
    }
    if ((out = malloc(n / 4 * 3 + 1)) == NULL)
        return -1;
    dec = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
    if (dec < 0) {
        free(out);
        errno = EINVAL;
        return -1;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes */
    if (b64[n - 1] == '=')
        pad++;
    if (b64[n - 2] == '=')
        pad++;
    key->bytes = out;
    key->len = (size_t)dec - pad;
    return 0;
}

void
sink_key_clear(struct sink_key *key)
{
    if (key->bytes != NULL) {
        OPENSSL_cleanse(key->bytes, key->len);
        free(key->bytes);
    }
    key->bytes = NULL;
    key->len = 0;
}

int
sink_sign(const struct sink_key *key, const char *msg_id, int64_t ts,
          const char *body, size_t len, char *out, size_t outlen)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    char tsbuf[32], *msg = NULL;
    size_t idlen = strlen(msg_id), tslen, n;
    int rc = -1;

    if (key->bytes == NULL || outlen < 3 + 4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1)
        return -1;
    snprintf(tsbuf, sizeof(tsbuf), "%lld", (long long)ts);
    tslen = strlen(tsbuf);
    /* the signed content, in one piece for the one-shot HMAC() (the
     * HMAC_CTX calls are deprecated in OpenSSL 3) */
    n = idlen + 1 + tslen + 1 + len;
    if ((msg = malloc(n)) == NULL)
        goto out;
    memcpy(msg, msg_id, idlen);
    msg[idlen] = '.';
    memcpy(msg + idlen + 1, tsbuf, tslen);
    msg[idlen + 1 + tslen] = '.';
    memcpy(msg + idlen + 2 + tslen, body, len);
    if (HMAC(EVP_sha256(), key->bytes, (int)key->len, (const unsigned char *)msg, n,
             mac, &maclen) == NULL)
        goto out;
    memcpy(out, "v1,", 3);
    EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)maclen);
    rc = 0;
out:
    free(msg);
    OPENSSL_cleanse(mac, sizeof(mac));
    return rc;
}

json_t *
sink_json_labels(const struct alert *a)
{
    json_t *o = json_object();

    if (o == NULL)
        return NULL;
    /* every value is valid UTF-8 (rules.c); a NULL from json_string would
     * only mean ENOMEM, and json_object_set_new refuses it */
    json_object_set_new(o, "alertname", json_string(alert_name_str(a->name)));
    if (a->target != NULL)
        json_object_set_new(o, "target", json_string(a->target));
    if (a->class_ != NULL)
        json_object_set_new(o, "class", json_string(a->class_));
    if (a->key != NULL)
        json_object_set_new(o, "key", json_string(a->key));
    if (a->shard != NULL)
        json_object_set_new(o, "shard", json_string(a->shard));
    if (a->node != NULL)
        json_object_set_new(o, "node", json_string(a->node));
    json_object_set_new(o, "severity", json_string(alert_severity_str(alert_severity_of(a->name))));
    return o;
}

char *
sink_runbook(const struct sink_batch *b, enum alert_name name)
{
    static const char ph[] = "{alertname}";
    const char *t = b->runbook, *p, *nm = alert_name_str(name);
    struct strbuf sb;

    if (t == NULL)
        return NULL;
    sb_init(&sb, (strlen(t) + 1) * (strlen(nm) + 1));   /* every byte a name */
    while ((p = strstr(t, ph)) != NULL) {
        sb_add(&sb, t, (size_t)(p - t));
        sb_adds(&sb, nm);
        t = p + sizeof(ph) - 1;
    }
    sb_adds(&sb, t);
    if (sb_failed(&sb)) {
        sb_release(&sb);
        return NULL;
    }
    return sb_detach(&sb, NULL);
}

json_t *
sink_json_annotations(const struct sink_batch *b, const struct alert *a)
{
    json_t *o = json_pack("{s:s, s:s}", "summary", a->summary, "description", a->description);
    char *rb;

    if (o != NULL && b->replica != NULL)
        json_object_set_new(o, "replica", json_string(b->replica));
    if (o != NULL && (rb = sink_runbook(b, a->name)) != NULL) {
        json_object_set_new(o, "runbook_url", json_string(rb));
        free(rb);
    }
    return o;
}

int
sink_dump(json_t *root, char **body, size_t *len)
{
    char *s;

    if (root == NULL)
        return -1;
    s = json_dumps(root, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(root);
    if (s == NULL)
        return -1;
    *body = s;
    *len = strlen(s);
    return 0;
}

int
sink_header(struct sink_headers *h, const char *name, const char *value)
{
    int n;

    if (h->n >= SINK_HEADERS_MAX)
        return -1;
    n = snprintf(h->line[h->n], SINK_HEADER_LEN, "%s: %s", name, value);
    if (n < 0 || (size_t)n >= SINK_HEADER_LEN)
        return -1;
    h->n++;
    return 0;
}

int
sink_headers_json(const struct sink_key *key, const char *msg_id, int64_t ts,
                  const char *body, size_t len, struct sink_headers *h)
{
    (void)key;
    (void)msg_id;
    (void)ts;
    (void)body;
    (void)len;
    h->n = 0;
    return sink_header(h, "Content-Type", "application/json");
}

char *
sink_endpoint_as_is(const char *url)
{
    return strdup(url);
}

const char *
sink_alert_status(const struct alert *a)
{
    return a->state == ALERT_RESOLVED ? "resolved" : "firing";
}
