/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_samples.c - libFuzzer harness for the sample line parser
 * (collectors/waits/samples.c), the first code to touch what anyone on the
 * network sends to the agent's UDP port.  The first byte says whether the
 * datagram arrived truncated (MSG_TRUNC); the rest is the datagram.
 *
 * Invariants, beyond not crashing:
 *  - the counts add up: lines == samples + invalid, and lines is the
 *    number of non-empty lines counted independently here (plus the cut
 *    part of a truncated datagram);
 *  - the datagram parser agrees, sample by sample, with parsing each line
 *    alone, and with a smaller output array it keeps the first outcap
 *    samples and counts the rest invalid;
 *  - every sample is within the grammar (key not empty, microseconds at
 *    most 2^53, a hold's outcome "ok") and its key points into the
 *    datagram;
 *  - every sample round-trips: written back as a line with the key
 *    (owner, holder) percent-encoded, it parses to the same sample (or is
 *    refused only for being longer than SAMPLES_LINE_MAX);
 *  - the signature check (sampleauth.c) never reads past the datagram,
 *    and with a key accepts nothing unsigned; without one it skips
 *    exactly a leading mac line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/waits/sampleauth.h"
#include "collectors/waits/samples.h"
#include "common/keytext.h"
#include "common/lw1.h"
#include "fuzz/fuzz.h"

/* The next line of the datagram from *pos, as samples.h defines lines
 * ("\n" or "\r\n"; a truncated datagram's unterminated tail is none):
 * its start and length at *start, *ll.  false past the last. */
static bool
next_line(const char *buf, size_t len, bool truncated, size_t *pos, size_t *start,
          size_t *ll)
{
    const char *nl;
    size_t end;

    if (*pos >= len)
        return false;
    nl = memchr(buf + *pos, '\n', len - *pos);
    if (nl == NULL && truncated)
        return false;
    end = nl != NULL ? (size_t)(nl - buf) : len;
    *start = *pos;
    *ll = end - *pos;
    if (*ll > 0 && buf[end - 1] == '\r')
        (*ll)--;
    *pos = end + 1;
    return true;
}

static uint64_t
count_lines(const char *buf, size_t len, bool truncated)
{
    size_t pos = 0, start, ll;
    uint64_t lines = 0;

    while (next_line(buf, len, truncated, &pos, &start, &ll))
        lines += ll > 0;
    return lines + (truncated ? 1 : 0);
}

static bool
same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static bool
same_sample(const struct sample *a, const struct sample *b)
{
    return a->kind == b->kind && a->outcome == b->outcome && a->us == b->us &&
        a->start == b->start && a->reason == b->reason &&
        a->overrun_known == b->overrun_known && a->overrun_us == b->overrun_us &&
        same_bytes(a->key, a->keylen, b->key, b->keylen) &&
        same_bytes(a->owner, a->ownerlen, b->owner, b->ownerlen) &&
        same_bytes(a->holder, a->holderlen, b->holder, b->holderlen);
}

/* Parse each line of the original datagram alone, in order, and compare
 * with what the datagram parser returned. */
static void
check_line_by_line(const char *orig, size_t len, bool truncated,
                   const struct sample *got, size_t n)
{
    char *line = malloc(len + 1);
    size_t pos = 0, start, ll, k = 0;
    struct sample s;

    FUZZ_CHECK(line != NULL);
    while (next_line(orig, len, truncated, &pos, &start, &ll)) {
        if (ll == 0)
            continue;
        memcpy(line, orig + start, ll);
        if (samples_parse_line(line, ll, &s) == 0) {
            FUZZ_CHECK(k < n && same_sample(&s, &got[k]));
            k++;
        }
    }
    FUZZ_CHECK(k == n);
    free(line);
}

/* Append " " and the percent-encoding of p (or "-" when plen is 0). */
static size_t
put_field(char *line, size_t cap, size_t len, const char *p, size_t plen)
{
    if (len + 2 > cap)
        return cap;
    line[len++] = ' ';
    if (plen == 0) {
        line[len++] = '-';
        return len;
    }
    return len + keytext_percent(line + len, cap - len, p, plen);
}

static void
check_round_trip(const struct sample *s)
{
    static const char *const verbs[] = { "wait", "hold", "waiting", "lost" };
    size_t cap = 3 * (s->keylen + s->ownerlen + s->holderlen) + 128, len;
    char *line = malloc(cap);
    struct sample back;
    int w;

    FUZZ_CHECK(line != NULL);
    w = snprintf(line, cap, "lw1 %s", verbs[s->kind]);
    len = put_field(line, cap, (size_t)w, s->key, s->keylen);
    switch (s->kind) {
    case SAMPLE_WAIT:
        len += (size_t)snprintf(line + len, cap - len, " %" PRIu64 " %s", s->us,
                                sample_outcome_str(s->outcome));
        if (s->ownerlen > 0) {
            len = put_field(line, cap, len, s->owner, s->ownerlen);
            len = put_field(line, cap, len, s->holder, s->holderlen);
        }
        break;
    case SAMPLE_HOLD:
        len += (size_t)snprintf(line + len, cap - len, " %" PRIu64, s->us);
        if (s->ownerlen > 0) {
            len = put_field(line, cap, len, s->owner, s->ownerlen);
            len = put_field(line, cap, len, s->holder, s->holderlen);
        }
        break;
    case SAMPLE_WAITING:
        len = put_field(line, cap, len, s->owner, s->ownerlen);
        len = put_field(line, cap, len, s->holder, s->holderlen);
        len += (size_t)snprintf(line + len, cap - len, " %s",
                                s->start ? "start" : sample_outcome_str(s->outcome));
        break;
    case SAMPLE_LOST:
        len = put_field(line, cap, len, s->owner, s->ownerlen);
        len = put_field(line, cap, len, s->holder, s->holderlen);
        len += (size_t)snprintf(line + len, cap - len, " %" PRIu64, s->us);
        if (s->overrun_known)
            len += (size_t)snprintf(line + len, cap - len, " %" PRIu64, s->overrun_us);
        else
            len += (size_t)snprintf(line + len, cap - len, " -");
        len += (size_t)snprintf(line + len, cap - len, " %s",
                                sample_lost_reason_str(s->reason));
        break;
    }
    FUZZ_CHECK(len < cap);
    if (len > SAMPLES_LINE_MAX) {
        FUZZ_CHECK(samples_parse_line(line, len, &back) == -1);
    } else {
        FUZZ_CHECK(samples_parse_line(line, len, &back) == 0);
        FUZZ_CHECK(same_sample(s, &back));
    }
    free(line);
}

/* The signature check on the same bytes (a copy sized exactly, so ASan
 * sees a read past the end). */
static void
check_auth(const uint8_t *data, size_t len, bool truncated)
{
    static const char key[] = "fuzz key, sixteen bytes or more";
    char *copy = malloc(len ? len : 1);
    size_t skip = 0;
    enum sampleauth_verdict v;

    FUZZ_CHECK(copy != NULL);
    memcpy(copy, data, len);
    v = sampleauth_check(key, sizeof(key) - 1, copy, len, truncated, 1767225600, &skip);
    FUZZ_CHECK(v <= SAMPLEAUTH_OK);
    if (v == SAMPLEAUTH_OK)
        FUZZ_CHECK(!truncated && len > 8 && memcmp(copy, "lw1 mac ", 8) == 0 && skip <= len &&
                   copy[skip - 1] == '\n');
    v = sampleauth_check("", 0, copy, len, truncated, 0, &skip);
    FUZZ_CHECK(v == SAMPLEAUTH_OK && skip <= len);
    if (skip > 0)
        FUZZ_CHECK(memcmp(copy, "lw1 mac ", 8) == 0);
    free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool truncated;
    size_t len, cap, n, i, n2, small;
    char *buf, *buf2;
    struct sample *out, *out2;
    uint64_t lines, invalid, lines2, invalid2;

    if (size == 0)
        return 0;
    truncated = data[0] & 1;
    data++;
    size--;
    len = size < SAMPLES_DATAGRAM_MAX ? size : SAMPLES_DATAGRAM_MAX;
    cap = SAMPLES_MAX_PER(len);
    buf = malloc(len + 1);
    buf2 = malloc(len + 1);
    out = calloc(cap, sizeof(*out));
    out2 = calloc(cap, sizeof(*out2));
    FUZZ_CHECK(buf != NULL && buf2 != NULL && out != NULL && out2 != NULL);
    memcpy(buf, data, len);
    memcpy(buf2, data, len);

    n = samples_parse_datagram(buf, len, truncated, out, cap, &lines, &invalid);
    FUZZ_CHECK(n <= cap);
    FUZZ_CHECK(lines == n + invalid);
    FUZZ_CHECK(lines == count_lines((const char *)data, len, truncated));
    for (i = 0; i < n; i++) {
        const struct sample *s = &out[i];

        FUZZ_CHECK((unsigned)s->kind <= SAMPLE_LOST);
        FUZZ_CHECK((unsigned)s->outcome < SAMPLE_OUTCOMES);
        FUZZ_CHECK(s->kind == SAMPLE_WAIT || s->kind == SAMPLE_WAITING ||
                   s->outcome == SAMPLE_OK);
        FUZZ_CHECK(s->ownerlen <= LW1_OWNER_MAX && s->holderlen <= LW1_HOLDER_MAX);
        FUZZ_CHECK(s->ownerlen == 0 || (s->owner >= buf && s->owner + s->ownerlen <= buf + len));
        FUZZ_CHECK(s->holderlen == 0 ||
                   (s->holder >= buf && s->holder + s->holderlen <= buf + len));
        FUZZ_CHECK(s->us <= LW1_US_MAX);
        FUZZ_CHECK(s->keylen >= 1 && s->key >= buf && s->key + s->keylen <= buf + len);
        check_round_trip(s);
    }
    check_line_by_line((const char *)data, len, truncated, out, n);
    check_auth(data, len, truncated);

    /* Room for fewer samples than there are: the first ones are kept, the
     * rest are invalid lines, and nothing else changes. */
    small = n / 2;
    n2 = samples_parse_datagram(buf2, len, truncated, out2, small, &lines2, &invalid2);
    FUZZ_CHECK(n2 == small && lines2 == lines && invalid2 == lines - small);
    for (i = 0; i < n2; i++)
        FUZZ_CHECK(same_sample(&out[i], &out2[i]));

    free(buf);
    free(buf2);
    free(out);
    free(out2);
    return 0;
}
