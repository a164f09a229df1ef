/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peerhealth.c - the down/up judgement of a shard peer from its checks
 * (agent/peerhealth.h): PEER_DOWN_CHECKS failures in a row make it down,
 * the first success makes it up; a check's answer must be the shard's.
 */
#include "agent/peerhealth.h"

#include <jansson.h>
#include <stdio.h>

bool
peer_health_record(struct peer_health *h, bool ok, const char *err, int64_t now_ms)
{
    bool was = h->down;

    h->checks++;
    if (ok) {
        h->fails = 0;
        h->failing_since_ms = 0;
        h->down = false;
        h->err[0] = '\0';
        return was;
    }
    if (h->fails == 0)
        h->failing_since_ms = now_ms;
    if (h->fails < PEER_DOWN_CHECKS)
        h->fails++;
    snprintf(h->err, sizeof(h->err), "%s", err != NULL && err[0] != '\0' ? err : "no answer");
    h->down = h->fails >= PEER_DOWN_CHECKS;
    return h->down != was;
}

bool
peer_answer_check(const char *body, size_t len, int shard, int total, char *err,
                  size_t errlen)
{
    json_t *root = json_loadb(body, len, 0, NULL);
    json_t *js = json_object_get(root, "shard"), *jn = json_object_get(root, "shards");
    bool ok = false;

    if (!json_is_integer(js) || !json_is_integer(jn))
        snprintf(err, errlen, "%s answers, but not as a lockwatch agent: is the URL "
                 "an agent's?", PEER_PATH);
    else if (json_integer_value(js) != shard || json_integer_value(jn) != total)
        snprintf(err, errlen, "it answers as shard %lld/%lld: shard_peers names another "
                 "agent there", (long long)json_integer_value(js),
                 (long long)json_integer_value(jn));
    else
        ok = true;
    json_decref(root);
    return ok;
}
