/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * agent.c - what the agent's API knows of the locks, for list, show and release.
 *
 * The agent keeps what lockctl cannot read from Redis: when it first saw
 * a lock's current holder and since when the key has had no TTL (its
 * tracker's times, across scans).  lockctl asks for them over the JSON API
 * with libcurl: GET /api/v1/locks?target=&state=all&limit= (following
 * next_offset while an agent that pages gives one) and GET
 * /api/v1/locks/{key}?target=.  The base URL is --agent, else the
 * config's [agent] listen (a wildcard address means 127.0.0.1).
 *
 * An agent that is down must not slow on-call down: the connect timeout
 * is AGENT_CONNECT_MS and a whole request AGENT_TIMEOUT_MS; answers are
 * capped at AGENT_BODY_MAX bytes and AGENT_LOCKS_MAX locks (what is cut
 * is said: truncated).  No proxy, no redirect, plain GETs with no
 * credentials: lockctl never sends a secret to the agent.  Anything but
 * the API's JSON (another service on the port, an error page) is "the
 * agent did not answer", with the reason kept for the fallback message.
 * The same GET (agent_get_json()) serves lockctl events, whose timeline
 * only the agent has (events.c).
 */
#include <curl/curl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lockctl.h"
#include "common/addrmatch.h"
#include "common/clock.h"
#include "common/keytext.h"
#include "common/strbuf.h"

#define AGENT_PAGE_LIMIT 10000      /* the API's largest limit */
/* A page ends at AGENT_PAGE_LIMIT locks or at the agent's byte cap (8 MiB:
 * with 16 KiB keys a few hundred locks), so the number of pages is bounded
 * by the locks, each page but the last holding at least one. */
#define AGENT_PAGES_MAX  AGENT_LOCKS_MAX

static bool
wildcard(const char *host)
{
    return host[0] == '\0' || strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0 ||
        strcmp(host, "::") == 0;
}

int
agent_base_url(const struct lockctl *lc, char *buf, size_t len, char *err, size_t errlen)
{
    const char *host;
    size_t n;

    buf[0] = '\0';
    if (lc->agent != NULL) {
        if (strcmp(lc->agent, "off") == 0)
            return 1;
        n = strlen(lc->agent);
        while (n > 0 && lc->agent[n - 1] == '/')
            n--;
        if (strncmp(lc->agent, "http://", 7) != 0 || n <= 7 || n >= len ||
            memchr(lc->agent, '@', n) != NULL || memchr(lc->agent, '?', n) != NULL ||
            memchr(lc->agent + 7, '/', n - 7) != NULL) {
            snprintf(err, errlen, "--agent must be off or http://host:port (no user, "
                     "path or query), not \"%.100s\"", lc->agent);
            return -1;
        }
        memcpy(buf, lc->agent, n);
        buf[n] = '\0';
        return 0;
    }
    host = wildcard(lc->cfg->listen_host) ? "127.0.0.1" : lc->cfg->listen_host;
    snprintf(buf, len, strchr(host, ':') != NULL ? "http://[%s]:%d" : "http://%s:%d", host,
             lc->cfg->listen_port);
    return 0;
}

/* ---- the locks taken ---------------------------------------------------------- */

static int
index_put(struct agent_view *av, size_t pos)
{
    const struct agent_lock *a = &av->locks[pos];
    size_t mask, i;

    if (2 * (av->nlocks + 1) > av->index_cap) {
        size_t ncap = av->index_cap ? 2 * av->index_cap : 1024, *tab;

        if ((tab = calloc(ncap, sizeof(*tab))) == NULL)
            return -1;
        free(av->index);
        av->index = tab;
        av->index_cap = ncap;
        for (size_t k = 0; k < pos; k++) {
            const struct agent_lock *b = &av->locks[k];

            for (i = keytext_hash(b->key, b->keylen) & (ncap - 1); tab[i] != 0;
                 i = (i + 1) & (ncap - 1))
                ;
            tab[i] = k + 1;
        }
    }
    mask = av->index_cap - 1;
    for (i = keytext_hash(a->key, a->keylen) & mask; av->index[i] != 0; i = (i + 1) & mask)
        ;
    av->index[i] = pos + 1;
    return 0;
}

const struct agent_lock *
agent_find(const struct agent_view *av, const char *key, size_t keylen)
{
    size_t mask, i;

    if (av->index_cap == 0)
        return NULL;
    mask = av->index_cap - 1;
    for (i = keytext_hash(key, keylen) & mask; av->index[i] != 0; i = (i + 1) & mask) {
        const struct agent_lock *a = &av->locks[av->index[i] - 1];

        if (a->keylen == keylen && memcmp(a->key, key, keylen) == 0)
            return a;
    }
    return NULL;
}

