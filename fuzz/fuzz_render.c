/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_render.c - libFuzzer harness for the renderers of agent/http/: the
 * Prometheus exposition (metrics.c) and the JSON lock API (api.c, with
 * collectors/locks/lockjson.c), on hostile snapshots built from the
 * fuzzer's bytes the way a scan builds them: keys and holder ids are any
 * bytes, each key's class comes from class_of() and a class_set, locks go
 * in through snapshot_add() and snapshot_finish().  Target names follow the
 * config's grammar, as the agent's always do.
 *
 * Invariants, beyond not crashing:
 *  - the exposition is valid UTF-8 without NUL, every line a HELP or TYPE
 *    comment or "name{label="value",...} number" with only \\ \" \n
 *    escapes, every sample under its family's TYPE, and no series twice;
 *  - its counts add up: per target, lockwatch_locks sums to the locks
 *    added and lockwatch_locks_leaked to the leaked ones, one target_up per
 *    target, and min(top_offenders, bad locks) offender series;
 *  - the JSON parses back (jansson, duplicate keys refused); "count" is the
 *    length of "locks" and at most the limit, "total" counts the matching
 *    locks, the list is worst first and holds only matching locks, and
 *    each lock's "key_escaped" percent-decodes to the key of a distinct
 *    lock of that target;
 *  - /api/v1/locks/{key} finds a lock that is there (200, the same key
 *    back) and answers a 404 in JSON for one that is not.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/render.h"
#include "collectors/locks/lockclass.h"
#include "common/keytext.h"
#include "fuzz/fuzz.h"

#define NOW          1800000000000LL
#define TARGETS_MAX  3
#define LOCKS_MAX    24
#define KEY_MAX      300        /* past OFFENDER_KEY_MAX: labels get cut */

struct added {
    char key[KEY_MAX];
    size_t keylen;
    uint8_t states;
    bool seen;                  /* listed by the JSON API already */
};

struct model {
    struct added locks[TARGETS_MAX][LOCKS_MAX];
    size_t nlocks[TARGETS_MAX];
    bool ok[TARGETS_MAX];
    uint64_t bad;               /* locks with a LOCK_BAD state, ok targets */
};

static const char name_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";

