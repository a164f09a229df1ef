/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release_http.c - POST /api/v1/locks/release, the guarded release over
 * HTTP; it counts each answer in struct agent's releases[] (exported as
 * lockwatch_releases_total).
 *
 * The order of checks is the order of least surprise for an attacker and
 * an operator alike: the feature off answers 404 like any unknown path;
 * then the method; then the bearer token, before a byte of the body is
 * read or stored (401 without it, 403 with another); then the query,
 * which must be empty (400 naming a parameter: the request is the body);
 * then the body (at most RELEASE_HTTP_BODY_MAX bytes, 413 past it; 400 when it is not the
 * JSON the contract says).  Tokens are compared as SHA-256 digests with
 * CRYPTO_memcmp, so the time taken says nothing about the token, not even
 * its length.
 *
 * The release itself is collectors/release/release.c, as for lockctl: the script
 * does every guard.  It runs, as the target's release_user when it has one
 * (config_target_writer()), on a connection opened for this request to
 * the node that serves the key (target_open(): the target, the
 * sentinels' primary, the key's cluster shard, found through the nodes the
 * agent's scan knows as the cluster's), and a slow Redis never
 * blocks the scanner's connection.  It runs on a thread of its own while
 * MHD holds its connection suspended, never on an MHD worker: a worker
 * serves many connections in one loop, so one that waited on a
 * stalled Redis would hold a probe that it had taken in with the release.
 * The thread answers nothing itself: it resumes the connection, and MHD
 * calls the handler again, which answers.  Held on two sides: at most
 * RELEASE_HTTP_RUNNING_MAX releases run at once (one more is answered 503
 * with Retry-After at once), and each has one deadline for all its Redis
 * I/O, discovery included: the target's command_timeout from its start (a
 * redisconn scope), plus the TCP connect (connect_timeout).  The server
 * waits for them before it stops (release_http_drain).
 * The config is copied under the agent lock first: a reload meanwhile
 * frees the old one.  The holder age the agent knows (from the last
 * snapshot: since the tracker first saw the holding, or last saw its lease
 * set again, which may be the same holder id taking the lock again) goes
 * to the script with the request, and counts there only while the key's
 * PTTL shows no lease set since (known_lock()).  So for a lock a watchdog
 * renews, if_older_than counts from its last renewal the agent saw.
 */
#include "agent/http/release_http.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "agent/agent.h"
#include "agent/http/routes.h"
#include "agent/http/throttle.h"
#include "common/keytext.h"
#include "collectors/formats/formats.h"
#include "collectors/locks/lockjson.h"
#include "collectors/redis/conn.h"
#include "collectors/redis/target.h"
#include "common/clock.h"
#include "collectors/release/release.h"

#define CT_JSON     "application/json"
#define REASON_MAX  512         /* bytes of reason kept for the audit */
#define BEARER      "Bearer "

/* Per request, between MHD's calls. */
struct job;

struct req_state {
    char *body;
    size_t len;
    bool too_big;
    struct job *job;            /* a release running or run: answer it */
};

/* What the request needs from the config, copied under the agent lock. */
struct snapshot_conf {
    bool on;
    char *token;
    char *audit_stream;
};

static int
reply(struct MHD_Connection *c, unsigned int status, char *body, size_t len,
      const char *hname, const char *hvalue)
{
    struct MHD_Response *r;
    int ret;

    if (body == NULL) {
        static const char oom[] = "{\"error\":\"out of memory\"}";

        status = 500;
        body = strdup(oom);
        len = sizeof(oom) - 1;
        if (body == NULL)
            return MHD_NO;
    }
    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CT_JSON);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (hname != NULL)
        MHD_add_response_header(r, hname, hvalue);
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static int
reply_json(struct MHD_Connection *c, unsigned int status, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | LOCKJSON_REALS) : NULL;

    json_decref(o);
    return reply(c, status, s, s ? strlen(s) : 0, NULL, NULL);
}

static int
reply_error(struct MHD_Connection *c, unsigned int status, const char *msg,
            const char *hname, const char *hvalue)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *s = o ? json_dumps(o, JSON_COMPACT | LOCKJSON_REALS) : NULL;

    json_decref(o);
    return reply(c, status, s, s ? strlen(s) : 0, hname, hvalue);
}

