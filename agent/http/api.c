/*
 * api.c - the JSON lock API (/api/v1/locks and /api/v1/locks/{key}).
 *
 * JSON is built with jansson, never by hand.  Keys and holder ids are raw
 * bytes, so every lock carries two forms: "key", sanitised to valid UTF-8
 * for people, and "key_escaped", percent-encoded and lossless, for
 * scripts (and for lockctl, which must address the exact key).
 *
 * Listing is worst first across targets: each snapshot is already sorted,
 * so the targets' orders are merged without copying, and "total" is
 * counted in one more pass.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/http/render.h"
#include "agent/http/routes.h"
#include "common/keytext.h"
#include "collectors/locks/lockjson.h"
#include "collectors/locks/lockstate.h"

#define API_LIMIT_DEFAULT 100
#define API_LIMIT_MAX     10000

static json_t *
lock_json(const struct snapshot *s, const struct snap_lock *l, int64_t now_ms)
{
    const char *key = l->key;
    json_t *o, *holders, *h;
    size_t i;
    int bad = 0;

    o = json_object();
    holders = json_array();
    if (o == NULL || holders == NULL)
        goto fail;
    bad |= json_object_set_new(o, "target", json_string(s->target));
    bad |= json_object_set_new(o, "key", lockjson_text(key, l->key_len));
    bad |= json_object_set_new(o, "key_escaped", lockjson_escaped(key, l->key_len));
    bad |= json_object_set_new(o, "class", lockjson_text(s->classes[l->class_idx],
                                                        strlen(s->classes[l->class_idx])));
    bad |= json_object_set_new(o, "format", json_string(formats_table[l->format].name));
    bad |= json_object_set_new(o, "states", lockjson_states(l->states));
    bad |= json_object_set_new(o, "pttl_ms", json_integer(l->pttl_ms));
    for (i = 0; i < l->nholders; i++) {
        const struct snap_holder *sh = &l->holders[i];

        h = json_object();
        if (h == NULL)
            goto fail;
        bad |= json_object_set_new(h, "id", lockjson_text(sh->id, sh->id_len));
        bad |= json_object_set_new(h, "id_escaped", lockjson_escaped(sh->id, sh->id_len));
        bad |= json_object_set_new(h, "count", json_integer(sh->count));
        if (sh->truncated)
            bad |= json_object_set_new(h, "id_truncated", json_true());
        bad |= json_array_append_new(holders, h);
    }
    bad |= json_object_set_new(o, "holders", holders);     /* taken even on failure */
    holders = NULL;
    bad |= json_object_set_new(o, "holders_total", json_integer(l->holders_total));
    bad |= json_object_set_new(o, "max_count", json_integer(l->max_count));
    if (l->flags & SNAP_MODE_READ)
        bad |= json_object_set_new(o, "mode", json_string("read"));
    else if (l->flags & SNAP_MODE_WRITE)
        bad |= json_object_set_new(o, "mode", json_string("write"));
    bad |= json_object_set_new(o, "first_seen", lockjson_time(l->first_seen_ms));
    bad |= json_object_set_new(o, "age_seconds",
                               json_real((double)(now_ms - l->first_seen_ms) / 1000.0));
    bad |= json_object_set_new(o, "first_seen_ms", json_integer(l->first_seen_ms));
    bad |= json_object_set_new(o, "nottl_since", lockjson_time(l->nottl_since_ms));
    bad |= json_object_set_new(o, "nottl_since_ms", l->nottl_since_ms > 0 ?
                               json_integer(l->nottl_since_ms) : json_null());
    bad |= json_object_set_new(o, "host", l->host_len ?
                               lockjson_text(l->host, l->host_len) : json_null());
    bad |= json_object_set_new(o, "pid", l->pid ? json_integer(l->pid) : json_null());
    bad |= json_object_set_new(o, "thread",
                               l->thread >= 0 ? json_integer(l->thread) : json_null());
    bad |= json_object_set_new(o, "acquired_at",
                               l->acquired_ms ? lockjson_time(l->acquired_ms) : json_null());
    if (l->flags & SNAP_KEY_TRUNCATED)
        bad |= json_object_set_new(o, "key_truncated", json_true());
    if (l->flags & SNAP_VALUE_TRUNCATED)
        bad |= json_object_set_new(o, "value_truncated", json_true());
    if (bad)
        goto fail;
    return o;