static struct snapshot *
build_snapshot(struct fuzz_in *in, size_t t, struct model *m, char *name)
{
    struct class_set *cs = class_set_new();
    struct snapshot *s;
    size_t n, i, k, nl, klen, hlen, hostlen;
    const char *kp, *hp, *host;
    char cls[CLASS_NAME_MAX + 1];

    n = 1 + fz_u8(in) % 6;
    name[0] = 't';
    name[1] = (char)('0' + t);
    for (i = 2; i < n + 2; i++)
        name[i] = name_chars[fz_u8(in) % (sizeof(name_chars) - 1)];
    name[i] = '\0';
    s = snapshot_new(name);
    FUZZ_CHECK(s != NULL && cs != NULL);
    s->ok = fz_u8(in) % 4 != 0;
    m->ok[t] = s->ok;
    if (!s->ok)
        snprintf(s->err, sizeof(s->err), "connection refused");
    s->started_ms = NOW - 5000;
    s->finished_ms = NOW - 4000;
    s->duration_s = fz_u8(in) / 10.0;
    s->counters.scans_ok = fz_u64(in, 2);
    s->counters.scans_error = fz_u64(in, 1);
    s->counters.keys_total = fz_u64(in, 4);
    s->counters.vanished_total = fz_u64(in, 1);
    s->counters.duplicates_total = fz_u64(in, 1);
    s->counters.truncated_total = fz_u64(in, 1);

    nl = fz_u8(in) % (LOCKS_MAX + 1);
    for (k = 0; k < nl && in->n > 0; k++) {
        struct snap_holder h[2];
        struct snap_lock l;
        struct added *a = &m->locks[t][m->nlocks[t]];
        bool dup = false;
        int idx;

        kp = fz_bytes(in, KEY_MAX, &klen);
        for (i = 0; i < m->nlocks[t]; i++)      /* a scan de-duplicates keys */
            if (m->locks[t][i].keylen == klen && memcmp(m->locks[t][i].key, kp, klen) == 0)
                dup = true;
        memset(&l, 0, sizeof(l));
        memset(h, 0, sizeof(h));
        class_of(kp, klen, NULL, 0, cls, sizeof(cls));
        idx = class_set_intern(cs, cls);
        FUZZ_CHECK(idx >= 0);
        l.key = kp;
        l.key_len = (uint32_t)klen;
        l.class_idx = (uint16_t)idx;
        l.format = (uint8_t)(fz_u8(in) % formats_count);
        l.states = (uint8_t)(LOCK_HELD | (fz_u8(in) & LOCK_BAD));
        l.flags = fz_u8(in) & (SNAP_KEY_TRUNCATED | SNAP_VALUE_TRUNCATED | SNAP_MODE_READ);
        l.pttl_ms = (l.states & LOCK_LEAKED) ? -1 : (int64_t)fz_u64(in, 3);
        l.first_seen_ms = NOW - (int64_t)fz_u64(in, 4);
        l.acquired_ms = fz_bool(in) ? l.first_seen_ms : 0;
        l.thread = fz_bool(in) ? (int64_t)fz_u64(in, 2) : -1;
        l.pid = (int32_t)fz_u64(in, 2);
        l.nholders = (uint16_t)(fz_u8(in) % 3);
        l.holders_total = l.nholders + fz_u8(in) % 2;
        for (i = 0; i < l.nholders; i++) {
            hp = fz_bytes(in, HOLDER_ID_MAX - 1, &hlen);
            h[i].id = hp;
            h[i].id_len = (uint16_t)hlen;
            h[i].truncated = fz_bool(in);
            h[i].count = 1 + (int64_t)fz_u64(in, 1);
            if (h[i].count > l.max_count)
                l.max_count = h[i].count;
        }
        l.holders = h;
        host = fz_bytes(in, HOST_MAX - 1, &hostlen);
        for (i = 0; i < hostlen; i++)           /* formats.h: printable ASCII */
            if ((unsigned char)host[i] < 0x21 || (unsigned char)host[i] > 0x7e)
                hostlen = 0;
        l.host = (char *)(uintptr_t)host;
        l.host_len = (uint8_t)hostlen;
        if (dup)
            continue;
        FUZZ_CHECK(snapshot_add(s, &l, NOW) == 0);
        memcpy(a->key, kp, klen);
        a->keylen = klen;
        a->states = l.states;
        m->nlocks[t]++;
        if (s->ok && (l.states & LOCK_BAD))
            m->bad++;
    }
    s->nclasses = class_set_count(cs);
    s->classes = calloc(s->nclasses, sizeof(char *));
    FUZZ_CHECK(s->classes != NULL);
    for (i = 0; i < s->nclasses; i++)
        FUZZ_CHECK((s->classes[i] = strdup(class_set_name(cs, i))) != NULL);
    class_set_free(cs);
    snapshot_finish(s);
    return s;
}

/* --- the exposition --------------------------------------------------------- */

static bool
name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
        (!first && c >= '0' && c <= '9');
}

/* Parse one sample line: its metric name (into name), its label text
 * (the bytes between the braces, into labels), its value.  Aborts on a
 * malformed line. */
