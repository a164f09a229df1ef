/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * samples.h - the wait/hold sample line protocol (SPEC "Wait and hold
 * samples"; docs/line-protocol.md is the user-facing description).
 *
 *     lw1 wait <key> <microseconds> <ok|timeout|error> [<owner> <holder>]
 *     lw1 hold <key> <microseconds> [<owner> <holder>]
 *     lw1 waiting <key> <owner> <holder> <start|ok|timeout|error>
 *     lw1 lost <key> <owner> <holder> <held-us> <overrun-us|-> <renewal|expired>
 *
 * One sample per line, several lines per datagram.  Parsing is strict so
 * that a reporter bug shows up as lockwatch_samples_invalid_total rather
 * than as plausible-looking numbers:
 *  - fields are separated by exactly one space; every other byte of a
 *    line must be printable ASCII (0x21..0x7e);
 *  - the version is "lw1", the verb "wait", "hold", "waiting" or "lost",
 *    nothing else (a "mac" line is sampleauth.c's, first line only);
 *  - <key> is percent-encoded (%XX, either hex case; any byte may be
 *    escaped, and bytes below 0x21, above 0x7e and '%' must be) and not
 *    empty once decoded;
 *  - <microseconds> is decimal digits only (no sign, no point, no
 *    exponent), at most 16 of them and at most 2^53 (LW1_US_MAX of
 *    common/lw1.h, the header the client writes its lines with);
 *  - a wait line has 5 or 7 fields, a hold line 4 or 6, a waiting line
 *    6, a lost line 8;
 *  - <owner> and <holder> are percent-encoded as keys are, at most
 *    LW1_OWNER_MAX and LW1_HOLDER_MAX bytes decoded; a bare "-" holder
 *    (and a "-" overrun) means not known;
 *  - a line is at most SAMPLES_LINE_MAX bytes, terminator excluded.
 * Lines end in "\n" or "\r\n"; the last line of a datagram may have no
 * terminator.  Empty lines are skipped and are not samples at all.
 *
 * Keys are decoded in place (a decoded key is never longer than its
 * encoding), so parsing allocates nothing and a parsed sample's key points
 * into the caller's datagram buffer.  Pure code: no locks, no I/O.
 */
#ifndef LOCKWATCH_SAMPLES_H
#define LOCKWATCH_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPLES_DATAGRAM_MAX 8192   /* bytes of a datagram the agent reads */
#define SAMPLES_LINE_MAX     4096   /* bytes of a line, terminator excluded */
/* "lw1 hold k 0\n": no line that parses is shorter. */
#define SAMPLES_LINE_MIN     13
/* Room for every valid line of a datagram of len bytes. */
#define SAMPLES_MAX_PER(len) ((len) / SAMPLES_LINE_MIN + 1)

enum sample_kind {
    SAMPLE_WAIT,
    SAMPLE_HOLD,
    SAMPLE_WAITING,             /* a wait begins (start) or ends (outcome) */
    SAMPLE_LOST                 /* a held lock was found lost */
};

enum sample_lost_reason { SAMPLE_LOST_RENEWAL, SAMPLE_LOST_EXPIRED, SAMPLE_LOST_REASONS };

enum sample_outcome {
    SAMPLE_OK,
    SAMPLE_TIMEOUT,
    SAMPLE_ERROR,
    SAMPLE_OUTCOMES             /* count; hold samples carry SAMPLE_OK */
};

/*
 * A parsed line.  key, owner and holder point at decoded bytes in the
 * caller's buffer, not NUL-terminated.  ownerlen is 0 on a 4-field hold
 * and a 5-field wait; holderlen is 0 there and when the holder was "-".
 * A 7-field wait (with owner and holder) is also that acquire's waiting
 * end line, and counts as both.
 */
struct sample {
    enum sample_kind kind;
    enum sample_outcome outcome;    /* wait, waiting end; OK otherwise */
    uint64_t us;                /* wait, hold; lost: held */
    const char *key;
    size_t keylen;              /* >= 1 */
    const char *owner;
    size_t ownerlen;
    const char *holder;
    size_t holderlen;
    bool start;                 /* waiting: start (else an end, outcome) */
    bool overrun_known;         /* lost: overrun_us is set */
    uint64_t overrun_us;
    enum sample_lost_reason reason;     /* lost */
};

/*
 * Parse one line of len bytes (terminator and any "\r" already removed)
 * in place: on success the decoded key is written over the start of the
 * key field and out points at it.  0, or -1 when the line is malformed
 * (line may then be partly overwritten).
 */
int samples_parse_line(char *line, size_t len, struct sample *out);

/*
 * Parse a datagram of len bytes in place.  Valid samples go to out (room
 * for outcap; SAMPLES_MAX_PER(len) is always enough, lines beyond outcap
 * count as invalid), their number is returned, and *lines and *invalid
 * get the number of (non-empty) lines seen and of malformed ones, so
 * *lines == return value + *invalid.
 *
 * truncated: the datagram was longer than the buffer it arrived in
 * (MSG_TRUNC).  Then only the lines whose terminator arrived count, and
 * the cut part (the bytes after the last "\n", and whatever the kernel
 * discarded) counts as one line, invalid: a sample cut in the middle of
 * its number would otherwise parse as a smaller, wrong value.
 */
size_t samples_parse_datagram(char *buf, size_t len, bool truncated,
                              struct sample *out, size_t outcap,
                              uint64_t *lines, uint64_t *invalid);

/* Why the calling thread's last samples_parse_line() returned -1 (a
 * static string: "an outcome other than ok, timeout or error", ...). */
const char *samples_why(void);

/* The first malformed line of the calling thread's last
 * samples_parse_datagram(): why (as samples_why()), with its offset and
 * length in that buffer (its bytes as they arrived, but for a key field
 * that failed to decode); NULL when every line parsed. */
const char *samples_first_invalid(size_t *off, size_t *len);

/* "ok", "timeout", "error" (the protocol's and the metrics' spelling). */
const char *sample_outcome_str(enum sample_outcome o);
/* "renewal", "expired". */
const char *sample_lost_reason_str(enum sample_lost_reason r);

#endif
