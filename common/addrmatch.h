/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * addrmatch.h - do two getaddrinfo() answers share an address?
 *
 * The config's reload (is a target's new URL the same server?) and lockctl
 * (does the agent watch the server lockctl reads?) both ask it of two
 * host names, each resolving them its own way.
 */
#ifndef LOCKWATCH_ADDRMATCH_H
#define LOCKWATCH_ADDRMATCH_H

#include <stdbool.h>
#include <netdb.h>

/* True when an address of list a equals one of list b (family, port and
 * address alike); NULL lists share none. */
bool addrinfo_meet(const struct addrinfo *a, const struct addrinfo *b);

#endif