/* The bytes of a percent-encoded string member (key_escaped, id_escaped):
 * malloc'd, NUL after them.  NULL when missing or malformed. */
static char *
escaped_member(const json_t *o, const char *name, size_t *len)
{
    const char *s = json_string_value(json_object_get(o, name));

    return s != NULL ? out_unescape(s, len) : NULL;
}

/* One lock object of the API.  1 taken, 0 skipped (not one lockctl can
 * match: a cut key, no first_seen_ms), -1 ENOMEM. */
static int
add_lock(struct agent_view *av, const json_t *o)
{
    struct agent_lock a;
    const json_t *holders = json_object_get(o, "holders"), *fs, *nt, *age, *total;

    memset(&a, 0, sizeof(a));
    fs = json_object_get(o, "first_seen_ms");
    nt = json_object_get(o, "nottl_since_ms");
    age = json_object_get(o, "age_seconds");
    total = json_object_get(o, "holders_total");
    if (!json_is_integer(fs) || json_is_true(json_object_get(o, "key_truncated")))
        return 0;
    a.first_seen_ms = json_integer_value(fs);
    a.nottl_since_ms = json_is_integer(nt) ? json_integer_value(nt) : 0;
    /* the agent's own now - first_seen: no clock skew between the hosts
     * counts (a negative or absurd one is no age) */
    a.age_ms = json_is_number(age) && json_number_value(age) >= 0 &&
        json_number_value(age) < 1e12 ? (int64_t)(json_number_value(age) * 1000.0) : -1;
    a.nholders = json_is_integer(total) && json_integer_value(total) >= 0 ?
        (size_t)json_integer_value(total) : json_array_size(holders);
    a.stale = json_is_true(json_object_get(o, "stale"));
    a.stale_last_ms = json_is_integer(json_object_get(o, "last_success_ms")) ?
        json_integer_value(json_object_get(o, "last_success_ms")) : 0;
    a.renewed = json_is_true(json_object_get(o, "renewed"));
    a.got_mono = clock_mono_ms();
    a.age_lower_bound = json_is_true(json_object_get(o, "age_lower_bound"));
    {
        const json_t *ub = json_object_get(o, "unbroken_since_ms"),
            *ex = json_object_get(o, "expires_at_ms");
        int64_t at = a.first_seen_ms + a.age_ms;        /* the answer, agent's clock */

        a.unbroken_ms = -1;
        if (a.age_ms >= 0 && json_is_integer(ub) && json_integer_value(ub) >= a.first_seen_ms)
            a.unbroken_ms = json_integer_value(ub) - a.first_seen_ms >= a.age_ms ? 0
                : a.age_ms - (json_integer_value(ub) - a.first_seen_ms);
        a.left_ms = json_is_null(ex) ? -1 : json_is_integer(ex) && a.age_ms >= 0 ?
            (json_integer_value(ex) > at ? json_integer_value(ex) - at : 0) : -2;
    }
    a.pttl_ms = json_is_integer(json_object_get(o, "pttl_ms")) ?
        json_integer_value(json_object_get(o, "pttl_ms")) : -2;
    {
        const json_t *st;
        size_t i, n = 0;

        json_array_foreach(json_object_get(o, "states"), i, st) {
            const char *name = json_string_value(st);
            int w;

            if (name == NULL)
                continue;
            w = snprintf(a.states + n, sizeof(a.states) - n, "%s%s", n ? "," : "", name);
            if (w < 0 || (size_t)w >= sizeof(a.states) - n)
                break;          /* cut at a name: the list is for people */
            n += (size_t)w;
        }
    }
    if ((a.key = escaped_member(o, "key_escaped", &a.keylen)) == NULL)
        return 0;
    if (json_array_size(holders) > 0) {
        const json_t *h0 = json_array_get(holders, 0);

        a.holder = escaped_member(h0, "id_escaped", &a.holderlen);
        a.holder_cut = json_is_true(json_object_get(h0, "id_truncated"));
        if (a.holder == NULL) {
            free(a.key);
            return 0;
        }
    }
    if (agent_find(av, a.key, a.keylen) != NULL) {
        free(a.key);            /* a page boundary moved under a rescan */
        free(a.holder);
        return 0;
    }
    if (av->nlocks == av->cap) {
        size_t ncap = av->cap ? 2 * av->cap : 256;
        struct agent_lock *nl = realloc(av->locks, ncap * sizeof(*nl));

        if (nl == NULL)
            goto oom;
        av->locks = nl;
        av->cap = ncap;
    }
    av->locks[av->nlocks] = a;
    if (index_put(av, av->nlocks) == -1)
        goto oom;
    av->nlocks++;
    return 1;
oom:
    free(a.key);
    free(a.holder);
    return -1;
}

