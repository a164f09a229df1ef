/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_samples.c - the sample line protocol parser: good lines, every
 * kind of malformed line, mixed datagrams (the valid lines still count),
 * percent-decoding of hostile bytes, line endings and the size limits;
 * the waiting / lost / 6-field hold lines of issue 25, the mac line
 * (docs/line-protocol.md's test vector, every refusal) and the waiting
 * table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/keytext.h"
#include "collectors/waits/sampleauth.h"
#include "collectors/waits/samples.h"
#include "collectors/waits/waiting.h"

/* Parse a copy of a C-string line (the parser decodes in place). */
static int
parse(const char *text, struct sample *out, char *buf, size_t bufsz)
{
    size_t n = strlen(text);

    assert_true(n < bufsz);
    memcpy(buf, text, n + 1);
    return samples_parse_line(buf, n, out);
}

static void
good_lines(void **state)
{
    struct sample s;
    char buf[256];

    (void)state;
    assert_int_equal(parse("lw1 wait lock:order:1 1500 ok", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_WAIT);
    assert_int_equal(s.outcome, SAMPLE_OK);
    assert_int_equal(s.us, 1500);
    assert_int_equal(s.keylen, 12);
    assert_memory_equal(s.key, "lock:order:1", 12);

    assert_int_equal(parse("lw1 wait k 0 timeout", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
    assert_int_equal(s.us, 0);
    assert_int_equal(parse("lw1 wait k 7 error", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.outcome, SAMPLE_ERROR);

    assert_int_equal(parse("lw1 hold lock:x 20000", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_HOLD);
    assert_int_equal(s.us, 20000);
    assert_memory_equal(s.key, "lock:x", 6);

    /* the largest value, and leading zeros (still digits only) */
    assert_int_equal(parse("lw1 hold k 9007199254740992", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.us, (uint64_t)1 << 53);
    assert_int_equal(parse("lw1 hold k 0000000000000042", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.us, 42);

    assert_string_equal(sample_outcome_str(SAMPLE_OK), "ok");
    assert_string_equal(sample_outcome_str(SAMPLE_TIMEOUT), "timeout");
    assert_string_equal(sample_outcome_str(SAMPLE_ERROR), "error");
}

static void
malformed_lines(void **state)
{
    static const char *const bad[] = {
        /* version */
        "lw2 wait k 1 ok", "LW1 wait k 1 ok", "lw wait k 1 ok", "lw10 wait k 1 ok",
        "wait k 1 ok",
        /* verb */
        "lw1 Wait k 1 ok", "lw1 waits k 1 ok", "lw1 release k 1", "lw1  k 1 ok",
        /* fields missing or extra */
        "lw1", "lw1 wait", "lw1 wait k", "lw1 wait k 1", "lw1 hold k",
        "lw1 hold k 1 ok", "lw1 wait k 1 ok extra", "lw1 hold k 1 2 3 4",
        /* outcome */
        "lw1 wait k 1 OK", "lw1 wait k 1 fail", "lw1 wait k 1 okay", "lw1 wait k 1 o",
        /* microseconds */
        "lw1 hold k -1", "lw1 hold k +1", "lw1 hold k 1.5", "lw1 hold k 1e3",
        "lw1 hold k 0x10", "lw1 hold k 12a", "lw1 hold k a12", "lw1 hold k 9007199254740993",
        "lw1 hold k 99999999999999999999", "lw1 hold k 18446744073709551616",
        "lw1 hold k 00000000000000042",    /* 17 digits */
        /* separators and stray bytes */
        "lw1  hold k 1", "lw1 hold  k 1", "lw1 hold k  1", " lw1 hold k 1", "lw1 hold k 1 ",
        "lw1\thold k 1", "lw1 hold k\t1", "lw1 hold k 1\t", "lw1 hold k\x7f 1",
        "lw1 hold k\x80 1", "lw1 hold caf\xc3\xa9 1", "lw1 hold k 1\r",
        /* key: bad escapes, empty */
        "lw1 hold % 1", "lw1 hold %4 1", "lw1 hold k%4 1", "lw1 hold %zz 1", "lw1 hold %g1 1",
        "lw1 hold %%41 1", "lw1 hold k% 1",
        /* nothing at all */
        "",
    };
    struct sample s;
    char buf[256];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i], &s, buf, sizeof(buf)) != -1) {
            print_error("accepted a malformed line: \"%s\"\n", bad[i]);
            fail();
        }
    }
    /* a NUL inside the line (not representable as a C string above) */
    memcpy(buf, "lw1 hold k\0x 1", 14);
    assert_int_equal(samples_parse_line(buf, 14, &s), -1);
}

static void
percent_decoding(void **state)
{
    struct sample s;
    char buf[256];

    (void)state;
    assert_int_equal(parse("lw1 hold lock%3Aa%20b%25c 1", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 10);
    assert_memory_equal(s.key, "lock:a b%c", 10);
    /* either hex case; escaping a byte that need not be is fine */
    assert_int_equal(parse("lw1 hold %6c%6F%63%6B 1", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 4);
    assert_memory_equal(s.key, "lock", 4);
    /* hostile bytes: NUL, newline, quote, backslash, invalid UTF-8 */
    assert_int_equal(parse("lw1 wait a%00b%0A%22%5C%FF%C3%28 5 ok", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 9);
    assert_memory_equal(s.key, "a\0b\n\"\\\xff\xc3\x28", 9);
    /* a key that decodes to a single NUL byte is a key, not an empty one */
    assert_int_equal(parse("lw1 hold %00 1", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.keylen, 1);
}

static void
every_byte_round_trips(void **state)
{
    char key[256], enc[KEYTEXT_PERCENT_MAX(256)], line[1024];
    struct sample s;
    size_t n;
    int i, len;

    (void)state;
    for (i = 0; i < 256; i++)
        key[i] = (char)i;
    n = keytext_percent(enc, sizeof(enc), key, sizeof(key));
    assert_true(n < sizeof(enc));
    len = snprintf(line, sizeof(line), "lw1 wait %s 123 timeout", enc);
    assert_true(len > 0 && (size_t)len < sizeof(line));
    assert_int_equal(samples_parse_line(line, (size_t)len, &s), 0);
    assert_int_equal(s.keylen, 256);
    assert_memory_equal(s.key, key, 256);
    assert_int_equal(s.us, 123);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
}

/* Parse a datagram given as bytes; returns the valid count. */
static size_t
dgram(const char *text, size_t len, bool trunc, struct sample *out, size_t cap,
      uint64_t *lines, uint64_t *invalid)
{
    static char buf[SAMPLES_DATAGRAM_MAX + 1];

    assert_true(len <= sizeof(buf));
    memcpy(buf, text, len);
    return samples_parse_datagram(buf, len, trunc, out, cap, lines, invalid);
}

#define DG(s) (s), sizeof(s) - 1

static void
mixed_datagrams(void **state)
{
    struct sample out[16];
    uint64_t lines, invalid;
    size_t n;

    (void)state;
    n = dgram(DG("lw1 wait a 1 ok\n"
                 "lw1 wait b 2 nope\n"
                 "lw1 hold c 3\n"
                 "garbage\n"
                 "lw1 hold %zz 4\n"
                 "lw1 wait d 5 error\n"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 3);
    assert_int_equal(lines, 6);
    assert_int_equal(invalid, 3);
    assert_memory_equal(out[0].key, "a", 1);
    assert_int_equal(out[1].kind, SAMPLE_HOLD);
    assert_memory_equal(out[1].key, "c", 1);
    assert_int_equal(out[2].us, 5);
    assert_int_equal(out[2].outcome, SAMPLE_ERROR);
}

static void
line_endings(void **state)
{
    struct sample out[16];
    uint64_t lines, invalid;
    size_t n;

    (void)state;
    /* \r\n, and a last line without a terminator */
    n = dgram(DG("lw1 hold a 1\r\nlw1 hold b 2\nlw1 hold c 3"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 3);
    assert_int_equal(lines, 3);
    assert_int_equal(invalid, 0);
    assert_int_equal(out[0].us, 1);
    assert_int_equal(out[2].us, 3);
    assert_memory_equal(out[2].key, "c", 1);
    /* empty lines are not samples; a lone \r is an empty line */
    n = dgram(DG("\n\nlw1 hold a 1\n\r\n\n"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 1);
    assert_int_equal(lines, 1);
    assert_int_equal(invalid, 0);
    n = dgram(DG(""), false, out, 16, &lines, &invalid);
    assert_int_equal(n + lines + invalid, 0);
    /* \r elsewhere is a stray byte */
    n = dgram(DG("lw1 hold a 1\r\r\nlw1 hold\r b 1\n"), false, out, 16, &lines, &invalid);
    assert_int_equal(n, 0);
    assert_int_equal(invalid, 2);
    /* a NUL byte spoils only its own line */
    n = dgram("lw1 hold a 1\nlw1 hold \0 1\nlw1 hold c 3\n", 39, false, out, 16, &lines, &invalid);
    assert_int_equal(n, 2);
    assert_int_equal(lines, 3);
    assert_int_equal(invalid, 1);
}

static void
truncated_datagram(void **state)
{
    struct sample out[16];
    uint64_t lines, invalid;
    size_t n;

    (void)state;
    /* the kernel cut "lw1 hold c 3456": the "345" that arrived must not count */
    n = dgram(DG("lw1 hold a 1\nlw1 hold b 2\nlw1 hold c 345"), true, out, 16, &lines, &invalid);
    assert_int_equal(n, 2);
    assert_int_equal(lines, 3);
    assert_int_equal(invalid, 1);
    /* cut right after a terminator: the lost part is still one invalid line */
    n = dgram(DG("lw1 hold a 1\n"), true, out, 16, &lines, &invalid);
    assert_int_equal(n, 1);
    assert_int_equal(lines, 2);
    assert_int_equal(invalid, 1);
}

static void
limits(void **state)
{
    static char buf[SAMPLES_DATAGRAM_MAX + 64];
    static struct sample out[SAMPLES_MAX_PER(SAMPLES_DATAGRAM_MAX)];
    uint64_t lines, invalid;
    struct sample s;
    size_t n, len, keylen;

    (void)state;
    /* a line of exactly SAMPLES_LINE_MAX bytes is fine, one more is not */
    keylen = SAMPLES_LINE_MAX - strlen("lw1 hold  1");
    memcpy(buf, "lw1 hold ", 9);
    memset(buf + 9, 'k', keylen);
    memcpy(buf + 9 + keylen, " 1", 2);
    assert_int_equal(samples_parse_line(buf, SAMPLES_LINE_MAX, &s), 0);
    assert_int_equal(s.keylen, keylen);
    memcpy(buf, "lw1 hold ", 9);
    memset(buf + 9, 'k', keylen + 1);
    memcpy(buf + 10 + keylen, " 1", 2);
    assert_int_equal(samples_parse_line(buf, SAMPLES_LINE_MAX + 1, &s), -1);

    /* a datagram of nothing but the shortest valid lines fits the bound */
    for (len = 0; len + SAMPLES_LINE_MIN <= SAMPLES_DATAGRAM_MAX; len += SAMPLES_LINE_MIN)
        memcpy(buf + len, "lw1 hold k 0\n", SAMPLES_LINE_MIN);
    n = samples_parse_datagram(buf, len, false, out, SAMPLES_MAX_PER(len), &lines, &invalid);
    assert_int_equal(n, len / SAMPLES_LINE_MIN);
    assert_int_equal(invalid, 0);
    /* and without room for them, the rest count as invalid, never lost */
    for (len = 0; len + SAMPLES_LINE_MIN <= SAMPLES_DATAGRAM_MAX; len += SAMPLES_LINE_MIN)
        memcpy(buf + len, "lw1 hold k 0\n", SAMPLES_LINE_MIN);
    n = samples_parse_datagram(buf, len, false, out, 10, &lines, &invalid);
    assert_int_equal(n, 10);
    assert_int_equal(lines, len / SAMPLES_LINE_MIN);
    assert_int_equal(invalid, lines - 10);
}


static void
event_lines(void **state)
{
    struct sample s;
    char buf[512];

    (void)state;
    assert_int_equal(parse("lw1 waiting lock:a web-1%3A42%2F7 tok%20en start", &s, buf,
                           sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_WAITING);
    assert_true(s.start);
    assert_int_equal(s.keylen, 6);
    assert_memory_equal(s.key, "lock:a", 6);
    assert_int_equal(s.ownerlen, 10);
    assert_memory_equal(s.owner, "web-1:42/7", 10);
    assert_int_equal(s.holderlen, 6);
    assert_memory_equal(s.holder, "tok en", 6);

    assert_int_equal(parse("lw1 waiting k o - start", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.holderlen, 0);           /* "-": not known */
    assert_int_equal(parse("lw1 waiting k o %2D start", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.holderlen, 1);           /* a real "-" id */
    assert_memory_equal(s.holder, "-", 1);
    assert_int_equal(parse("lw1 waiting k o h timeout", &s, buf, sizeof(buf)), 0);
    assert_false(s.start);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
    assert_int_equal(parse("lw1 waiting k o h ok", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.outcome, SAMPLE_OK);
    assert_int_equal(parse("lw1 waiting k o h error", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.outcome, SAMPLE_ERROR);

    assert_int_equal(parse("lw1 lost lock:a o h 30000000 1500 expired", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_LOST);
    assert_int_equal(s.us, 30000000);
    assert_true(s.overrun_known);
    assert_int_equal(s.overrun_us, 1500);
    assert_int_equal(s.reason, SAMPLE_LOST_EXPIRED);
    assert_int_equal(parse("lw1 lost k o h 5 - renewal", &s, buf, sizeof(buf)), 0);
    assert_false(s.overrun_known);
    assert_int_equal(s.reason, SAMPLE_LOST_RENEWAL);
    assert_string_equal(sample_lost_reason_str(s.reason), "renewal");

    assert_int_equal(parse("lw1 hold k 20 own hol", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_HOLD);
    assert_int_equal(s.us, 20);
    assert_int_equal(s.ownerlen, 3);
    assert_int_equal(s.holderlen, 3);
    assert_int_equal(parse("lw1 hold k 20", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.ownerlen, 0);            /* the old form: no owner */

    /* a wait with owner and holder: also the acquire's waiting end */
    assert_int_equal(parse("lw1 wait lock:a 1500 ok web-1%3A42%2F7 tok%20en", &s, buf,
                           sizeof(buf)), 0);
    assert_int_equal(s.kind, SAMPLE_WAIT);
    assert_int_equal(s.us, 1500);
    assert_int_equal(s.outcome, SAMPLE_OK);
    assert_memory_equal(s.key, "lock:a", 6);
    assert_int_equal(s.ownerlen, 10);
    assert_memory_equal(s.owner, "web-1:42/7", 10);
    assert_int_equal(s.holderlen, 6);
    assert_memory_equal(s.holder, "tok en", 6);
    assert_int_equal(parse("lw1 wait k 3 timeout o -", &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.outcome, SAMPLE_TIMEOUT);
    assert_int_equal(s.ownerlen, 1);
    assert_int_equal(s.holderlen, 0);           /* "-": not known */
}

static void
event_lines_malformed(void **state)
{
    static const char *const bad[] = {
        "lw1 waiting k o h",                    /* 5 fields */
        "lw1 waiting k o h start x",            /* 7 fields */
        "lw1 waiting k o h begin",              /* unknown phase */
        "lw1 waiting k o h START",              /* case */
        "lw1 waiting k - h start",              /* index 4: valid, see below */
        "lw1 waiting k %zz h start",            /* bad escape in owner */
        "lw1 waiting k o %zz start",            /* bad escape in holder */
        "lw1 waiting k %00 h start x",
        "lw1 lost k o h 5 - gone",              /* unknown reason */
        "lw1 lost k o h 5 -1 expired",          /* signed overrun */
        "lw1 lost k o h - 5 expired",           /* held must be known */
        "lw1 lost k o h 5 5",                   /* 7 fields */
        "lw1 lost k o h 5 5 expired x",         /* 9 fields */
        "lw1 lost k o h 9007199254740993 0 expired",    /* held above 2^53 */
        "lw1 hold k 20 own",                    /* 5-field hold */
        "lw1 hold k 20 own hol x",              /* 7-field hold */
        "lw1 hold k 20 %zz hol",
        "lw1 wait k 1 ok own",                  /* 6-field wait */
        "lw1 wait k 1 ok own hol x",            /* 8-field wait */
        "lw1 wait k 1 ok %zz hol",
        "lw1 wait k 1 ok own %zz",
        "lw1 mac 00000000000000000000000000000000 1767225600",  /* not first: a sample line */
        "lw1 Waiting k o h start",
    };
    struct sample s;
    char buf[512];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (i == 4)
            continue;   /* an owner "-" is just the byte "-": valid, checked below */
        if (parse(bad[i], &s, buf, sizeof(buf)) != -1)
            fail_msg("accepted: %s", bad[i]);
    }
    assert_int_equal(parse(bad[4], &s, buf, sizeof(buf)), 0);
    assert_int_equal(s.ownerlen, 1);
}

static void
event_field_limits(void **state)
{
    struct sample s;
    char line[2048], *p;
    size_t n;

    (void)state;
    /* owner: 256 bytes decoded is the most; escapes count decoded */
    for (n = 256; n <= 257; n++) {
        p = line + snprintf(line, sizeof(line), "lw1 waiting k ");
        for (size_t i = 0; i < n; i++)
            p += snprintf(p, 4, "%%41");
        snprintf(p, 16, " h start");
        assert_int_equal(samples_parse_line(line, strlen(line), &s), n == 256 ? 0 : -1);
    }
    /* holder: 512 */
    for (n = 512; n <= 513; n++) {
        p = line + snprintf(line, sizeof(line), "lw1 waiting k o ");
        memset(p, 'h', n);
        snprintf(p + n, 16, " start");
        assert_int_equal(samples_parse_line(line, strlen(line), &s), n == 512 ? 0 : -1);
        if (n == 512)
            assert_int_equal(s.holderlen, 512);
    }
}

/* docs/line-protocol.md "Signed datagrams": the vector every reporter checks. */
#define VEC_KEY  "lockwatch test key: not a secret"
#define VEC_BODY "lw1 waiting lock:order:1001 web-1%3A4242%2F7 " \
                 "lw1:web-1:4242:7:1767225599000:00112233aabbccdd start\n" \
                 "lw1 wait lock:order:1001 1500 ok\n"
#define VEC_MAC  "lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600\n"
#define VEC_TIME 1767225600

static void
mac_test_vector(void **state)
{
    char out[512];
    size_t n, skip = 99;

    (void)state;
    n = sampleauth_sign(VEC_KEY, strlen(VEC_KEY), VEC_BODY, strlen(VEC_BODY), VEC_TIME,
                        out, sizeof(out));
    assert_int_equal(n, strlen(VEC_MAC VEC_BODY));
    assert_memory_equal(out, VEC_MAC VEC_BODY, n);
    assert_int_equal(sampleauth_check(VEC_KEY, strlen(VEC_KEY), out, n, false, VEC_TIME, &skip),
                     SAMPLEAUTH_OK);
    assert_int_equal(skip, strlen(VEC_MAC));
    /* too small a buffer */
    assert_int_equal(sampleauth_sign(VEC_KEY, 32, VEC_BODY, strlen(VEC_BODY), VEC_TIME, out, 60),
                     0);
}

static enum sampleauth_verdict
check(const char *dgram, int64_t now, size_t *skip)
{
    return sampleauth_check(VEC_KEY, strlen(VEC_KEY), dgram, strlen(dgram), false, now, skip);
}

static void
mac_refusals(void **state)
{
    char d[512];
    size_t skip;

    (void)state;
    /* the window: 60 s either way */
    assert_int_equal(check(VEC_MAC VEC_BODY, VEC_TIME + 60, &skip), SAMPLEAUTH_OK);
    assert_int_equal(check(VEC_MAC VEC_BODY, VEC_TIME - 60, &skip), SAMPLEAUTH_OK);
    assert_int_equal(check(VEC_MAC VEC_BODY, VEC_TIME + 61, &skip), SAMPLEAUTH_STALE);
    assert_int_equal(check(VEC_MAC VEC_BODY, VEC_TIME - 61, &skip), SAMPLEAUTH_STALE);
    /* no mac line at all, or not first */
    assert_int_equal(check(VEC_BODY, VEC_TIME, &skip), SAMPLEAUTH_UNSIGNED);
    assert_int_equal(check("lw1 wait k 1 ok\n" VEC_MAC, VEC_TIME, &skip), SAMPLEAUTH_UNSIGNED);
    assert_int_equal(check("", VEC_TIME, &skip), SAMPLEAUTH_UNSIGNED);
    /* one body byte changed, one mac digit changed, the time changed */
    snprintf(d, sizeof(d), "%s%s", VEC_MAC, VEC_BODY);
    d[strlen(d) - 3] = 'x';
    assert_int_equal(check(d, VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad8 1767225600\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225601\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);
    /* malformed mac lines */
    assert_int_equal(check("lw1 mac 9A6B14256927F71A491D5D3289777AD9 1767225600\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);       /* upper case */
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600\r\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);       /* \r\n */
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad9  1767225600\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777a 1767225600\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);       /* short mac */
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad9 01767225600\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);       /* leading zero */
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad9\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);       /* no time */
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600", VEC_TIME,
                           &skip), SAMPLEAUTH_BAD_MAC);                 /* no newline */
    assert_int_equal(check("lw1 mac 9a6b14256927f71a491d5d3289777ad9 1767225600 x\n" VEC_BODY,
                           VEC_TIME, &skip), SAMPLEAUTH_BAD_MAC);
    /* a different key */
    assert_int_equal(sampleauth_check("another key, also 32 bytes long", 31, VEC_MAC VEC_BODY,
                                      strlen(VEC_MAC VEC_BODY), false, VEC_TIME, &skip),
                     SAMPLEAUTH_BAD_MAC);
    /* cut by the kernel: cannot be checked */
    assert_int_equal(sampleauth_check(VEC_KEY, strlen(VEC_KEY), VEC_MAC VEC_BODY,
                                      strlen(VEC_MAC VEC_BODY), true, VEC_TIME, &skip),
                     SAMPLEAUTH_TRUNCATED);
    assert_string_equal(sampleauth_reason_str(SAMPLEAUTH_UNSIGNED), "unsigned");
    assert_string_equal(sampleauth_reason_str(SAMPLEAUTH_BAD_MAC), "bad_mac");
    assert_string_equal(sampleauth_reason_str(SAMPLEAUTH_STALE), "stale");
    assert_string_equal(sampleauth_reason_str(SAMPLEAUTH_TRUNCATED), "truncated");
}

static void
mac_without_key(void **state)
{
    size_t skip = 99;

    (void)state;
    /* a leading mac line is skipped unread, even a wrong one */
    assert_int_equal(sampleauth_check("", 0, "lw1 mac junk\nlw1 wait k 1 ok\n", 29, false, 0,
                                      &skip), SAMPLEAUTH_OK);
    assert_int_equal(skip, 13);
    assert_int_equal(sampleauth_check("", 0, "lw1 wait k 1 ok\n", 16, false, 0, &skip),
                     SAMPLEAUTH_OK);
    assert_int_equal(skip, 0);
    assert_int_equal(sampleauth_check("", 0, "lw1 mac x", 9, true, 0, &skip), SAMPLEAUTH_OK);
    assert_int_equal(skip, 9);
}

static struct sample
ev(const char *owner, const char *key, const char *holder, bool start)
{
    struct sample s = { .kind = SAMPLE_WAITING, .key = key, .keylen = strlen(key),
                        .owner = owner, .ownerlen = strlen(owner), .holder = holder,
                        .holderlen = holder != NULL ? strlen(holder) : 0, .start = start };

    return s;
}

struct seen {
    size_t n;
    char last_owner[64];
    bool last_waiting;
};

static void
count_pair(const struct waiting_pair *p, void *arg)
{
    struct seen *s = arg;

    s->n++;
    snprintf(s->last_owner, sizeof(s->last_owner), "%.*s", (int)p->ownerlen, p->owner);
    s->last_waiting = p->waiting;
}

/* Each refusal says why (the agent's log names it), and a datagram's first
 * malformed line is found again by its offset. */
static void
refusals_say_why(void **state)
{
    static const struct {
        const char *line, *why;
    } cases[] = {
        { "lw1 wait lock:x 12.5 ok", "a duration that is not whole microseconds" },
        { "lw1 wait lock:x 12 maybe", "an outcome other than ok, timeout or error" },
        { "lw2 wait lock:x 12 ok", "a first field other than lw1" },
        { "lw1 grab lock:x 12 ok", "a verb other than wait, hold, waiting or lost" },
        { "lw1 hold lock:x 12 o", "a field count the verb does not take" },
        { "lw1 hold lock:x 12 ", "a trailing space" },
        { "lw1 hold lock:x  12", "an empty field" },
        { "lw1 waiting lock:x o h begin", "a phase other than start" },
        { "lw1 lost lock:x o h 1 - gone", "a lost reason other than renewal or expired" },
        { "lw1 hold lock:%zz 12", "a key that is not percent-encoding" },
        { "hello", "a first field other than lw1" },
    };
    struct sample out[4];
    char buf[128];
    uint64_t lines, invalid;
    size_t i, off, len;
    const char *why;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(buf, sizeof(buf), "%s", cases[i].line);
        assert_int_equal(samples_parse_line(buf, strlen(buf), &out[0]), -1);
        if (strstr(samples_why(), cases[i].why) != samples_why()) {
            print_error("%s: %s\n", cases[i].line, samples_why());
            fail();
        }
    }
    snprintf(buf, sizeof(buf), "lw1 hold lock:a 1\nlw1 hold lock:b x\nbad\n");
    assert_int_equal(samples_parse_datagram(buf, strlen(buf), false, out, 4, &lines, &invalid),
                     1);
    assert_int_equal(invalid, 2);
    why = samples_first_invalid(&off, &len);
    assert_non_null(why);
    assert_int_equal(off, 18);
    assert_int_equal(len, 17);
    assert_memory_equal(buf + off, "lw1 hold lock:b x", len);
    snprintf(buf, sizeof(buf), "lw1 hold lock:a 1\n");
    samples_parse_datagram(buf, strlen(buf), false, out, 4, &lines, &invalid);
    assert_null(samples_first_invalid(&off, &len));
}

static int pair_state(const struct waiting_table *t, const char *owner, const char *key);

static void
waiting_table(void **state)
{
    struct waiting_table *t = waiting_new();
    struct sample s;
    struct seen seen;
    char owner[32];
    size_t i;

    (void)state;
    assert_non_null(t);
    s = ev("a/1", "lock:x", "tok1", true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 1), 0);
    s = ev("b/2", "lock:x", NULL, true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 2), 0);
    assert_int_equal(waiting_count(t), 2);
    assert_int_equal(waiting_waiting(t), 2);
    /* a's wait ends with the lock: still a pair, no longer waiting; its
     * holder id grows in place */
    s = ev("a/1", "lock:x", "a-much-longer-holder-token", false);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 3), 0);
    assert_int_equal(waiting_count(t), 2);
    assert_int_equal(waiting_waiting(t), 1);
    memset(&seen, 0, sizeof(seen));
    waiting_each(t, count_pair, &seen);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.last_owner, "a/1");        /* most recent last */
    assert_false(seen.last_waiting);
    /* a 6-field hold ends the pair; a 4-field one and a wait change nothing */
    s = ev("a/1", "lock:x", "tok1", false);
    s.kind = SAMPLE_HOLD;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 4), 0);
    assert_int_equal(waiting_count(t), 1);
    s.ownerlen = 0;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 4), 0);
    s = ev("b/2", "lock:x", NULL, false);
    s.kind = SAMPLE_WAIT;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 4), 0);
    assert_int_equal(waiting_count(t), 1);
    assert_int_equal(waiting_waiting(t), 1);
    /* an end that did not acquire removes its pair, and makes none: a busy
     * try-lock's timeouts filled the table (a red-team trial: they evicted
     * the pairs of a live deadlock) */
    s = ev("c/3", "lock:z", "tok3", true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 5), 0);
    assert_int_equal(waiting_count(t), 2);
    assert_int_equal(waiting_waiting(t), 2);
    s = ev("c/3", "lock:z", "tok3", false);
    s.outcome = SAMPLE_TIMEOUT;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 6), 0);
    assert_int_equal(waiting_count(t), 1);
    assert_int_equal(waiting_waiting(t), 1);
    s = ev("c/4", "lock:z", NULL, false);
    s.outcome = SAMPLE_ERROR;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 6), 0);
    assert_int_equal(waiting_count(t), 1);
    assert_int_equal(pair_state(t, "c/3", "lock:z"), -1);
    /* bounded: the oldest pair goes, counted */
    for (i = 0; i < WAITING_MAX + 10; i++) {
        snprintf(owner, sizeof(owner), "o/%zu", i);
        s = ev(owner, "lock:y", "h", true);
        assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, (int64_t)(10 + i)), 0);
    }
    assert_int_equal(waiting_count(t), WAITING_MAX);
    assert_int_equal(waiting_evicted(t), 11);           /* b/2 and o/0..o/9 */
    assert_int_equal(waiting_waiting(t), WAITING_MAX);
    assert_true(waiting_bytes(t) > sizeof(void *) * WAITING_MAX);
    waiting_free(t);
    waiting_free(NULL);
}


