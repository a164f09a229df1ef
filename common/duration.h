/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * duration.h - the one way lockwatch writes a duration for people: alert
 * texts, the log, the status page and lockctl's tables all read the same,
 * so what on-call pastes from one matches the other.
 */
#ifndef LOCKWATCH_DURATION_H
#define LOCKWATCH_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* ms (>= 0) as "850ms", "42s", "5m03s", "2h01m", "3d04h": the two largest
 * units, the second zero-padded, cut down to the unit shown, no blank (a
 * table cell, a word in a sentence).  A negative ms writes "0ms"; callers
 * that mean "unknown" by it say so themselves. */
void duration_format(int64_t ms, char *buf, size_t len);

#endif