static void
parse_sample(const char *p, const char *nl, char *name, size_t namecap,
             const char **lab, size_t *lablen, double *value)
{
    const char *q = p, *ls;
    char num[64], *end;
    size_t n;

    FUZZ_CHECK(name_char(*q, true));
    while (q < nl && name_char(*q, false))
        q++;
    n = (size_t)(q - p);
    FUZZ_CHECK(n < namecap);
    memcpy(name, p, n);
    name[n] = '\0';
    *lab = q;
    *lablen = 0;
    if (q < nl && *q == '{') {
        ls = ++q;
        while (q < nl && *q != '}') {
            FUZZ_CHECK(name_char(*q, true) && *q != ':');
            while (q < nl && name_char(*q, false) && *q != ':')
                q++;
            FUZZ_CHECK(q + 1 < nl && q[0] == '=' && q[1] == '"');
            for (q += 2; q < nl && *q != '"'; q++)
                if (*q == '\\') {
                    FUZZ_CHECK(q + 1 < nl && (q[1] == '\\' || q[1] == '"' || q[1] == 'n'));
                    q++;
                }
            FUZZ_CHECK(q < nl && *q == '"');
            q++;
            if (q < nl && *q == ',')
                q++;
        }
        FUZZ_CHECK(q < nl && *q == '}');
        *lab = ls;
        *lablen = (size_t)(q - ls);
        q++;
    }
    FUZZ_CHECK(q < nl && *q == ' ');
    q++;
    n = (size_t)(nl - q);
    FUZZ_CHECK(n > 0 && n < sizeof(num));
    memcpy(num, q, n);
    num[n] = '\0';
    if (strcmp(num, "+Inf") == 0 || strcmp(num, "-Inf") == 0 || strcmp(num, "NaN") == 0) {
        *value = 0;
        return;
    }
    *value = strtod(num, &end);
    FUZZ_CHECK(end != num && *end == '\0');
}

static int
cmp_series(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool
label_has(const char *lab, size_t n, const char *want)
{
    size_t w = strlen(want);

    return n >= w && memcmp(lab, want, w) == 0;
}

static void
check_metrics(const struct view *v, const struct model *m)
{
    struct strbuf sb;
    char *text, family[128] = "", name[128], type[16] = "", want[96];
    const char *p, *nl, *lab;
    size_t len, flen, lablen, nseries = 0, cap = 64, i, t, offenders = 0, ups = 0;
    char **series = malloc(cap * sizeof(char *));
    double val, locks[TARGETS_MAX] = { 0 }, leaked[TARGETS_MAX] = { 0 };

    FUZZ_CHECK(series != NULL);
    sb_init(&sb, RENDER_MAX_BYTES);
    FUZZ_CHECK(render_metrics(v, &sb) == 0);
    text = sb_detach(&sb, &len);
    FUZZ_CHECK(text != NULL && len > 0 && text[len - 1] == '\n');
    FUZZ_CHECK(fz_utf8_valid(text, len, true));
    for (p = text; p < text + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(text + len - p));
        FUZZ_CHECK(nl != NULL);
        if (*p == '#') {
            if (nl - p > 7 && memcmp(p, "# TYPE ", 7) == 0) {
                FUZZ_CHECK(sscanf(p, "# TYPE %127s %15s", family, type) == 2);
                FUZZ_CHECK(strcmp(type, "gauge") == 0 || strcmp(type, "counter") == 0 ||
                           strcmp(type, "histogram") == 0 || strcmp(type, "summary") == 0);
            } else {
                FUZZ_CHECK(nl - p > 7 && memcmp(p, "# HELP ", 7) == 0);
            }
            continue;
        }
        parse_sample(p, nl, name, sizeof(name), &lab, &lablen, &val);
        flen = strlen(family);
        FUZZ_CHECK(strncmp(name, family, flen) == 0);
        FUZZ_CHECK(name[flen] == '\0' ||
                   ((strcmp(type, "histogram") == 0 || strcmp(type, "summary") == 0) &&
                    (strcmp(name + flen, "_bucket") == 0 || strcmp(name + flen, "_sum") == 0 ||
                     strcmp(name + flen, "_count") == 0)));
        if (nseries == cap) {
            cap *= 2;
            series = realloc(series, cap * sizeof(char *));
            FUZZ_CHECK(series != NULL);
        }
        series[nseries] = strndup(p, (size_t)(lab + lablen - p));
        FUZZ_CHECK(series[nseries] != NULL);
        nseries++;
        if (strcmp(name, "lockwatch_target_up") == 0)
            ups++;
        if (strcmp(name, "lockwatch_lock_offender_info") == 0)
            offenders++;
        for (t = 0; t < v->ntargets; t++) {
            snprintf(want, sizeof(want), "target=\"%s\"", v->targets[t].name);
            if (!label_has(lab, lablen, want))
                continue;
            if (strcmp(name, "lockwatch_locks") == 0)
                locks[t] += val;
            else if (strcmp(name, "lockwatch_locks_leaked") == 0)
                leaked[t] += val;
        }
    }
    qsort(series, nseries, sizeof(char *), cmp_series);
    for (i = 1; i < nseries; i++) {
        if (strcmp(series[i - 1], series[i]) == 0)
            fprintf(stderr, "series twice: %s\n", series[i]);
        FUZZ_CHECK(strcmp(series[i - 1], series[i]) != 0);
    }
    FUZZ_CHECK(ups == v->ntargets);
    FUZZ_CHECK(offenders == (m->bad < (uint64_t)v->top_offenders ? m->bad :
                             (uint64_t)v->top_offenders));
    for (t = 0; t < v->ntargets; t++) {
        size_t nleak = 0;

        for (i = 0; i < m->nlocks[t]; i++)
            nleak += (m->locks[t][i].states & LOCK_LEAKED) != 0;
        if (!m->ok[t])
            FUZZ_CHECK(locks[t] == 0 && leaked[t] == 0);
        else
            FUZZ_CHECK(locks[t] == (double)m->nlocks[t] && leaked[t] == (double)nleak);
    }
    for (i = 0; i < nseries; i++)
        free(series[i]);
    free(series);
    free(text);
}