fail:
    json_decref(o);
    json_decref(holders);
    return NULL;
}

static int
dump(json_t *root, int status, char **body, size_t *len)
{
    char *s = json_dumps(root, JSON_COMPACT);

    json_decref(root);
    if (s == NULL)
        return 500;
    *body = s;
    *len = strlen(s);
    return status;
}

int
render_api_error(int status, const char *msg, char **body, size_t *len)
{
    json_t *o = json_pack("{s:s}", "error", msg);

    if (o == NULL)
        return 500;
    return dump(o, status, body, len);
}

struct filter {
    uint8_t mask;
    const char *target;
    const char *class_;
};

static bool
target_matches(const struct view_target *t, const struct filter *f)
{
    return t->snap != NULL && t->snap->ok &&
        (f->target == NULL || strcmp(t->name, f->target) == 0);
}

static bool
lock_matches(const struct snapshot *s, const struct snap_lock *l, const struct filter *f)
{
    if (!(l->states & f->mask))
        return false;
    return f->class_ == NULL || strcmp(s->classes[l->class_idx], f->class_) == 0;
}

int
render_api_locks(const struct view *v, const struct api_query *q, char **body, size_t *len)
{
    struct filter f;
    size_t *pos = NULL, i, count = 0;
    uint64_t total = 0;
    bool complete = true;
    int bad;
    json_t *root = NULL, *arr = NULL, *o;
    long limit = API_LIMIT_DEFAULT;
    char *end;

    if (lockstate_mask(q->state != NULL ? q->state : "all", &f.mask) == -1)
        return render_api_error(400, "state must be one of leaked, long, reentrant_high, held, all",
                                body, len);
    if (q->limit != NULL) {
        errno = 0;
        limit = strtol(q->limit, &end, 10);
        if (errno != 0 || end == q->limit || *end != '\0' || limit < 1 || limit > API_LIMIT_MAX)
            return render_api_error(400, "limit must be an integer from 1 to 10000", body, len);
    }
    f.target = q->target;
    f.class_ = q->class_;

    pos = calloc(v->ntargets ? v->ntargets : 1, sizeof(*pos));
    root = json_object();
    arr = json_array();
    if (pos == NULL || root == NULL || arr == NULL)
        goto oom;

    /* k-way merge of the per-target worst-first retained locks */
    while (count < (size_t)limit) {
        const struct snap_lock *best = NULL;
        size_t bi = 0;

        for (i = 0; i < v->ntargets; i++) {
            const struct snapshot *s = v->targets[i].snap;

            if (!target_matches(&v->targets[i], &f))
                continue;
            while (pos[i] < s->nlocks && !lock_matches(s, s->locks[pos[i]], &f))
                pos[i]++;
            if (pos[i] >= s->nlocks)
                continue;
            if (best == NULL || snapshot_worse(s->locks[pos[i]], best)) {
                best = s->locks[pos[i]];
                bi = i;
            }
        }
        if (best == NULL)
            break;
        o = lock_json(v->targets[bi].snap, best, v->now_ms);
        if (o == NULL || json_array_append_new(arr, o) == -1)
            goto oom;
        pos[bi]++;
        count++;
    }
    /* totals come from the class counters, which count every lock, kept
     * in detail or not */
    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;
        size_t c;

        if (!target_matches(&v->targets[i], &f))
            continue;
        if (!snapshot_complete(s))
            complete = false;
        for (c = 0; c < s->nclasses && c < s->class_cap; c++) {
            const struct snap_class *st = &s->class_stats[c];

            if (f.class_ != NULL && strcmp(s->classes[c], f.class_) != 0)
                continue;
            total += f.mask == LOCK_LEAKED ? st->leaked :
                f.mask == LOCK_LONG ? st->long_held :
                f.mask == LOCK_REENTRANT_HIGH ? st->reentrant_high : st->total;
        }
    }
    free(pos);
    bad = json_object_set_new(root, "count", json_integer((json_int_t)count));
    bad |= json_object_set_new(root, "total", json_integer((json_int_t)total));
    /* false when a target counted more locks than it keeps in detail
     * (SNAP_RETAIN_MAX, the worst ones): the list then holds the worst */
    bad |= json_object_set_new(root, "complete", json_boolean(complete));
    bad |= json_object_set_new(root, "locks", arr);     /* arr is root's, even on failure */
    if (bad) {
        json_decref(root);
        return 500;
    }
    return dump(root, 200, body, len);
