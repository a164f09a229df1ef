/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * confirm.c - the "are you sure?" before lockctl changes a lock.
 *
 * Only a person at a terminal can be asked.  Without one (a pipe, cron, a
 * script) lockctl never guesses: release and expire refuse unless --yes
 * says the caller means it (SPEC "On-call CLI").  The question goes to
 * stderr so that --json output on stdout stays one clean document.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/lockctl.h"

bool
confirm_possible(void)
{
    return isatty(STDIN_FILENO) == 1;
}

bool
confirm_ask(const char *question)
{
    char line[64];
    size_t n;

    fprintf(stderr, "%s [y/N] ", question);
    fflush(stderr);
    if (fgets(line, sizeof(line), stdin) == NULL)
        return false;
    n = strcspn(line, "\r\n");
    line[n] = '\0';
    return strcasecmp(line, "y") == 0 || strcasecmp(line, "yes") == 0;
}