/* --- the JSON API ------------------------------------------------------------ */

static const char *const state_names[] = { "all", "held", "leaked", "long", "reentrant_high" };
static const uint8_t state_masks[] = { LOCK_HELD, LOCK_HELD, LOCK_LEAKED, LOCK_LONG,
                                       LOCK_REENTRANT_HIGH };

static int
rank_of(json_t *states)
{
    int r = 0;
    size_t i;
    json_t *s;

    json_array_foreach(states, i, s) {
        const char *n = json_string_value(s);

        FUZZ_CHECK(n != NULL);
        r += strcmp(n, "leaked") == 0 ? 4 : strcmp(n, "long") == 0 ? 2 :
            strcmp(n, "reentrant_high") == 0 ? 1 : 0;
    }
    return r;
}

static void
check_list(const struct view *v, struct model *m, unsigned sel, unsigned limit)
{
    struct api_query q;
    char lim[16], *body = NULL, dec[KEY_MAX];
    size_t len = 0, i, t, k, total = 0, want = 0, blind = 0;
    json_t *root, *arr, *o;
    json_error_t err;
    int status, prev = 1 << 30;
    uint8_t mask = state_masks[sel];

    memset(&q, 0, sizeof(q));
    snprintf(lim, sizeof(lim), "%u", limit);
    q.state = state_names[sel];
    q.limit = lim;
    status = render_api_locks(v, &q, &body, &len);
    FUZZ_CHECK(status == 200 && body != NULL);
    root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    FUZZ_CHECK(root != NULL);
    arr = json_object_get(root, "locks");
    FUZZ_CHECK(json_is_array(arr));
    FUZZ_CHECK(json_integer_value(json_object_get(root, "count")) == (json_int_t)json_array_size(arr));
    FUZZ_CHECK(json_array_size(arr) <= limit);
    for (t = 0; t < v->ntargets; t++) {
        if (!m->ok[t]) {
            blind++;            /* a failed scan with no last good one */
            continue;
        }
        for (k = 0; k < m->nlocks[t]; k++) {
            m->locks[t][k].seen = false;
            total += (m->locks[t][k].states & mask) != 0;
        }
    }
    FUZZ_CHECK(json_integer_value(json_object_get(root, "total")) == (json_int_t)total);
    /* a target nothing is known of is no empty one: the page is not
     * complete, and each such target has its stale entry */
    FUZZ_CHECK(json_is_true(json_object_get(root, "complete")) == (blind == 0));
    FUZZ_CHECK(json_array_size(json_object_get(root, "stale")) == blind);
    want = total < limit ? total : limit;
    FUZZ_CHECK(json_array_size(arr) == want);
    json_array_foreach(arr, i, o) {
        const char *tgt = json_string_value(json_object_get(o, "target"));
        const char *esc = json_string_value(json_object_get(o, "key_escaped"));
        size_t dl, elen;
        int r = rank_of(json_object_get(o, "states"));
        bool found = false;

        FUZZ_CHECK(tgt != NULL && esc != NULL && json_is_string(json_object_get(o, "key")));
        FUZZ_CHECK(r <= prev);
        prev = r;
        elen = strlen(esc);
        FUZZ_CHECK(elen <= 3 * KEY_MAX);
        dl = keytext_unpercent(dec, esc, elen, 0);
        FUZZ_CHECK(dl != (size_t)-1);
        for (t = 0; t < v->ntargets && !found; t++) {
            if (strcmp(v->targets[t].name, tgt) != 0)
                continue;
            FUZZ_CHECK(m->ok[t]);
            for (k = 0; k < m->nlocks[t]; k++) {
                struct added *a = &m->locks[t][k];

                if (!a->seen && a->keylen == dl && memcmp(a->key, dec, dl) == 0) {
                    FUZZ_CHECK(a->states & mask);
                    a->seen = found = true;
                    break;
                }
            }
        }
        FUZZ_CHECK(found);
    }
    json_decref(root);
    free(body);
}