/* Does t have (owner, key), and is it waiting?  -1: no such pair. */
struct find_arg {
    const char *owner, *key;
    int found;
};

static void
find_pair(const struct waiting_pair *p, void *arg)
{
    struct find_arg *f = arg;

    if (p->ownerlen == strlen(f->owner) && memcmp(p->owner, f->owner, p->ownerlen) == 0 &&
        p->keylen == strlen(f->key) && memcmp(p->key, f->key, p->keylen) == 0)
        f->found = p->waiting;
}

static int
pair_state(const struct waiting_table *t, const char *owner, const char *key)
{
    struct find_arg f = { owner, key, -1 };

    waiting_each(t, find_pair, &f);
    return f.found;
}

/* A trial: one sender's hold line read before its own acquire's (the
 * datagrams reordered) left the owner a holder for good, and closed a
 * false deadlock.  The acquire of a holding already released (same owner,
 * key and holder id, within 5 s) is ignored; a release found in order
 * sets nothing aside, so the same holder id taking the key again at once
 * (Redisson's <uuid>:<thread>) is a holding. */
static void
waiting_release_before_its_acquire(void **state)
{
    struct waiting_table *t = waiting_new();
    struct sample s;

    (void)state;
    s = ev("r1/1", "app:q:1", "tok-1", false);
    s.kind = SAMPLE_HOLD;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 1000), 0);
    s = ev("r1/1", "app:q:1", "tok-1", false);          /* its acquire, late */
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 1001), 0);
    assert_int_equal(pair_state(t, "r1/1", "app:q:1"), -1);
    assert_int_equal(waiting_late_acquires(t), 1);
    /* used up: the next acquire of that id is a holding */
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 1002), 0);
    assert_int_equal(pair_state(t, "r1/1", "app:q:1"), 0);
    /* in order: released, then taken again by the same id at once */
    s.kind = SAMPLE_HOLD;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 1003), 0);
    s.kind = SAMPLE_WAITING;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 1004), 0);
    assert_int_equal(pair_state(t, "r1/1", "app:q:1"), 0);
    /* another holder id, or over 5 s later: a holding */
    s = ev("r2/1", "app:q:2", "tok-2", false);
    s.kind = SAMPLE_HOLD;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 2000), 0);
    s = ev("r2/1", "app:q:2", "tok-3", false);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 2001), 0);
    assert_int_equal(pair_state(t, "r2/1", "app:q:2"), 0);
    s = ev("r3/1", "app:q:3", "tok-4", false);
    s.kind = SAMPLE_HOLD;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 3000), 0);
    s.kind = SAMPLE_WAITING;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 8001), 0);
    assert_int_equal(pair_state(t, "r3/1", "app:q:3"), 0);
    assert_int_equal(waiting_late_acquires(t), 1);
    waiting_free(t);
}