static void
conf_clear(struct snapshot_conf *sc)
{
    if (sc->token != NULL) {
        explicit_bzero(sc->token, strlen(sc->token));
        free(sc->token);
    }
    free(sc->audit_stream);
    memset(sc, 0, sizeof(*sc));
}

static int
conf_copy(struct agent *a, struct snapshot_conf *sc)
{
    memset(sc, 0, sizeof(*sc));
    pthread_mutex_lock(&a->mu);
    sc->on = a->cfg->unlock_http;
    if (sc->on) {
        sc->token = strdup(a->cfg->unlock_token ? a->cfg->unlock_token : "");
        sc->audit_stream = strdup(a->cfg->audit_stream);
    }
    pthread_mutex_unlock(&a->mu);
    if (sc->on && (sc->token == NULL || sc->audit_stream == NULL)) {
        conf_clear(sc);
        return -1;
    }
    return 0;
}

/* Constant time in the token's bytes and length: compare digests. */
static bool
token_ok(const char *given, size_t glen, const char *want)
{
    unsigned char dg[EVP_MAX_MD_SIZE], dw[EVP_MAX_MD_SIZE];
    unsigned int lg = 0, lw = 0;

    if (want[0] == '\0')
        return false;           /* never "any token" by accident */
    if (EVP_Digest(given, glen, dg, &lg, EVP_sha256(), NULL) != 1 ||
        EVP_Digest(want, strlen(want), dw, &lw, EVP_sha256(), NULL) != 1 || lg != lw)
        return false;
    return CRYPTO_memcmp(dg, dw, lg) == 0;
}

/* 0 authorised; else the HTTP status to answer (401, 403). */
static unsigned int
authorise(struct MHD_Connection *c, const struct snapshot_conf *sc)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                MHD_HTTP_HEADER_AUTHORIZATION);
    size_t blen = strlen(BEARER);

    if (h == NULL || strncasecmp(h, BEARER, blen) != 0)
        return 401;
    h += blen;
    while (*h == ' ')
        h++;
    return token_ok(h, strlen(h), sc->token) ? 0 : 403;
}

static const struct sockaddr *
peer_addr(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

    return ci != NULL ? ci->client_addr : NULL;
}

/* Wrong tokens from this client too often: 429 with Retry-After, before
 * the token is looked at (throttle.h).  MHD_YES/NO when answered, -1 not. */
static int
refuse_guessing(struct agent *a, struct MHD_Connection *c)
{
    char after[24], msg[160];
    int64_t wait_s = throttle_check(a->throttle, peer_addr(c), clock_mono_ms());

    if (wait_s <= 0)
        return -1;
    snprintf(after, sizeof(after), "%lld", (long long)wait_s);
    snprintf(msg, sizeof(msg), "too many requests: %d wrong tokens from this address within "
             "%ds; try again in %llds", THROTTLE_FAILS, THROTTLE_WINDOW_MS / 1000,
             (long long)wait_s);
    return reply_error(c, 429, msg, MHD_HTTP_HEADER_RETRY_AFTER, after);
}

