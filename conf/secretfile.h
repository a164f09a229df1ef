/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * secretfile.h - read a password or token, or a PEM file, from its file,
 * internal to conf/ (the FILE and PEM value types in optvalue.c).
 *
 * Ownership: what set stores belongs to the section's struct and is given
 * back with optfile_clear (or secret_free), which wipes it before freeing.
 */
#ifndef LOCKWATCH_SECRETFILE_H
#define LOCKWATCH_SECRETFILE_H

#include <stddef.h>

struct config_option;

/*
 * The FILE and PEM value types (rows of optvalue.c's table): set reads the
 * file named by V (absolute path) and stores the path at o->off, what it
 * holds at o->off2.  FILE: a password or token, one line, trailing
 * newlines dropped, at most 4 KiB, at least o->min bytes when min > 0.  PEM: a certificate, CA bundle or
 * private key, kept whole, at most 1 MiB, with a "-----BEGIN " line.
 * o->holds says what the file holds ("the password") and o->example is a
 * path to suggest, both for messages.  0, or -1 with why set to "what is
 * wrong (what to do)" and nothing changed.  clear wipes and frees both.
 */
int optfile_set_secret(const struct config_option *o, void *base, const char *v,
                       char *why, size_t len);
int optfile_set_pem(const struct config_option *o, void *base, const char *v,
                    char *why, size_t len);
void optfile_clear(const struct config_option *o, void *base);
void optfile_describe_secret(const struct config_option *o, char *buf, size_t len);
void optfile_describe_pem(const struct config_option *o, char *buf, size_t len);

/*
 * Who else may read the secret or key file at path: 1 with "what and what
 * to do" in why when others may read it (world-readable, or
 * group-readable by a group other than the agent's own or "lockwatch":
 * root:lockwatch 0640 is the recommended mode), 0 when only the owner and
 * the agent's group may, -1 when it cannot be looked at now (nothing to
 * say: the load already read it).  After secretfile_service_user(NAME),
 * run as root: 1 too when user NAME could not read it.
 */
int secretfile_exposure(const char *path, char *why, size_t len);

/* This run checks the config for a service that will run as user name
 * (lockwatchd -n: "lockwatch", the systemd unit's User=), not as this
 * process: secretfile_exposure() also says when that user cannot read a
 * file.  NULL (the default): it does not. */
void secretfile_service_user(const char *name);

/* Wipe and free a secret; NULL is fine. */
void secret_free(char *s);

#endif