/* A start whose process died (no end line) is ended by an acquire of its
 * owner (the next process of that name) on another key that began a
 * second or more after it, with another holder id; never by one begun
 * with it (node-redlock's multi-resource acquire), by one of the same
 * holder id (a Redisson thread's pending lockAsync) or by one that failed. */
static void
waiting_start_superseded(void **state)
{
    struct waiting_table *t = waiting_new();
    struct sample s;

    (void)state;
    assert_non_null(t);
    /* the trial: pod-0/worker-1 dies waiting for y; 5 s later its name
     * takes x */
    s = ev("pod-0/worker-1", "lock:e:y", "tokOLD", true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 1000), 0);
    assert_int_equal(pair_state(t, "pod-0/worker-1", "lock:e:y"), 1);
    s = ev("pod-0/worker-1", "lock:e:x", "tokNEW", false);
    s.outcome = SAMPLE_TIMEOUT;             /* a failed acquire ends nothing */
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 6000), 0);
    assert_int_equal(pair_state(t, "pod-0/worker-1", "lock:e:y"), 1);
    s.outcome = SAMPLE_OK;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 6000), 0);
    assert_int_equal(pair_state(t, "pod-0/worker-1", "lock:e:y"), -1);
    assert_int_equal(pair_state(t, "pod-0/worker-1", "lock:e:x"), 0);
    assert_int_equal(waiting_superseded(t), 1);
    assert_int_equal(waiting_waiting(t), 0);
    /* node-redlock's multi-resource acquire: a start for each key, then an
     * ok for each, one holder id; the oks' wait began with the starts */
    s = ev("n/1", "lock:m:a", "v1", true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 10000), 0);
    s = ev("n/1", "lock:m:b", "v1", true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 10000), 0);
    s = ev("n/1", "lock:m:a", "v1", false);
    s.us = 3000000;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 13000), 0);
    assert_int_equal(pair_state(t, "n/1", "lock:m:b"), 1);
    /* ... nor with its starts' holder id unknown ("-"): its ok began then */
    s = ev("n/2", "lock:m:c", NULL, true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 10000), 0);
    s = ev("n/2", "lock:m:d", "v2", false);
    s.us = 3000000;
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 13000), 0);
    assert_int_equal(pair_state(t, "n/2", "lock:m:c"), 1);
    /* a Redisson thread: lockAsync on k2 still pending, lock() on k1 later:
     * one holder id "<uuid>:<tid>" */
    s = ev("jvm/17", "lock:r:k2", "u-1:17", true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 10000), 0);
    s = ev("jvm/17", "lock:r:k1", "u-1:17", false);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 20000), 0);
    assert_int_equal(pair_state(t, "jvm/17", "lock:r:k2"), 1);
    /* ... but a new process's thread (another uuid) ends it */
    s = ev("jvm/17", "lock:r:k1", "u-2:17", false);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 21000), 0);
    assert_int_equal(pair_state(t, "jvm/17", "lock:r:k2"), -1);
    /* within a second: spared (lines of one moment may come in any order) */
    s = ev("w/1", "lock:q:a", "t1", true);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 30000), 0);
    s = ev("w/1", "lock:q:b", "t2", false);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 30900), 0);
    assert_int_equal(pair_state(t, "w/1", "lock:q:a"), 1);
    /* another owner's acquire ends nothing */
    s = ev("w/2", "lock:q:c", "t3", false);
    assert_int_equal(waiting_note(t, &s, WAITING_SOURCE_NONE, 40000), 0);
    assert_int_equal(pair_state(t, "w/1", "lock:q:a"), 1);
    assert_int_equal(waiting_superseded(t), 2);
    waiting_free(t);
}

