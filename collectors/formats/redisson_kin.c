/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redisson_kin.c - Redisson objects whose main key is stored like another
 * format's and which only their helper keys tell apart (formats.h,
 * "Helper keys"):
 *
 *   redisson-fair              an RLock hash with a fair-queue or
 *                              fair-timeout helper (a FairLock while it
 *                              has waiters; without any it is "redisson")
 *   redisson-fenced            an RLock hash with its fence-token counter
 *   redisson-permit-semaphore  a string of available permits (decimal)
 *                              with its permit-timeout zset of permits in
 *                              use (RPermitExpirableSemaphore)
 *
 * These rows claim nothing from a value alone; their kin column
 * (formats_impl.h) says which rows and helper kinds make them, and
 * formats_kin() (formats.c) walks it.
 */
#include "collectors/formats/formats_impl.h"

/* A row that no value claims. */
#define KIN_ROW(id)                                                          \
    bool fmt_##id##_claims(const struct raw_lock *raw)                        \
    {                                                                        \
        (void)raw;                                                           \
        return false;                                                        \
    }                                                                        \
    int fmt_##id##_decode(const struct raw_lock *raw, struct lock_view *view) \
    {                                                                        \
        (void)raw;                                                           \
        fmt_view_reset(view);                                                \
        return -1;                                                           \
    }

KIN_ROW(redisson_fair)
KIN_ROW(redisson_fenced)
KIN_ROW(redisson_psem)
