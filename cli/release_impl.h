/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * release_impl.h - what release.c and releaseargs.c share: the change a
 * lockctl release or expire asks for, as its command line gives it.
 */
#ifndef LOCKWATCH_CLI_RELEASE_IMPL_H
#define LOCKWATCH_CLI_RELEASE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/lockctl.h"
#include "collectors/release/release.h"

#define REASON_MAX 512          /* bytes of --reason kept in the audit */

struct change {
    enum release_action action;
    const char *cmd;            /* "release" / "expire" */
    char *key, *holder;
    size_t keylen, holderlen;
    bool escaped, yes, dry_run, if_leaked;
    int64_t older_ms, ttl_ms;
    const char *reason;
    const char *age_from;       /* where the known age passed to the script
                                 * came from (an age_source: "agent",
                                 * "acquired", "idletime"); NULL: none */
    int64_t agent_ms;           /* the agent's age of the holder; 0: none */
    bool agent_lease_moved;     /* the lease lockctl read is not the agent's */
    bool agent_answered;        /* the agent answered: a value's claimed time
                                 * is not taken over its sight */
    bool agent_renewed;         /* the agent saw its holder renew it */
    bool agent_dated;           /* the agent dates this holder (its first
                                 * sight): the value's claimed time is not
                                 * taken over it */
};

/* Parse release's or expire's arguments into ch (ch->action and ch->cmd
 * set by the caller): LOCKCTL_DONE; -1 after --help (printed); else the
 * exit code, the error said. */
int release_parse(struct lockctl *lc, struct change *ch, int argc, char **argv);

#endif