/* A full table gives up the oldest pair of the source that holds the
 * most: a flood from one source evicts its own oldest, never another
 * source's live wait. */
static void
waiting_source_share(void **state)
{
    struct waiting_table *t = waiting_new();
    struct sample s;
    char owner[32];
    size_t i;

    (void)state;
    assert_non_null(t);
    /* source 1: a real cycle's two waits and their holdings */
    s = ev("a/1", "lock:y:a", "ta", false);
    assert_int_equal(waiting_note(t, &s, 1, 1), 0);
    s = ev("b/1", "lock:y:b", "tb", false);
    assert_int_equal(waiting_note(t, &s, 1, 1), 0);
    s = ev("a/1", "lock:y:b", NULL, true);
    assert_int_equal(waiting_note(t, &s, 1, 2), 0);
    s = ev("b/1", "lock:y:a", NULL, true);
    assert_int_equal(waiting_note(t, &s, 1, 2), 0);
    /* source 2 floods 4,200 starts: it fills the table, then evicts its own */
    for (i = 0; i < 4200; i++) {
        snprintf(owner, sizeof(owner), "F/%zu", i);
        s = ev(owner, "job:flood", NULL, true);
        assert_int_equal(waiting_note(t, &s, 2, (int64_t)(10 + i)), 0);
    }
    assert_int_equal(waiting_count(t), WAITING_MAX);
    assert_int_equal(waiting_evicted(t), 4200 - (WAITING_MAX - 4));
    assert_int_equal(pair_state(t, "a/1", "lock:y:b"), 1);
    assert_int_equal(pair_state(t, "b/1", "lock:y:a"), 1);
    assert_int_equal(pair_state(t, "a/1", "lock:y:a"), 0);
    assert_int_equal(pair_state(t, "F/0", "job:flood"), -1);        /* its own oldest */
    assert_int_equal(pair_state(t, "F/4199", "job:flood"), 1);
    /* sources 3, 4, 5: each new pair of the full table takes the place of
     * a pair of the source with the most (2, then any of the biggest),
     * never source 1's */
    for (i = 0; i < 3 * 1024; i++) {
        snprintf(owner, sizeof(owner), "G/%zu", i);
        s = ev(owner, "job:g", NULL, true);
        assert_int_equal(waiting_note(t, &s, 3 + (unsigned)(i % 3), (int64_t)(10000 + i)), 0);
    }
    assert_int_equal(waiting_count(t), WAITING_MAX);
    assert_int_equal(pair_state(t, "a/1", "lock:y:b"), 1);
    assert_int_equal(pair_state(t, "b/1", "lock:y:a"), 1);
    /* a line with no source, and a number past the table (none) */
    s = ev("n/1", "lock:n", NULL, true);
    assert_int_equal(waiting_note(t, &s, 100000, 20000), 0);
    assert_int_equal(pair_state(t, "n/1", "lock:n"), 1);
    waiting_free(t);
}