static void
check_one(const struct view *v, const struct model *m, size_t t, size_t k)
{
    const struct added *a = &m->locks[t][k];
    char *body = NULL, dec[KEY_MAX];
    size_t len = 0, dl;
    json_t *root;
    json_error_t err;
    const char *esc;
    int status;

    status = render_api_lock(v, a->key, a->keylen, v->targets[t].name, &body, &len);
    root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    FUZZ_CHECK(root != NULL);
    if (!m->ok[t]) {
        /* nothing known of the target: not "no such lock" */
        FUZZ_CHECK(status == 503 && json_is_string(json_object_get(root, "error")));
    } else {
        FUZZ_CHECK(status == 200);
        esc = json_string_value(json_object_get(root, "key_escaped"));
        FUZZ_CHECK(esc != NULL);
        dl = keytext_unpercent(dec, esc, strlen(esc), 0);
        FUZZ_CHECK(dl == a->keylen && memcmp(dec, a->key, dl) == 0);
    }
    json_decref(root);
    free(body);
    /* the same key one byte longer is no lock of ours */
    if (a->keylen + 1 < KEY_MAX) {
        char longer[KEY_MAX];

        memcpy(longer, a->key, a->keylen);
        longer[a->keylen] = '\x01';
        for (k = 0; k < m->nlocks[t]; k++)
            if (m->locks[t][k].keylen == a->keylen + 1 &&
                memcmp(m->locks[t][k].key, longer, a->keylen + 1) == 0)
                return;
        status = render_api_lock(v, longer, a->keylen + 1, v->targets[t].name, &body, &len);
        FUZZ_CHECK(status == (m->ok[t] ? 404 : 503));
        root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
        FUZZ_CHECK(root != NULL && json_is_string(json_object_get(root, "error")));
        json_decref(root);
        free(body);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = { data, size };
    struct model *m = calloc(1, sizeof(*m));
    struct view v;
    char name[16];
    size_t t, nt;
    unsigned sel, limit, pick;

    FUZZ_CHECK(m != NULL);
    memset(&v, 0, sizeof(v));
    nt = 1 + fz_u8(&in) % TARGETS_MAX;
    v.top_offenders = fz_u8(&in) % 8;
    sel = fz_u8(&in) % 5;
    limit = 1 + fz_u8(&in) % 30;
    pick = fz_u8(&in);
    v.now_ms = NOW;
    v.targets = calloc(nt, sizeof(*v.targets));
    FUZZ_CHECK(v.targets != NULL);
    v.ntargets = nt;
    for (t = 0; t < nt; t++) {
        v.targets[t].snap = build_snapshot(&in, t, m, name);
        v.targets[t].name = strdup(name);
        FUZZ_CHECK(v.targets[t].name != NULL);
    }
    check_metrics(&v, m);
    check_list(&v, m, sel, limit);
    for (t = 0; t < nt; t++)
        if (m->nlocks[t] > 0)
            check_one(&v, m, t, pick % m->nlocks[t]);
    view_release(&v);
    free(m);
    return 0;
}