/* "http:<peer address>", the operator in the audit entry. */
static void
peer_operator(struct MHD_Connection *c, char *buf, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char host[NI_MAXHOST];
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    socklen_t salen = sa == NULL ? 0 : sa->sa_family == AF_INET6 ?
        (socklen_t)sizeof(struct sockaddr_in6) : (socklen_t)sizeof(struct sockaddr_in);

    if (sa == NULL || getnameinfo(sa, salen, host, sizeof(host), NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(buf, len, "http");
    else
        snprintf(buf, len, "http:%s", host);
}

/* ---- the request body ----------------------------------------------------- */

struct body {
    const char *target;         /* NULL: the only target */
    char *key, *holder;
    size_t keylen, holderlen;
    char reason[REASON_MAX + 1];
    bool if_leaked, dry_run;
    int64_t older_ms;
};

/* key or key_escaped into *out (malloc'd); NULL msg on success. */
static const char *
bytes_field(json_t *root, const char *name, const char *ename, char **out, size_t *len)
{
    json_t *plain = json_object_get(root, name), *esc = json_object_get(root, ename);
    const char *s;
    size_t n;

    if ((plain == NULL) == (esc == NULL))
        return name[0] == 'k' ? "give exactly one of key and key_escaped"
                              : "give exactly one of holder and holder_escaped";
    if (!json_is_string(plain ? plain : esc))
        return name[0] == 'k' ? "key must be a string" : "holder must be a string";
    s = json_string_value(plain ? plain : esc);
    n = json_string_length(plain ? plain : esc);
    if ((*out = malloc(n + 1)) == NULL)
        return "out of memory";
    if (plain != NULL) {
        memcpy(*out, s, n);
        *len = n;
    } else if ((*len = keytext_unpercent(*out, s, n, 0)) == (size_t)-1) {
        return name[0] == 'k' ? "key_escaped is not valid percent-encoding"
                              : "holder_escaped is not valid percent-encoding";
    }
    (*out)[*len] = '\0';
    return NULL;
}

/* The first field of root that is none of the body's: NULL, or the 400's
 * message in why, naming it (printable ASCII, at most HTTP_ECHO_MAX bytes)
 * and the known ones. */
static const char *
unknown_field(json_t *root, char *why, size_t whylen)
{
    static const char *const known[] = { "target", "key", "key_escaped", "holder",
                                         "holder_escaped", "reason", "if_leaked",
                                         "if_older_than", "dry_run" };
    const size_t nknown = sizeof(known) / sizeof(known[0]);
    char name[HTTP_ECHO_MAX + 1];
    const char *k;
    json_t *v;
    size_t i, n;
    int w;

    json_object_foreach(root, k, v) {
        for (i = 0; i < nknown && strcmp(k, known[i]) != 0; i++)
            ;
        if (i < nknown)
            continue;
        keytext_ascii(name, sizeof(name), k);
        w = snprintf(why, whylen, "unknown field \"%s\" (known: ", name);
        for (n = w > 0 ? (size_t)w : 0, i = 0; i < nknown && n < whylen; i++) {
            w = snprintf(why + n, whylen - n, "%s%s", known[i], i + 1 < nknown ? ", " : ")");
            n += w > 0 ? (size_t)w : 0;
        }
        return why;
    }
    return NULL;
}

/* Parse the body; NULL, or what is wrong with it (400; in why when it
 * names what was sent). */
static const char *
parse_body(const char *buf, size_t len, struct body *b, json_t **rootp, char *why,
           size_t whylen)
{
    json_error_t jerr;
    json_t *root, *v;
    const char *msg;

    memset(b, 0, sizeof(*b));
    root = *rootp = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL || !json_is_object(root))
        return "the body must be a JSON object {target, key, holder, reason, if_leaked, "
               "if_older_than}";
    if ((msg = unknown_field(root, why, whylen)) != NULL)
        return msg;
    if ((v = json_object_get(root, "target")) != NULL) {
        if (!json_is_string(v))
            return "target must be a string";
        b->target = json_string_value(v);
    }
    if ((msg = bytes_field(root, "key", "key_escaped", &b->key, &b->keylen)) != NULL ||
        (msg = bytes_field(root, "holder", "holder_escaped", &b->holder, &b->holderlen)) != NULL)
        return msg;
    /* an empty holder is a lock's value as it may be (SET key ""): named
     * on purpose, it is compared as any other */
    if (b->keylen == 0)
        return "key must not be empty";
    if ((v = json_object_get(root, "reason")) != NULL) {
        if (!json_is_string(v))
            return "reason must be a string";
        snprintf(b->reason, sizeof(b->reason), "%s", json_string_value(v));
    }
    if ((v = json_object_get(root, "if_leaked")) != NULL) {
        if (!json_is_boolean(v))
            return "if_leaked must be true or false";
        b->if_leaked = json_is_true(v);
    }
    if ((v = json_object_get(root, "dry_run")) != NULL) {
        if (!json_is_boolean(v))
            return "dry_run must be true or false";
        b->dry_run = json_is_true(v);
    }
    if ((v = json_object_get(root, "if_older_than")) != NULL) {
        if (json_is_integer(v) && json_integer_value(v) >= 0 &&
            json_integer_value(v) <= INT64_MAX / 1000)
            b->older_ms = (int64_t)json_integer_value(v) * 1000;
        else if (!json_is_string(v) ||
                 config_parse_duration(json_string_value(v), &b->older_ms) == -1)
            return "if_older_than must be a duration (\"10m\") or whole seconds";
        /* 0 would be no guard at all, as lockctl's --if-older-than refuses */
        if (b->older_ms <= 0)
            return "if_older_than must be more than 0 (leave it out for no age condition)";
    }
    return NULL;
}

/* ---- the target ------------------------------------------------------------- */

/* A NUL-terminated string's bytes wiped and freed (a secret). */
static void
free_secret(char *s)
{
    if (s != NULL) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static void
strv_free(char **v, size_t n)
{
    size_t i;

    for (i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

static void
target_clear(struct target_conf *t)
{
    free(t->name);
    free(t->user);
    free(t->release_user);
    free(t->master_name);
    free(t->sentinels);
    free_secret(t->password);
    strv_free(t->patterns, t->npatterns);
    strv_free(t->exclude_patterns, t->nexclude_patterns);
    strv_free(t->semaphore_patterns, t->nsemaphore_patterns);
    strv_free(t->format_globs, t->nformat_patterns);
    strv_free(t->format_names, t->nformat_patterns);
    free(t->tls_ca_file);
    free(t->tls_ca);
    free(t->tls_ca_dir);
    free(t->tls_cert_file);
    free(t->tls_cert);
    free(t->tls_key_file);
    free_secret(t->tls_key);
    free(t->tls_server_name);
    memset(t, 0, sizeof(*t));
}

/* *s copied into a string of its own (NULL stays NULL); false on ENOMEM. */
static bool
str_own(char **s)
{
    return *s == NULL || (*s = strdup(*s)) != NULL;
}

/* *v (n strings) copied into an array of its own; false on ENOMEM, when
 * *v is NULL and the strings copied so far are freed. */
static bool
strv_own(char ***v, size_t n)
{
    char **from = *v, **to;
    size_t i;

    if (from == NULL)
        return true;
    *v = NULL;
    if ((to = calloc(n ? n : 1, sizeof(*to))) == NULL)
        return false;
    for (i = 0; i < n; i++)
        if ((to[i] = strdup(from[i])) == NULL) {
            strv_free(to, i);
            return false;
        }
    *v = to;
    return true;
}

/*
 * Copy the target named name (the only one when name is NULL) out of the
 * live config: what a connection and the script need.  0 found, 1 no such
 * target (or several and no name), -1 ENOMEM.
 */
/*
 * Why target_copy() found no target, naming the configured ones as the
 * locks API does (bounded: a long list ends in "...").  The asked name is
 * echoed as printable ASCII only.
 */
static void
target_unknown(struct agent *a, const char *name, char *buf, size_t size)
{
    char echo[129];
    size_t n = 0, i;
    int w;

    if (name != NULL) {
        keytext_ascii(echo, sizeof(echo), name);
        w = snprintf(buf, size, "no target \"%s\" (known targets: ", echo);
    } else {
        w = snprintf(buf, size, "target is required: the agent has several (");
    }
    n = w > 0 && n + (size_t)w < size ? n + (size_t)w : size - 1;
    pthread_mutex_lock(&a->mu);
    for (i = 0; i < a->cfg->ntargets && n + 1 < size; i++) {
        w = snprintf(buf + n, size - n, "%s%s", i > 0 ? ", " : "", a->cfg->targets[i].name);
        n = w > 0 && n + (size_t)w < size ? n + (size_t)w : size - 1;
    }
    pthread_mutex_unlock(&a->mu);
    if (n + 2 < size)
        snprintf(buf + n, size - n, ")");
    else if (size > 4)
        memcpy(buf + size - 4, "...", 4);
}

static int
target_copy(struct agent *a, const char *name, struct target_conf *out)
{
    const struct target_conf *t = NULL;
    int rc = 1;
    bool ok;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&a->mu);
    if (name != NULL)
        t = config_target(a->cfg, name);
    else if (a->cfg->ntargets == 1)
        t = &a->cfg->targets[0];
    if (t != NULL) {
        rc = -1;
        /* the release is a write: as the target's release_user, if any.
         * Every string is copied: a reload frees the config the release,
         * on its own thread, would otherwise still read (its patterns,
         * exclude_patterns and declared formats; TLS at the connect). */
        config_target_writer(t, out);
        out->url = NULL;
        out->password_file = out->release_password_file = out->release_password = NULL;
        out->sentinels = NULL;
        ok = str_own(&out->name) && str_own(&out->release_user) && str_own(&out->user) &&
             str_own(&out->password) && str_own(&out->master_name);
        /* what str_own() did not reach yet must not be freed as ours */
        if (!ok) {
            if (out->name == t->name)
                out->name = NULL;
            if (out->release_user == t->release_user)
                out->release_user = NULL;
            if (out->user == t->user || out->user == t->release_user)
                out->user = NULL;
            if (out->password == t->password || out->password == t->release_password)
                out->password = NULL;
            if (out->master_name == t->master_name)
                out->master_name = NULL;
        }
        ok = ok && (t->nsentinels == 0 ||
                    (out->sentinels = calloc(t->nsentinels, sizeof(*t->sentinels))) != NULL);
        if (ok && out->sentinels != NULL)
            memcpy(out->sentinels, t->sentinels, t->nsentinels * sizeof(*t->sentinels));
        ok = strv_own(&out->patterns, t->npatterns) && ok;
        ok = strv_own(&out->exclude_patterns, t->nexclude_patterns) && ok;
        ok = strv_own(&out->semaphore_patterns, t->nsemaphore_patterns) && ok;
        ok = strv_own(&out->format_globs, t->nformat_patterns) && ok;
        ok = strv_own(&out->format_names, t->nformat_patterns) && ok;
        ok = str_own(&out->tls_ca_file) && ok;
        ok = str_own(&out->tls_ca) && ok;
        ok = str_own(&out->tls_ca_dir) && ok;
        ok = str_own(&out->tls_cert_file) && ok;
        ok = str_own(&out->tls_cert) && ok;
        ok = str_own(&out->tls_key_file) && ok;
        ok = str_own(&out->tls_key) && ok;
        ok = str_own(&out->tls_server_name) && ok;
        if (ok)
            rc = 0;
    }
    pthread_mutex_unlock(&a->mu);
    if (rc == -1)
        target_clear(out);
    return rc;
}

/* What the agent's newest view of target knows for a release, in one
 * walk.  Returns the holder's age as the agent's tracker proves it (since
 * its first sight, or the last read that found its lease set again:
 * tracker.h), or 0, with *pttl, the PTTL the key has now if nobody set its
 * lease since that read (-1: it had no TTL); *format: the lock's format in
 * the agent's last scan, or NULL (*guessed: only a guess, released by
 * compare-and-delete).  *not_leaked: the agent's last scan did not judge
 * the lock leaked although it saw no TTL, or did not see the lock at all
 * (a lock with a TTL is left to the script, which refuses it as every
 * client's release does).  With nodes, the nodes the view knows as its
 * cluster's (a failed pass keeps those of the last good one), copied: the
 * release finds the key's node through them, as the scan does, and not
 * through the URL's node alone, which may be in another cluster by now. */
static int64_t
known_lock(struct agent *a, const char *target, const struct body *b, bool *not_leaked,
           long long *pttl, const char **format, bool *guessed,
           struct cluster_node **nodes, size_t *nnodes)
{
    struct view v;
    int64_t age = 0, now = clock_now_ms();
    const struct snapshot *s = NULL;
    size_t i, k, h;

    *not_leaked = true;
    *format = NULL;
    *guessed = false;
    if (nodes != NULL) {
        *nodes = NULL;
        *nnodes = 0;
    }
    if (agent_view(a, &v) == -1)
        return 0;
    for (i = 0; i < v.ntargets && s == NULL; i++)
        if (strcmp(v.targets[i].name, target) == 0)
            s = v.targets[i].snap;
    if (s != NULL && nodes != NULL && s->nnodes > 0 &&
        (*nodes = malloc(s->nnodes * sizeof(**nodes))) != NULL) {
        memcpy(*nodes, s->nodes, s->nnodes * sizeof(**nodes));
        *nnodes = s->nnodes;
    }
    for (k = 0; s != NULL && s->ok && k < s->nlocks; k++) {
        const struct snap_lock *l = s->locks[k];

        if (l->key_len != b->keylen || memcmp(l->key, b->key, b->keylen) != 0)
            continue;
        *not_leaked = l->pttl_ms == -1 && !(l->states & LOCK_LEAKED);
        /* the format of the agent's last scan: the script releases it as
         * that, and refuses if its shape changed since (the name is a row
         * of the static format table: it outlives the view) */
        if (l->format < formats_count)
            *format = formats_table[l->format].name;
        *guessed = l->format_source == FMT_SOURCE_GUESSED;
        /* the tracker's first-seen time is the lock's: it is this holder's
         * age only when the holder is the lock's one holder (a reader that
         * joined a long-held read lock is young) */
        for (h = 0; h < l->nholders && l->holders_total == 1; h++)
            if (!l->holders[h].truncated && l->holders[h].id_len == b->holderlen &&
                memcmp(l->holders[h].id, b->holder, b->holderlen) == 0 &&
                l->first_seen_ms > 0 && snap_unbroken_ms(l) < v.now_ms)
                age = v.now_ms - snap_unbroken_ms(l);
        *pttl = l->expires_ms <= 0 ? -1 : l->expires_ms > now ? l->expires_ms - now : 0;
        break;
    }
    view_release(&v);
    return age;
}

/* ---- the handler ------------------------------------------------------------ */

static void
count(struct agent *a, enum release_outcome o, bool dry)
{
    if (dry)
        return;                 /* a dry run changes nothing: not a release */
    if (o == RELEASE_RELEASED)
        atomic_fetch_add(&a->releases[RELEASES_RELEASED], 1);
    else if (release_outcome_refused(o))
        atomic_fetch_add(&a->releases[RELEASES_REFUSED], 1);
    else
        atomic_fetch_add(&a->releases[RELEASES_ERROR], 1);
}

/* One release that runs: what it needs and what it gives, on the heap,
 * because it runs on a thread of its own while its connection is
 * suspended (the MHD worker is free for the probes meanwhile), and is
 * answered when MHD calls the handler again after the resume. */
struct job {
    struct agent *a;
    struct MHD_Connection *c;
    struct body b;
    json_t *root;
    struct target_conf t, node;
    struct cluster_node *known;     /* the cluster's nodes, as the agent knows them */
    size_t nknown;
    struct release_request rq;
    struct release_result res;
    char *audit_stream;
    char op[NI_MAXHOST + 8];
    const char *refusal;
    unsigned int status;
    bool slot;                  /* holds one of RELEASE_HTTP_RUNNING_MAX */
    atomic_bool done;           /* the thread finished: answer it */
};

/* Release threads not yet returned: the server outlives them. */
static atomic_int release_threads;

static void
job_free(struct job *j)
{
    if (j == NULL)
        return;
    if (j->slot)                /* answered (or its client gone): the next may run */
        atomic_fetch_sub(&j->a->releases_running, 1);
    target_clear(&j->t);
    free(j->known);
    json_decref(j->root);
    free(j->b.key);
    free(j->b.holder);
    free(j->audit_stream);
    free(j);
}

/* The Redis part of a release, within one deadline; sets j->res, j->status. */
static void
run_release(struct job *j)
{
    struct redisconn_scope scope = { .deadline_ms = clock_deadline(j->t.command_timeout_ms),
                                     .idle_ms = j->t.command_timeout_ms, .stop = NULL,
                                     .known = j->known, .nknown = j->nknown };
    const struct redisconn_scope *prev;
    redisContext *rc;

    snprintf(scope.what, sizeof(scope.what), "the release's deadline (command_timeout, "
             "%lld ms); it may or may not have run", (long long)j->t.command_timeout_ms);
    prev = redisconn_scope_enter(&scope);
    if ((rc = target_open(&j->t, j->b.key, j->b.keylen, NULL, &j->node, j->res.err,
                          sizeof(j->res.err))) == NULL) {
        j->res.outcome = RELEASE_ERROR;
        j->status = 503;        /* unreachable: try again later */
    } else {
        release_run(rc, &j->node, j->audit_stream, &j->rq, &j->res);
        j->status = release_outcome_refused(j->res.outcome) ? 409
            : j->res.outcome == RELEASE_ERROR || j->res.audit_failed ? 502 : 200;
        redisFree(rc);
    }
    redisconn_scope_leave(prev);
}

/* The release's thread: run it, then hand the connection back to MHD.
 * Nothing of j is touched after the resume (MHD may answer and free it at
 * once: its slot is given back when it is answered, so a client that
 * sends its next release on the answer finds it free); the thread count
 * drops last, so release_http_drain() waits for it. */
static void *
job_thread(void *arg)
{
    struct job *j = arg;
    struct MHD_Connection *c = j->c;

    run_release(j);
    atomic_store(&j->done, true);
    MHD_resume_connection(c);
    atomic_fetch_sub(&release_threads, 1);
    return NULL;
}

/* Count, log and answer a release that ran (or was refused before it). */
static int
finish(struct job *j)
{
    char keylog[128];
    json_t *out;

    if (j->refusal == NULL)     /* counted: the attempts that ran */
        count(j->a, j->res.outcome, j->b.dry_run);
    keytext_percent(keylog, sizeof(keylog), j->b.key, j->b.keylen);
    log_info("release of %s on target %s by %s%s: %s%s%s", keylog, j->t.name, j->op,
             j->b.dry_run ? " (dry run)" : "", release_outcome_str(j->res.outcome),
             j->res.err[0] ? ": " : "", j->res.err);
    out = release_result_json(j->t.name, &j->rq, &j->res);
    if (out != NULL && j->refusal != NULL)
        json_object_set_new(out, "message", json_string(j->refusal));
    return reply_json(j->c, j->status, out);
}

/* Start the release on its own thread with the connection suspended; MHD
 * calls the handler again after the resume, which answers from st->job.
 * When no thread can start, the release runs here, the same way. */
static int
start_job(struct req_state *st, struct job *j)
{
    pthread_attr_t attr;
    pthread_t tid;
    int rc = -1;

    st->job = j;
    MHD_suspend_connection(j->c);       /* before the thread can resume it */
    atomic_fetch_add(&release_threads, 1);
    if (pthread_attr_init(&attr) == 0) {
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&tid, &attr, job_thread, j);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0)
        (void)job_thread(j);
    return MHD_YES;
}

static int
serve(struct agent *a, struct MHD_Connection *c, const struct snapshot_conf *sc,
      struct req_state *st)
{
    struct job *j;
    const char *msg;
    char why[1024];
    bool not_leaked;
    int found, ret;

    if (st->too_big)
        return reply_error(c, 413, "the body is larger than 64 KiB", NULL, NULL);
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return reply_error(c, 500, "out of memory", NULL, NULL);
    j->a = a;
    j->c = c;
    if ((msg = parse_body(st->body ? st->body : "", st->len, &j->b, &j->root, why,
                          sizeof(why))) != NULL) {
        ret = reply_error(c, 400, msg, NULL, NULL);
        goto done;
    }
    found = target_copy(a, j->b.target, &j->t);
    if (found != 0) {
        if (found > 0)
            target_unknown(a, j->b.target, why, sizeof(why));
        ret = found < 0 ? reply_error(c, 500, "out of memory", NULL, NULL)
            : reply_error(c, 400, why, NULL, NULL);
        goto done;
    }
    if (sc->audit_stream != NULL && (j->audit_stream = strdup(sc->audit_stream)) == NULL) {
        ret = reply_error(c, 500, "out of memory", NULL, NULL);
        goto done;
    }
    peer_operator(c, j->op, sizeof(j->op));
    j->rq.action = RELEASE_ACTION_RELEASE;
    j->rq.key = j->b.key;
    j->rq.keylen = j->b.keylen;
    j->rq.holder = j->b.holder;
    j->rq.holderlen = j->b.holderlen;
    j->rq.if_leaked = j->b.if_leaked;
    j->rq.if_older_than_ms = j->b.older_ms;
    j->rq.lease_age_ms = known_lock(a, j->t.name, &j->b, &not_leaked, &j->rq.lease_pttl,
                                    &j->rq.format, &j->rq.format_guessed,
                                    j->t.mode == TARGET_CLUSTER ? &j->known : NULL,
                                    &j->nknown);
    j->rq.lease_slack_ms = RELEASE_LEASE_SLACK_MS;
    j->rq.dry_run = j->b.dry_run;
    j->rq.operator_name = j->op;
    j->rq.reason = j->b.reason;
    j->rq.http = true;

    if (j->b.if_leaked && not_leaked) {
        /* if_leaked means what lockctl and the API call leaked: no TTL for
         * leak_grace, judged by the agent's last scan (lockstate.c).  The
         * script would check only that there is no TTL now; nothing runs
         * and nothing is audited. */
        j->res.outcome = RELEASE_REFUSED_NOT_LEAKED;
        j->res.pttl_ms = -2;
        j->res.idle_s = -1;
        j->refusal = "refused: if_leaked, but the agent's last scan does not judge the lock "
                     "leaked (no TTL for leak_grace); nothing was changed";
        j->status = 409;
        ret = finish(j);
        goto done;
    }
    if (atomic_fetch_add(&a->releases_running, 1) >= RELEASE_HTTP_RUNNING_MAX) {
        atomic_fetch_sub(&a->releases_running, 1);
        log_warnx("release on target %s by %s: %d releases already running; answered 503",
                  j->t.name, j->op, RELEASE_HTTP_RUNNING_MAX);
        ret = reply_error(c, 503, "busy: releases already running (Redis may be slow); "
                          "retry", MHD_HTTP_HEADER_RETRY_AFTER, "1");
        goto done;
    }
    j->slot = true;
    return start_job(st, j);   /* j is the thread's, then st's */
done:
    job_free(j);
    return ret;
}

int
release_http(struct agent *a, struct MHD_Connection *c, const char *method,
             const char *upload, size_t *upload_size, void **state)
{
    struct snapshot_conf sc;
    struct req_state *st = *state;
    unsigned int denied;
    char why[512];
    int ret;

    if (st == NULL) {
        /* Headers only so far: decide now whether to take a body at all. */
        if (conf_copy(a, &sc) == -1)
            return reply_error(c, 500, "out of memory", NULL, NULL);
        if (!sc.on) {
            conf_clear(&sc);
            return reply_error(c, 404, "not found: the release endpoint is off ([unlock] "
                               "http = off)", NULL, NULL);
        }
        if (strcmp(method, "POST") != 0) {
            conf_clear(&sc);
            return reply_error(c, 405, "method not allowed: use POST", MHD_HTTP_HEADER_ALLOW,
                               "POST");
        }
        if ((ret = refuse_guessing(a, c)) != -1) {
            conf_clear(&sc);
            return ret;
        }
        denied = authorise(c, &sc);
        conf_clear(&sc);
        if (denied != 0)
            throttle_fail(a->throttle, peer_addr(c), clock_mono_ms());
        if (denied == 401)
            return reply_error(c, 401, "unauthorized: send Authorization: Bearer <token> "
                               "([unlock] token_file)", MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                               "Bearer realm=\"lockwatch\"");
        if (denied == 403)
            return reply_error(c, 403, "forbidden: wrong token", NULL, NULL);
        /* the request is the body: a query (?dry_run=true) would be
         * ignored, and the release run for real */
        if (http_query_check(c, "", why, sizeof(why)) == -1)
            return reply_error(c, 400, why, NULL, NULL);
        if ((st = calloc(1, sizeof(*st))) == NULL)
            return MHD_NO;
        *state = st;
        return MHD_YES;
    }
    if (st->job != NULL) {
        /* resumed: the release's thread is done (MHD calls nothing of a
         * suspended connection) */
        if (!atomic_load(&st->job->done))
            return MHD_YES;
        ret = finish(st->job);
        job_free(st->job);
        st->job = NULL;
        return ret;
    }
    if (*upload_size != 0) {
        if (!st->too_big && st->len + *upload_size <= RELEASE_HTTP_BODY_MAX) {
            char *nb = realloc(st->body, st->len + *upload_size + 1);

            if (nb == NULL)
                return MHD_NO;
            st->body = nb;
            memcpy(st->body + st->len, upload, *upload_size);
            st->len += *upload_size;
        } else {
            st->too_big = true; /* keep reading, keep nothing */
        }
        *upload_size = 0;
        return MHD_YES;
    }
    /* The whole body is in.  The config may have changed meanwhile (a
     * reload turning the endpoint off, a new token): look again. */
    if (conf_copy(a, &sc) == -1)
        return reply_error(c, 500, "out of memory", NULL, NULL);
    if (!sc.on)
        ret = reply_error(c, 404, "not found: the release endpoint is off ([unlock] "
                          "http = off)", NULL, NULL);
    else if ((denied = authorise(c, &sc)) != 0) {
        throttle_fail(a->throttle, peer_addr(c), clock_mono_ms());
        ret = reply_error(c, denied, denied == 401 ? "unauthorized" : "forbidden: wrong token",
                          NULL, NULL);
    }
    else
        ret = serve(a, c, &sc, st);
    conf_clear(&sc);
    return ret;
}

void
release_http_drain(struct agent *a)
{
    struct timespec ts = { 0, 10 * 1000 * 1000 };

    /* each ends within its deadline (command_timeout + connect_timeout);
     * a minute is far past any of them */
    for (int i = 0; i < 6000 && (atomic_load(&a->releases_running) > 0 ||
                                 atomic_load(&release_threads) > 0); i++)
        nanosleep(&ts, NULL);
}

void
release_http_free(void *state)
{
    struct req_state *st = state;

    if (st == NULL)
        return;
    job_free(st->job);          /* answered or not: its thread is done */
    free(st->body);
    free(st);
}