oom:
    free(pos);
    json_decref(arr);
    json_decref(root);
    return 500;
}

int
render_api_lock(const struct view *v, const char *key, size_t keylen,
                const char *target, char **body, size_t *len)
{
    size_t i, k;
    bool partial = false;

    for (i = 0; i < v->ntargets; i++) {
        const struct snapshot *s = v->targets[i].snap;

        if (s == NULL || !s->ok || (target != NULL && strcmp(v->targets[i].name, target) != 0))
            continue;
        for (k = 0; k < s->nlocks; k++) {
            const struct snap_lock *l = s->locks[k];

            if (l->key_len == keylen && memcmp(l->key, key, keylen) == 0) {
                json_t *o = lock_json(s, l, v->now_ms);

                if (o == NULL)
                    return 500;
                return dump(o, 200, body, len);
            }
        }
        if (!snapshot_complete(s))
            partial = true;
    }
    if (partial)
        return render_api_error(404, "not among the locks kept in detail (the worst "
                                "10000 per target; healthy locks are only counted): "
                                "use lockctl show KEY to read it from Redis", body, len);
    return render_api_error(404, "no such lock in the last scan (check the key and ?target=)",
                            body, len);
}

/* GET /api/v1/locks[?state=&target=&class=&limit=] */
void
serve_locks(const struct http_request *rq, struct http_response *out)
{
    struct api_query q;
    struct view v;
    char *state, *target, *cls, *limit, *body = NULL;
    size_t len = 0;
    int bad = 0, status;

    state = http_query(rq, "state", &bad);
    target = http_query(rq, "target", &bad);
    cls = http_query(rq, "class", &bad);
    limit = http_query(rq, "limit", &bad);
    if (bad) {
        status = render_api_error(400, "malformed percent-encoding in the query", &body, &len);
    } else if (agent_view(rq->agent, &v) == -1) {
        status = 500;
    } else {
        q.state = state;
        q.target = target;
        q.class_ = cls;
        q.limit = limit;
        status = render_api_locks(&v, &q, &body, &len);
        view_release(&v);
    }
    free(state);
    free(target);
    free(cls);
    free(limit);
    http_json(out, status, body, len);
}

/* GET /api/v1/locks/<percent-encoded key>[?target=] */
void
serve_lock(const struct http_request *rq, struct http_response *out)
{
    struct view v;
    char *key, *target, *body = NULL;
    size_t keylen, len = 0;
    int bad = 0, status;

    key = malloc(strlen(rq->rest) + 1);
    if (key == NULL) {
        http_text(out, 500, HTTP_OOM_TEXT);
        return;
    }
    keylen = keytext_unpercent(key, rq->rest, strlen(rq->rest), 0);
    target = http_query(rq, "target", &bad);
    if (keylen == (size_t)-1 || bad) {
        status = render_api_error(400, "malformed percent-encoding in the key or query",
                                  &body, &len);
    } else if (agent_view(rq->agent, &v) == -1) {
        status = 500;
    } else {
        status = render_api_lock(&v, key, keylen, target, &body, &len);
        view_release(&v);
    }
    free(key);
    free(target);
    http_json(out, status, body, len);
}