/* The cluster nodes of an answer (AGENT_NODES_MAX of them; a cluster
 * of CLUSTER_SHARDS_MAX shards names more) into av->nodes, replacing
 * those of an answer before; an entry that is not {"id", "host", "port"}
 * is left out.  0, -1 on ENOMEM. */
#define AGENT_NODES_MAX 4096
#define AGENT_NODES_WAIT_MS 2000    /* agent_known_nodes()'s own GET */

static int
add_nodes(struct agent_view *av, const json_t *doc)
{
    const json_t *a = json_object_get(doc, "cluster_nodes"), *e;
    size_t i, n = 0, cap = json_array_size(a);
    struct cluster_node *k;

    if (cap == 0)
        return 0;
    if ((k = calloc(cap < AGENT_NODES_MAX ? cap : AGENT_NODES_MAX, sizeof(*k))) == NULL)
        return -1;
    json_array_foreach(a, i, e) {
        const char *id = json_string_value(json_object_get(e, "id")),
            *host = json_string_value(json_object_get(e, "host"));
        json_int_t port = json_integer_value(json_object_get(e, "port"));

        if (n == AGENT_NODES_MAX)
            break;
        /* an id is 40 hex digits; a host, shown in messages, a name or
         * an address (anything else, a terminal's escape, is left out) */
        if (id == NULL || host == NULL || port <= 0 || port > 65535 ||
            strlen(id) >= sizeof(k->id) || strspn(id, "0123456789abcdef") != strlen(id) ||
            host[0] == '\0' || strlen(host) >= sizeof(k->host) ||
            strspn(host, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.:-_") !=
            strlen(host))
            continue;
        memcpy(k[n].id, id, strlen(id) + 1);
        memcpy(k[n].host, host, strlen(host) + 1);
        k[n].port = (int)port;
        k[n].healthy = true;
        n++;
    }
    free(av->nodes);
    av->nodes = k;
    av->nnodes = n;
    return 0;
}

int
agent_add_json(struct agent_view *av, const json_t *doc, char *err, size_t errlen)
{
    const json_t *locks = json_object_get(doc, "locks"), *o;
    size_t i;

    if (!json_is_object(doc)) {
        snprintf(err, errlen, "its answer is not a JSON object");
        return -1;
    }
    if (json_is_string(json_object_get(doc, "target_address")))
        snprintf(av->target_address, sizeof(av->target_address), "%s",
                 json_string_value(json_object_get(doc, "target_address")));
    if (add_nodes(av, doc) == -1) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (locks == NULL) {        /* one lock */
        if (!json_is_string(json_object_get(doc, "key_escaped"))) {
            snprintf(err, errlen, "its answer is not a lock of the lockwatch API");
            return -1;
        }
        if (json_is_true(json_object_get(doc, "stale"))) {
            /* last known, as a list's "stale" entry says of its target */
            const char *why = json_string_value(json_object_get(doc, "stale_reason"));

            snprintf(av->stale_reason, sizeof(av->stale_reason), "%s",
                     why != NULL && why[0] ? why : "its scans fail");
            av->last_success_ms = json_integer_value(json_object_get(doc, "last_success_ms"));
            if (json_is_string(json_object_get(doc, "stale_shard"))) {
                snprintf(av->stale_shard, sizeof(av->stale_shard), "%s",
                         json_string_value(json_object_get(doc, "stale_shard")));
                av->nstale_shards = 1;
            }
        }
        return add_lock(av, doc) == -1 ? (snprintf(err, errlen, "out of memory"), -1) : 0;
    }
    if (!json_is_array(locks)) {
        snprintf(err, errlen, "its answer's \"locks\" is not an array");
        return -1;
    }
    {
        /* the agent cannot scan the target now (or a cluster shard of
         * it): its view is the last known, and it says why; the target's
         * own entry first, the only one that can say nothing is known */
        const json_t *stale = json_object_get(doc, "stale"), *st = json_array_get(stale, 0);
        const json_t *e;
        const char *why;
        size_t k;

        json_array_foreach(stale, k, e)
            if (json_object_get(e, "shard") == NULL) {
                st = e;
                break;
            }
        why = json_string_value(json_object_get(st, "reason"));
        if (st != NULL) {
            snprintf(av->stale_reason, sizeof(av->stale_reason), "%s",
                     why != NULL && why[0] ? why : "its scans fail");
            av->last_success_ms = json_integer_value(json_object_get(st, "last_success_ms"));
            av->nothing_known = json_object_get(st, "shard") == NULL &&
                av->last_success_ms <= 0;
            json_array_foreach(stale, k, e) {
                const char *sh = json_string_value(json_object_get(e, "shard"));
                size_t used = strlen(av->stale_shard);

                if (sh == NULL || json_object_get(st, "shard") == NULL)
                    continue;
                snprintf(av->stale_shard + used, sizeof(av->stale_shard) - used, "%s%s",
                         used > 0 ? ", " : "", sh);
                av->nstale_shards++;
            }
        }
    }
    json_array_foreach(locks, i, o) {
        if (av->nlocks >= AGENT_LOCKS_MAX) {
            av->truncated = true;
            break;
        }
        if (add_lock(av, o) == -1) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

void
agent_view_release(struct agent_view *av)
{
    for (size_t i = 0; i < av->nlocks; i++) {
        free(av->locks[i].key);
        free(av->locks[i].holder);
    }
    free(av->locks);
    free(av->index);
    free(av->nodes);
    av->locks = NULL;
    av->index = NULL;
    av->nodes = NULL;
    av->nnodes = 0;
    av->nlocks = av->cap = av->index_cap = 0;
}

/* ---- HTTP ------------------------------------------------------------------------ */

struct body {
    char *p;
    size_t len, cap;
    bool over;
};

static size_t
collect(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct body *b = ud;
    size_t n = size * nmemb;

    if (b->len + n + 1 > AGENT_BODY_MAX) {
        b->over = true;
        return 0;               /* aborts the transfer */
    }
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 64 * 1024;
        char *np;

        while (ncap < b->len + n + 1)
            ncap *= 2;
        if ((np = realloc(b->p, ncap)) == NULL)
            return 0;
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->len, ptr, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

long
agent_get_json(struct agent_view *av, const char *url, json_t **doc)
{
    static bool initialised;
    struct body b = { NULL, 0, 0, false };
    CURL *h = NULL;
    CURLcode cc;
    json_error_t je;
    long status = -1;

    *doc = NULL;
    av->asked = true;
    if (!initialised) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            snprintf(av->err, sizeof(av->err), "libcurl could not start");
            return -1;
        }
        initialised = true;
    }
    if ((h = curl_easy_init()) == NULL) {
        snprintf(av->err, sizeof(av->err), "out of memory");
        return -1;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)AGENT_CONNECT_MS);
    {
        /* within lockctl's whole deadline too */
        int64_t left = av->deadline_ms > 0 ? clock_left(av->deadline_ms) : AGENT_TIMEOUT_MS;

        if (left <= 0) {
            snprintf(av->err, sizeof(av->err), "lockctl's --timeout ran out");
            goto out;
        }
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left < AGENT_TIMEOUT_MS ? left :
                                                       AGENT_TIMEOUT_MS));
    }
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)CURLPROTO_HTTP);
#endif
    curl_easy_setopt(h, CURLOPT_USERAGENT, "lockctl/" LOCKWATCH_VERSION);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    cc = curl_easy_perform(h);
    if (cc != CURLE_OK) {
        snprintf(av->err, sizeof(av->err), "%s", b.over ? "its answer is over the size cap"
                 : curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    av->replied = true;
    if (status == 414) {
        /* libmicrohttpd's own answer (no JSON) to a request line over its
         * buffer: a long key's URL, not an agent that is down or another
         * service */
        av->key_too_long = true;
        snprintf(av->err, sizeof(av->err), "HTTP 414: the key is too long for its URL");
        status = -1;
        goto out;
    }
    *doc = json_loadb(b.p ? b.p : "", b.len, 0, &je);
    if (*doc == NULL) {
        snprintf(av->err, sizeof(av->err), "HTTP %ld, and the answer is not JSON (is it the "
                 "lockwatch agent?)", status);
        status = -1;
    }
out:
    curl_easy_cleanup(h);
    free(b.p);
    return status;
}

void
agent_status_error(struct agent_view *av, long status, const json_t *doc)
{
    const char *msg = json_string_value(json_object_get(doc, "error"));

    snprintf(av->err, sizeof(av->err), "HTTP %ld%s%.200s", status, msg ? ": " : "",
             msg ? msg : "");
}

static void
url_fail(struct agent_view *av)
{
    snprintf(av->err, sizeof(av->err), "out of memory");
}

/*
 * One GET of the API.  0 when the agent answered with its JSON (a 404
 * with an "error" answers "not among its locks" when missing_ok), its
 * locks added to av and *next its next_offset (0: none); -1 with av->err.
 */
static int
request(struct agent_view *av, const char *url, bool missing_ok, long long *next)
{
    json_t *doc = NULL;
    const json_t *no;
    long status = agent_get_json(av, url, &doc);
    int rc = -1;

    *next = 0;
    if (status == -1)
        goto out;
    if (missing_ok && status == 404 && json_is_string(json_object_get(doc, "error"))) {
        rc = 0;
        goto out;
    }
    if (status != 200) {
        agent_status_error(av, status, doc);
        goto out;
    }
    if (!missing_ok && !json_is_array(json_object_get(doc, "locks"))) {
        snprintf(av->err, sizeof(av->err), "its answer has no \"locks\" list");
        goto out;
    }
    if (agent_add_json(av, doc, av->err, sizeof(av->err)) == -1)
        goto out;
    no = json_object_get(doc, "next_offset");
    if (json_is_integer(no) && json_integer_value(no) > 0)
        *next = json_integer_value(no);
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

int
agent_fetch_list(const struct lockctl *lc, struct agent_view *av)
{
    char *target = curl_easy_escape(NULL, lc->t->name, 0), url[1024];
    long long offset = 0, next;
    int page;

    if (target == NULL) {
        url_fail(av);
        return -1;
    }
    for (page = 0; page < AGENT_PAGES_MAX; page++) {
        snprintf(url, sizeof(url), "%s/api/v1/locks?target=%.600s&state=all&limit=%d", av->url,
                 target, AGENT_PAGE_LIMIT);
        if (offset > 0)
            snprintf(url + strlen(url), sizeof(url) - strlen(url), "&offset=%lld", offset);
        if (request(av, url, false, &next) == -1) {
            curl_free(target);
            return -1;
        }
        /* an agent that does not page gives no next_offset: one page */
        if (next <= offset || av->nlocks >= AGENT_LOCKS_MAX)
            break;
        offset = next;
    }
    curl_free(target);
    if (page == AGENT_PAGES_MAX || av->nlocks >= AGENT_LOCKS_MAX)
        av->truncated = true;
    av->answered = true;
    return 0;
}

int
agent_fetch_lock(const struct lockctl *lc, const char *key, size_t keylen,
                 struct agent_view *av)
{
    char *target = curl_easy_escape(NULL, lc->t->name, 0), *ekey = NULL;
    struct strbuf url;
    long long next;
    int rc = -1;

    sb_init(&url, 4 * 1024 * 1024);
    ekey = keylen <= INT32_MAX ? curl_easy_escape(NULL, key, (int)keylen) : NULL;
    if (target == NULL || ekey == NULL) {
        url_fail(av);
        goto out;
    }
    sb_addf(&url, "%s/api/v1/locks/%s?target=%s", av->url, ekey, target);
    if (sb_failed(&url)) {
        snprintf(av->err, sizeof(av->err), "the key is too long to ask about");
        goto out;
    }
    if (request(av, url.buf, true, &next) == 0) {
        av->answered = true;
        rc = 0;
    } else if (av->key_too_long) {
        /* the list holds such a key whole, in its JSON body: the same
         * view of the lock, for a longer answer */
        rc = agent_fetch_list(lc, av);
    }
out:
    curl_free(target);
    curl_free(ekey);
    sb_release(&url);
    return rc;
}

/* ---- for the commands ----------------------------------------------------------- */

int
agent_consult(const struct lockctl *lc, struct agent_view *av, const char *key,
              size_t keylen)
{
    char err[320];
    int r = agent_base_url(lc, av->url, sizeof(av->url), err, sizeof(err));

    av->deadline_ms = lc->scope.deadline_ms;

    if (r == -1) {
        lockctl_warnx("%s", err);
        return LOCKCTL_USAGE;
    }
    if (r == 0) {
        if (key == NULL)
            agent_fetch_list(lc, av);
        else
            agent_fetch_lock(lc, key, keylen, av);
    }
    return LOCKCTL_DONE;
}

void
agent_print_note(const struct agent_view *av, uint64_t from_agent, FILE *fp, size_t width)
{
    if (av->answered) {
        bool stale = av->stale_reason[0] != '\0';

        table_line(fp, width, "age_source: agent at %s (%llu lock%s judged with its "
                   "times)%s%s%s%s", av->url, (unsigned long long)from_agent,
                   from_agent == 1 ? "" : "s", av->truncated ? "; its list was cut" : "",
                   stale ? "; its view is stale (" : "", av->stale_reason,
                   stale ? "): a lock it cannot vouch for now is judged from Redis alone" : "");
        return;
    }
    if (av->elsewhere)
        table_line(fp, width, "age_source: redis: the agent at %s %s", av->url, av->err);
    else if (av->asked)
        table_line(fp, width, "age_source: redis: the agent at %s did not answer: %s",
                   av->url, av->err);
    else
        table_line(fp, width, "age_source: redis (--agent off)");
    table_line(fp, width, "ages marked \">=\" are from OBJECT IDLETIME: only lower bounds "
               "(any read or lease renewal resets it); \"unknown\": under a second, which says "
               "nothing.%s", av->replied ? "" : " For real ages start the agent "
               "(lockwatchd) or use --agent URL");
}

const char *
agent_shard_reason(const struct agent_view *av)
{
    static __thread char buf[sizeof(av->stale_reason) + 2];
    size_t n = strlen(av->stale_shard);

    if (strncmp(av->stale_reason, "shard ", 6) == 0 && n > 0 &&
        strncmp(av->stale_reason + 6, av->stale_shard, n) == 0 && av->stale_reason[6 + n] == ' ')
        return av->stale_reason + 6 + n;
    snprintf(buf, sizeof(buf), ": %s", av->stale_reason);
    return buf;
}

void
agent_print_nothing_known(const struct agent_view *av, const char *target, FILE *fp,
                          size_t width)
{
    table_line(fp, width, "NOTHING KNOWN: the agent at %s cannot scan target %s either (%s), "
               "and has had no good scan of it since it started", av->url, target,
               av->stale_reason);
}

json_t *
agent_json(const struct agent_view *av, uint64_t from_agent)
{
    return json_pack("{s:s?,s:b,s:s?,s:I,s:I,s:b,s:s?}", "url", av->url[0] ? av->url : NULL,
                     "answered", av->answered, "error",
                     av->asked && !av->answered ? av->err : NULL,
                     "locks_known", (json_int_t)av->nlocks, "judged", (json_int_t)from_agent,
                     "truncated", av->truncated, "stale_reason",
                     av->answered && av->stale_reason[0] ? av->stale_reason : NULL);
}


int
agent_get_doc(const struct lockctl *lc, struct agent_view *av, const char *path, json_t **doc)
{
    char err[320], url[640];
    int r = agent_base_url(lc, av->url, sizeof(av->url), err, sizeof(err));
    long status;

    *doc = NULL;
    av->deadline_ms = lc->scope.deadline_ms;
    if (r != 0) {
        snprintf(av->err, sizeof(av->err), "%s", r == 1 ? "this command reads the agent, "
                 "and --agent off asks no agent" : err);
        return -2;
    }
    snprintf(url, sizeof(url), "%s%s", av->url, path);
    if ((status = agent_get_json(av, url, doc)) == -1)
        return -1;
    if (status != 200) {
        agent_status_error(av, status, *doc);
        json_decref(*doc);
        *doc = NULL;
        return -1;
    }
    av->answered = true;
    return 0;
}

int
agent_command_doc(const struct lockctl *lc, struct agent_view *av, const char *name,
                  const char *path, const char *hint, json_t **doc)
{
    int r;

    memset(av, 0, sizeof(*av));
    if ((r = agent_get_doc(lc, av, path, doc)) == -2) {
        lockctl_warnx("%s: %s", name, av->err);
        out_error_hint("give --agent http://host:port of a running lockwatchd");
        return LOCKCTL_USAGE;
    }
    if (r == -1) {
        lockctl_warnx("%s: the agent at %s did not answer: %s", name, av->url[0] ? av->url :
                      "(none)", av->err);
        out_error_hint("%s", hint);
        return LOCKCTL_REDIS;
    }
    return LOCKCTL_DONE;
}

/* "host:port/db" into its parts (host without [] of an IPv6 address):
 * false when a is not of that shape (a Sentinel target's). */
static bool
split_address(const char *a, char *host, size_t hostlen, char *port, size_t portlen,
              long *db)
{
    const char *slash = strrchr(a, '/'), *colon;
    char *end;

    if (slash == NULL || strncmp(a, "sentinel ", 9) == 0)
        return false;
    for (colon = slash; colon > a && colon[-1] != ':'; colon--)
        ;
    if (colon == a || colon == slash || (size_t)(slash - colon) >= portlen || (size_t)(colon - 1 - a) >= hostlen)
        return false;
    *db = strtol(slash + 1, &end, 10);
    if (*end != '\0')
        return false;
    memcpy(port, colon, (size_t)(slash - colon));
    port[slash - colon] = '\0';
    if (a[0] == '[' && colon - 1 > a + 1 && colon[-2] == ']') {
        memcpy(host, a + 1, (size_t)(colon - 3 - a));
        host[colon - 3 - a] = '\0';
    } else {
        memcpy(host, a, (size_t)(colon - 1 - a));
        host[colon - 1 - a] = '\0';
    }
    return true;
}

/* The addresses of host without a name server's help (lockctl's
 * --timeout bounds no getaddrinfo()): a numeric address, or localhost
 * (/etc/hosts); NULL for any other name. */
static struct addrinfo *
local_addresses(const char *host, const char *port)
{
    struct addrinfo hints, *res = NULL;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (strcmp(host, "localhost") != 0)
        hints.ai_flags = AI_NUMERICHOST;
    return getaddrinfo(host, port, &hints, &res) == 0 ? res : NULL;
}

/* Do two standalone addresses, written differently ("localhost:6379/0",
 * "127.0.0.1:6379/0", "[::1]:6379/0"), name one server: the same port
 * and database, and an address in common.  Other host names are compared
 * as written (a name and its address differ). */
static bool
same_server(const char *a, const char *b)
{
    char ha[CONFIG_ADDRESS_MAX], hb[CONFIG_ADDRESS_MAX], pa[16], pb[16];
    struct addrinfo *ra = NULL, *rb = NULL;
    long da, dbn;
    bool same = false;

    if (!split_address(a, ha, sizeof(ha), pa, sizeof(pa), &da) ||
        !split_address(b, hb, sizeof(hb), pb, sizeof(pb), &dbn) ||
        strcmp(pa, pb) != 0 || da != dbn)
        return false;
    if ((ra = local_addresses(ha, pa)) != NULL && (rb = local_addresses(hb, pb)) != NULL)
        same = addrinfo_meet(ra, rb);
    if (ra != NULL)
        freeaddrinfo(ra);
    if (rb != NULL)
        freeaddrinfo(rb);
    return same;
}

/* Are a and b one server's address: written alike, or same_server()? */
static bool
same_address(const char *a, const char *b)
{
    return strcmp(a, b) == 0 || same_server(a, b);
}

bool
agent_view_elsewhere(const struct lockctl *lc, const struct agent_view *av, char *why,
                     size_t len)
{
    char mine[CONFIG_ADDRESS_MAX];
    /* what the agent watches: its own word, else the config's address
     * (before --url), which it watches when it runs this config */
    const char *theirs = av->target_address[0] != '\0' ? av->target_address
        : lc->conf_address;

    config_target_address(lc->t, mine, sizeof(mine));
    if (lc->url != NULL) {
        /* --url naming the very server the agent watches is no other */
        if (theirs[0] != '\0' && same_address(theirs, mine))
            return false;
        snprintf(why, len, "the agent's view is of target %s's configured address%s%s, not "
                 "of --url (%s): not shown (drop --url to see it)", lc->t->name,
                 theirs[0] != '\0' ? " " : "", theirs, mine);
        return true;
    }
    if (av->target_address[0] == '\0' || same_address(av->target_address, mine))
        return false;
    snprintf(why, len, "the agent at %s watches target %s at %s, not at %s as %s says: its view "
             "is of another server, not shown (give -c the agent's config, or --agent the "
             "agent of this one)", av->url, lc->t->name, av->target_address, mine,
             lc->cfg->path ? lc->cfg->path : "the built-in config");
    return true;
}

bool
agent_drop_elsewhere(const struct lockctl *lc, struct agent_view *av)
{
    char why[1024];

    if (!av->answered || !agent_view_elsewhere(lc, av, why, sizeof(why)))
        return false;
    lockctl_note(lc, "%s", why);
    agent_view_release(av);
    av->answered = false;
    av->elsewhere = true;
    av->truncated = false;
    av->nothing_known = false;
    av->stale_reason[0] = '\0';
    av->stale_shard[0] = '\0';
    av->nstale_shards = 0;
    snprintf(av->err, sizeof(av->err), "watches another server than lockctl's target: "
             "its view is not used");
    return true;
}

void
agent_known_nodes(struct lockctl *lc, struct agent_view *av)
{
    struct agent_view tmp;
    struct agent_view *from = av;
    char err[320], url[1024], why[1024], *target;
    json_t *doc = NULL;

    if (lc->t->mode != TARGET_CLUSTER || av->elsewhere || (av->asked && !av->replied))
        return;
    memset(&tmp, 0, sizeof(tmp));
    if (av->nnodes > 0 && av->target_address[0] == '\0')
        return;                 /* whose view it is, it does not say */
    if (av->nnodes == 0) {
        /* not asked yet (release --yes), or of a key it does not hold:
         * the list's first lock is enough for its "cluster_nodes" */
        if (agent_base_url(lc, tmp.url, sizeof(tmp.url), err, sizeof(err)) != 0 ||
            (target = curl_easy_escape(NULL, lc->t->name, 0)) == NULL)
            return;
        /* a check, not the command: an agent slow to answer adds 2 s */
        tmp.deadline_ms = clock_deadline(AGENT_NODES_WAIT_MS);
        if (lc->scope.deadline_ms != 0 && lc->scope.deadline_ms < tmp.deadline_ms)
            tmp.deadline_ms = lc->scope.deadline_ms;
        snprintf(url, sizeof(url), "%s/api/v1/locks?target=%.600s&state=all&limit=1",
                 tmp.url, target);
        curl_free(target);
        if (agent_get_json(&tmp, url, &doc) == 200 && json_is_object(doc)) {
            if (json_is_string(json_object_get(doc, "target_address")))
                snprintf(tmp.target_address, sizeof(tmp.target_address), "%s",
                         json_string_value(json_object_get(doc, "target_address")));
            /* another server's nodes are not this target's, nor those of
             * an answer that does not say whose */
            if (tmp.target_address[0] != '\0' && !agent_view_elsewhere(lc, &tmp, why, sizeof(why)))
                (void)add_nodes(&tmp, doc);
        }
        json_decref(doc);
        from = &tmp;
    }
    if (from->nnodes > 0) {
        free(lc->known);
        lc->known = from->nodes;
        lc->scope.known = lc->known;
        lc->scope.nknown = from->nnodes;
        lc->scope.known_check = true;
        from->nodes = NULL;
        from->nnodes = 0;
    }
    free(tmp.nodes);
}

/* ---- alert labels --------------------------------------------------------------- */

#define LABEL_TAIL "\xe2\x80\xa6#"   /* before the hash (rules_key_label()) */

bool
agent_label(const char *key, size_t keylen, uint64_t *hash)
{
    const size_t tl = sizeof(LABEL_TAIL) - 1;
    uint64_t h = 0;

    if (keylen < tl + 16 || memcmp(key + keylen - 16 - tl, LABEL_TAIL, tl) != 0)
        return false;
    for (const char *p = key + keylen - 16; p < key + keylen; p++) {
        int c = *p | 0x20;      /* as pasted, whatever its case */
        int v = *p >= '0' && *p <= '9' ? *p - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

        if (v < 0)
            return false;
        h = h << 4 | (uint64_t)v;
    }
    if (hash != NULL)
        *hash = h;
    return true;
}

int
agent_resolve_label(struct lockctl *lc, struct agent_view *av, char **key, size_t *keylen)
{
    struct agent_view all;
    char why[1024], *real = NULL, *safe, *cut;
    uint64_t h;
    size_t n = 0;

    if (!agent_label(*key, *keylen, &h) || av->elsewhere ||
        (av->answered && agent_find(av, *key, *keylen) != NULL))
        return LOCKCTL_DONE;
    memset(&all, 0, sizeof(all));
    if (agent_consult(lc, &all, NULL, 0) == LOCKCTL_DONE && all.answered &&
        !agent_view_elsewhere(lc, &all, why, sizeof(why)))
        for (size_t i = 0; i < all.nlocks && real == NULL; i++)
            if (keytext_hash(all.locks[i].key, all.locks[i].keylen) == h &&
                (real = malloc(all.locks[i].keylen + 1)) != NULL) {
                memcpy(real, all.locks[i].key, all.locks[i].keylen + 1);
                n = all.locks[i].keylen;
            }
    agent_view_release(&all);
    if (real == NULL)
        return LOCKCTL_DONE;    /* no such lock now: the key is looked for as given */
    safe = table_safe_text(real, n, NULL);
    cut = safe != NULL ? table_cut(safe, 60, true) : NULL;
    lockctl_note(lc, "an alert's label: the lock the agent keeps under that hash is \"%s\" "
                 "(%zu bytes; --json gives key_escaped)", cut ? cut : "?", n);
    free(safe);
    free(cut);
    free(*key);
    *key = real;
    *keylen = n;
    if (!av->asked)
        return LOCKCTL_DONE;    /* the command did not ask the agent of it */
    agent_view_release(av);
    memset(av, 0, sizeof(*av));
    return agent_consult(lc, av, *key, *keylen);
}