/* One source alone may use the whole table: 300 threads of one host each
 * holding or waiting on 4 locks are 1,200 live pairs, all kept (a deadlock
 * among the oldest is still seen). */
static void
waiting_one_source_whole_table(void **state)
{
    struct waiting_table *t = waiting_new();
    struct sample s;
    char owner[32], key[32];
    size_t i;
    unsigned src;
    static const unsigned char lo[16] = { 127, 0, 0, 1 };

    (void)state;
    assert_non_null(t);
    src = waiting_source(t, 2, lo);
    assert_true(src < WAITING_SOURCE_SHARED);
    for (i = 0; i < 1200; i++) {
        snprintf(owner, sizeof(owner), "host/%zu", i / 4);
        snprintf(key, sizeof(key), "lock:k:%zu", i);
        s = ev(owner, key, "h", i % 4 == 3);
        assert_int_equal(waiting_note(t, &s, src, (int64_t)(1 + i)), 0);
    }
    assert_int_equal(waiting_count(t), 1200);
    assert_int_equal(waiting_evicted(t), 0);
    assert_int_equal(pair_state(t, "host/0", "lock:k:0"), 0);  /* the oldest holding */
    assert_int_equal(pair_state(t, "host/0", "lock:k:3"), 1);
    /* it fills the table, then evicts its own oldest */
    for (i = 1200; i < WAITING_MAX + 10; i++) {
        snprintf(owner, sizeof(owner), "host/%zu", i / 4);
        snprintf(key, sizeof(key), "lock:k:%zu", i);
        s = ev(owner, key, "h", false);
        assert_int_equal(waiting_note(t, &s, src, (int64_t)(1 + i)), 0);
    }
    assert_int_equal(waiting_count(t), WAITING_MAX);
    assert_int_equal(waiting_evicted(t), 10);
    assert_int_equal(pair_state(t, "host/0", "lock:k:0"), -1);
    waiting_free(t);
}

