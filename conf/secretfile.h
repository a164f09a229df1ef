/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * secretfile.h - read a password or token from its file, internal to
 * conf/ (the FILE value type in optvalue.c).
 *
 * Ownership: a secret from secret_file_read is the caller's and is given
 * back with secret_free, which wipes it before freeing.
 */
#ifndef LOCKWATCH_SECRETFILE_H
#define LOCKWATCH_SECRETFILE_H

#include <stddef.h>

/*
 * Read the secret in PATH (absolute) into *secret.  HOLDS says what the
 * file holds ("the password") and EXAMPLE is a path to suggest, both for
 * messages.  Returns 0, or -1 with why set to "what is wrong (what to
 * do)" and *secret untouched.
 */
int secret_file_read(const char *path, const char *holds, const char *example,
                     char **secret, char *why, size_t whylen);

/* Wipe and free a secret; NULL is fine. */
void secret_free(char *s);

#endif
