/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aclhint.h - a write's permission error for people: which permission the
 * Redis user lacks, which user that is (the target's release_user, or the
 * url's user when it has none) and the key that changes it.
 *
 * Redis says NOPERM for a command or key refused by the caller's ACL, and
 * "ERR The user executing the script can't ..." for one refused inside a
 * script; both are one bounded sentence here, for the guarded release
 * and expire (release.c, lockctl and the HTTP endpoint alike) and for
 * lockctl audit's read of the audit stream.  Pure: no I/O.
 */
#ifndef LOCKWATCH_ACLHINT_H
#define LOCKWATCH_ACLHINT_H

#include <stdbool.h>
#include <stddef.h>

#include "conf/config.h"

#define ACLHINT_DOC "docs/lockctl.md#least-privilege-acl"

/* Is the Redis error reply err (n bytes) a refusal by the ACL? */
bool aclhint_refused(const char *err, size_t n);

/*
 * The sentence after a refusal err (n bytes) of what ("the release
 * script", "lockctl audit") for the user of t (t as config_target_writer()
 * made it: its release_user says whose it is): "the Redis user U
 * (release_user of [target T]) lacks +evalsha and +eval, which the release
 * script needs: give it that (docs/...)", into buf (len bytes, cut when
 * short).
 */
void aclhint_explain(const struct target_conf *t, const char *what, const char *err, size_t n,
                     char *buf, size_t len);
/* When err is a refusal by the ACL: "; " and aclhint_explain()'s sentence
 * appended to the message in buf (NUL-terminated, len bytes). */
void aclhint_add(const struct target_conf *t, const char *what, const char *err, size_t n,
                 char *buf, size_t len);

#endif