/* An address keeps its source number while it has pairs; the number of a
 * source whose pairs are all gone goes to the next new address; only
 * when every number has pairs does a new address share one. */
static void
waiting_sources_age_out(void **state)
{
    struct waiting_table *t = waiting_new();
    struct sample s;
    unsigned char a[16] = { 10, 0, 0, 0 };
    char owner[32];
    unsigned n, first, again;
    size_t i;

    (void)state;
    assert_non_null(t);
    /* 300 addresses one after the other: each takes and releases a lock */
    for (i = 0; i < 300; i++) {
        a[2] = (unsigned char)(i >> 8);
        a[3] = (unsigned char)i;
        n = waiting_source(t, 2, a);
        assert_true(n < WAITING_SOURCE_SHARED);
        assert_int_equal(waiting_source(t, 2, a), n);       /* the same again */
        snprintf(owner, sizeof(owner), "o/%zu", i);
        s = ev(owner, "lock:r", "h", false);
        assert_int_equal(waiting_note(t, &s, n, (int64_t)i), 0);
        s.kind = SAMPLE_HOLD;     /* a 6-field hold: released */
        assert_int_equal(waiting_note(t, &s, n, (int64_t)i), 0);
    }
    assert_int_equal(waiting_count(t), 0);
    assert_int_equal(waiting_sources_reused(t), 300 - WAITING_SOURCE_SLOTS);
    assert_int_equal(waiting_sources_shared(t), 0);
    /* 256 addresses that keep a pair each use every number */
    for (i = 0; i < WAITING_SOURCE_SLOTS; i++) {
        a[1] = 1;
        a[2] = (unsigned char)(i >> 8);
        a[3] = (unsigned char)i;
        n = waiting_source(t, 2, a);
        assert_true(n < WAITING_SOURCE_SHARED);
        snprintf(owner, sizeof(owner), "k/%zu", i);
        s = ev(owner, "lock:r", NULL, true);
        assert_int_equal(waiting_note(t, &s, n, 1000), 0);
    }
    a[1] = 1;
    a[2] = 0;
    a[3] = 0;
    first = waiting_source(t, 2, a);
    a[1] = 2;
    assert_int_equal(waiting_source(t, 2, a), WAITING_SOURCE_SHARED);
    assert_int_equal(waiting_sources_shared(t), 1);
    /* the first of them still has its number */
    a[1] = 1;
    again = waiting_source(t, 2, a);
    assert_int_equal(again, first);
    waiting_free(t);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_lines),
        cmocka_unit_test(malformed_lines),
        cmocka_unit_test(refusals_say_why),
        cmocka_unit_test(percent_decoding),
        cmocka_unit_test(every_byte_round_trips),
        cmocka_unit_test(mixed_datagrams),
        cmocka_unit_test(line_endings),
        cmocka_unit_test(truncated_datagram),
        cmocka_unit_test(limits),
        cmocka_unit_test(event_lines),
        cmocka_unit_test(event_lines_malformed),
        cmocka_unit_test(event_field_limits),
        cmocka_unit_test(mac_test_vector),
        cmocka_unit_test(mac_refusals),
        cmocka_unit_test(mac_without_key),
        cmocka_unit_test(waiting_table),
        cmocka_unit_test(waiting_start_superseded),
        cmocka_unit_test(waiting_release_before_its_acquire),
        cmocka_unit_test(waiting_source_share),
        cmocka_unit_test(waiting_one_source_whole_table),
        cmocka_unit_test(waiting_sources_age_out),
    };

    return cmocka_run_group_tests_name("samples", tests, NULL, NULL);
}
