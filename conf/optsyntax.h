/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * optsyntax.h - the text grammars option values are written in, internal
 * to conf/.
 *
 * Pure functions on strings: durations, comma separated lists, host:port,
 * the user info of a URL and a URL with its secrets masked.  They know nothing of option rows, of where
 * a value is stored or of the messages a refusal gets; the value types in
 * optvalue.c call them and turn their results into stored fields and
 * "what is wrong (what is allowed)" text.
 */
#ifndef LOCKWATCH_OPTSYNTAX_H
#define LOCKWATCH_OPTSYNTAX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

/* Why a duration did not parse; each gets its own message. */
enum dur_status { DUR_OK, DUR_SYNTAX, DUR_NEGATIVE, DUR_NO_UNIT, DUR_FRACTION, DUR_RANGE };

/*
 * "250ms", "1.5s", "5m", "1h", "2d", or a bare "0", into milliseconds at
 * *out (set only on DUR_OK).  Exact: a value that is not a whole number of
 * milliseconds is DUR_FRACTION, never rounded.
 */
enum dur_status duration_parse(const char *s, int64_t *out);

/*
 * Split "a, b ,c" into trimmed, malloc'd items (*out, *nout; freed with
 * free_list).  An empty or blank value is an empty list (0 items).
 * Returns 0, -1 on an empty item ("a,,b"), -2 when out of memory; on
 * failure *out is NULL and *nout 0.
 */
int split_list(const char *v, char ***out, size_t *nout);
void free_list(char **items, size_t n);

/*
 * The N bytes at S as "host:port" or "[v6]:port", and with need_port
 * false also "host" and "[v6]" (*port left alone).  The host goes to
 * host[hostlen] without brackets.  Returns 0 or -1 (syntax, a host that
 * does not fit, a port outside 1..65535); nothing is written on -1.
 */
int split_hostport(const char *s, size_t n, char *host, size_t hostlen, int *port,
                   bool need_port);

/* Whether the N bytes at AUTH, the part of a URL between "scheme://" and
 * the path, carry a password in their user info ("user:pw@", ":pw@"). */
bool authority_has_password(const char *auth, size_t n);

/* What url_mask writes in place of a masked part. */
#define URL_MASK "***"

/*
 * Append URL to SB with the parts that may carry a bearer secret
 * replaced by URL_MASK: the user info (https://TOKEN@host/p becomes
 * https://URL_MASK@host/p), the path past its first segment (Slack's
 * /services/T/B/SECRET becomes /services/URL_MASK), the query (?a=b
 * becomes ?URL_MASK) and the fragment (likewise after '#'); a part shorter
 * than URL_MASK becomes as many '*', so the output is never longer than
 * url.  Scheme, host, port and the path's first segment stay, so the
 * output still says where the requests go.  Text that is not
 * a scheme and authority is masked past any '?' or '#' all the same.
 */
void url_mask(const char *url, struct strbuf *sb);

#endif
