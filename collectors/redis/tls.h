/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.h - TLS on a freshly connected hiredis context, for a target whose
 * url is rediss:// (conn.c and sentinel.c call it, before any command).
 *
 * Built in only with hiredis 1.x and hiredis_ssl (LOCKWATCH_TLS, set by
 * the Makefile); without them the config loader already refuses
 * rediss://, and redisconn_tls() fails with the same reason.
 *
 * Each connection gets a TLS context made from the target's settings as
 * loaded (the PEM texts read at load time, so a reload picks up renewed
 * certificates): the CAs of tls_ca_file and tls_ca_dir (neither: the
 * system's), the client certificate and key, TLS 1.2 or later, and, with
 * tls_verify on, verification of the chain and of the name: tls_server_name
 * when set, else NAME (the URL's host for standalone and cluster nodes, so
 * a shard is checked against the name the operator wrote, not the address
 * it announces).  A DNS name is also sent as SNI; an IP address is checked
 * against the certificate's IP addresses.  Failures name the address and
 * OpenSSL's reason, e.g.
 *     TLS handshake with 127.0.0.1:6380 failed: certificate verify failed:
 *     certificate has expired (check the server's certificate and tls_ca_file)
 * A failed handshake is never retried in plaintext.
 */
#ifndef LOCKWATCH_REDISTLS_H
#define LOCKWATCH_REDISTLS_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis.h>

#include "conf/config.h"

/* True when this build has TLS. */
bool redisconn_tls_built(void);

/*
 * Run the TLS handshake on c (connected to host:port, with its command
 * timeout set, which bounds the handshake) with t's TLS settings, checking
 * the certificate against NAME unless t->tls_server_name is set.  0, or -1
 * with err set; c must then be freed.
 */
int redisconn_tls(redisContext *c, const struct target_conf *t, const char *host, int port,
                  const char *name, char *err, size_t errlen);

#endif
