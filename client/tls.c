/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.c - TLS to Redis for liblockwatch (lw_options.tls and tls_*).
 *
 * Only with hiredis 1.x and hiredis_ssl (LOCKWATCH_TLS, set by the
 * Makefile); without them lw_connect() with tls set fails with LW_ERR and
 * the reason.  lw_connect() builds one OpenSSL context from the options
 * (CA file and directory, else the system's CAs; the client certificate
 * chain and key; TLS 1.2 or later), so a wrong path fails there and not at
 * the first reconnect; every connection the client opens (command, waiter,
 * watchdog) makes its SSL object from it, sends the server name as SNI
 * (a DNS name) and, with tls_verify, checks the chain and the name
 * (tls_server_name, else host; an IP address against the certificate's IP
 * addresses).  hiredis runs the handshake on that SSL object
 * (redisInitiateSSL) and owns it once the handshake succeeded.  The files
 * are read once, at lw_connect(): a renewed certificate needs a new client.
 */
#include <string.h>

#include "client_impl.h"

#ifdef LOCKWATCH_TLS
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <hiredis_ssl.h>

LW_API int
lw_tls_supported(void)
{
    return 1;
}

static const char *
reason(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

    return r != NULL ? r : "unknown error";
}

lw_status
lwc_tls_setup(lw_client *c, const lw_options *o, lw_error *err)
{
    SSL_CTX *ctx;
    const char *what = NULL, *file = NULL;

    if (!o->tls)
        return LW_OK;
    if ((o->tls_cert_file == NULL) != (o->tls_key_file == NULL))
        return lwc_seterr(err, LW_ERR, "options: a client certificate needs both "
                          "tls_cert_file and tls_key_file");
    ERR_clear_error();
    if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL)
        return lwc_seterr(err, LW_ERR, "lw_connect: cannot create a TLS context: %s",
                          reason());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, o->tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (o->tls_ca_file != NULL || o->tls_ca_dir != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, o->tls_ca_dir) != 1) {
            what = "tls_ca_file/tls_ca_dir";
            file = o->tls_ca_file != NULL ? o->tls_ca_file : o->tls_ca_dir;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        what = "the system's CA certificates";
        file = "";
    }
    if (what == NULL && o->tls_cert_file != NULL) {
        if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1) {
            what = "tls_cert_file";
            file = o->tls_cert_file;
        } else if (SSL_CTX_use_PrivateKey_file(ctx, o->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
                   SSL_CTX_check_private_key(ctx) != 1) {
            what = "tls_key_file";
            file = o->tls_key_file;
        }
    }
    if (what != NULL) {
        lwc_seterr(err, LW_ERR, "options: %s %.128s: %s (give PEM files readable by this "
                   "process)", what, file, reason());
        SSL_CTX_free(ctx);
        return LW_ERR;
    }
    c->tls_ctx = ctx;
    c->tls_verify = o->tls_verify != 0;
    c->tls_name = strdup(o->tls_server_name != NULL ? o->tls_server_name : o->host);
    if (c->tls_name == NULL)
        return lwc_seterr(err, LW_ERR, "lw_connect: out of memory");
    return LW_OK;
}

lw_status
lwc_tls_connect(const lw_client *c, redisContext *ctx, const char *what, lw_error *err)
{
    unsigned char addr[16];
    const char *name = c->tls_name;
    SSL *ssl;
    long vr;
    bool ip;
    int ok;

    if (c->tls_ctx == NULL)
        return LW_OK;           /* no TLS asked for */
    ip = inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
    ERR_clear_error();
    if ((ssl = SSL_new(c->tls_ctx)) == NULL)
        return lwc_seterr(err, LW_ERR, "%s: cannot create a TLS session: %s", what, reason());
    ok = ip || SSL_set_tlsext_host_name(ssl, name) == 1;
    if (ok && c->tls_verify) {
        if (ip) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1;
        } else {
            SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = SSL_set1_host(ssl, name) == 1;
        }
    }
    if (!ok) {
        SSL_free(ssl);
        return lwc_seterr(err, LW_ERR, "%s: cannot set the TLS server name \"%.64s\": %s",
                          what, name, reason());
    }
    if (redisInitiateSSL(ctx, ssl) == REDIS_OK)
        return LW_OK;           /* ctx owns ssl now */
    /* hiredis quotes OpenSSL's reason, "SSL_connect failed: (null)" when
     * OpenSSL queued none: say what that means (a plaintext server never
     * answers a ClientHello with a ServerHello) */
    if (strstr(ctx->errstr, "(null)") != NULL)
        snprintf(ctx->errstr, sizeof(ctx->errstr), "SSL_connect failed: %s",
                 ERR_peek_last_error() != 0 && ERR_reason_error_string(ERR_peek_last_error())
                 ? ERR_reason_error_string(ERR_peek_last_error())
                 : "no TLS answer from the server (a plaintext port, or the server closed "
                   "the connection)");
    vr = SSL_get_verify_result(ssl);
    if (vr != X509_V_OK)
        lwc_seterr(err, LW_ERR, "%s: TLS handshake with Redis at %s:%d failed: certificate "
                   "verify failed: %s (name checked: %.64s; check tls_ca_file and "
                   "tls_server_name)", what, c->host, c->port,
                   X509_verify_cert_error_string(vr), name);
    else
        lwc_seterr(err, LW_ERR, "%s: TLS handshake with Redis at %s:%d failed: %s (is it "
                   "a TLS port? does the server want a client certificate?)", what,
                   c->host, c->port, ctx->errstr[0] ? ctx->errstr : "connection lost");
    SSL_free(ssl);
    return LW_ERR;
}

void
lwc_tls_free(lw_client *c)
{
    SSL_CTX_free(c->tls_ctx);
    c->tls_ctx = NULL;
    free(c->tls_name);
    c->tls_name = NULL;
}

#else /* no TLS in this build */

LW_API int
lw_tls_supported(void)
{
    return 0;
}

lw_status
lwc_tls_setup(lw_client *c, const lw_options *o, lw_error *err)
{
    (void)c;
    if (!o->tls)
        return LW_OK;
    return lwc_seterr(err, LW_ERR, "options: tls is not supported by this build of "
                      "liblockwatch (built without hiredis_ssl: rebuild it against hiredis "
                      "1.x with hiredis_ssl, or reach Redis through a local TLS tunnel)");
}

lw_status
lwc_tls_connect(const lw_client *c, redisContext *ctx, const char *what, lw_error *err)
{
    (void)c;
    (void)ctx;
    (void)what;
    (void)err;
    return LW_OK;
}

void
lwc_tls_free(lw_client *c)
{
    (void)c;
}

#endif
