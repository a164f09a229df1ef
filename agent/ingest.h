/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ingest.h - the UDP listener for wait/hold samples ([agent] samples).
 *
 * One thread owns one UDP socket and feeds every datagram it reads into
 * the agent's waitstats.  It never touches a scanner or the HTTP server,
 * and they never wait for it: the only thing it shares is the waitstats
 * mutex, held for one datagram at a time.
 */
#ifndef LOCKWATCH_INGEST_H
#define LOCKWATCH_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "collectors/waits/waitstats.h"

#define INGEST_BATCH    64                  /* datagrams per recvmmsg() */
#define INGEST_RCVBUF   (4 * 1024 * 1024)   /* SO_RCVBUF asked for */

struct ingest;

/*
 * Bind a UDP socket to host:port, raise its receive buffer (the size the
 * kernel granted is logged) and start the thread that reads it into ws,
 * waiting up to batch_wait_ms after each read so that datagrams arriving
 * meanwhile are read together (0: read each as it comes; ingest.c).
 * ws must outlive the ingest (stop it first).  NULL with a message in err
 * when the address cannot be resolved or bound, or on ENOMEM.
 */
struct ingest *ingest_start(struct waitstats *ws, const char *host, int port,
                            int64_t batch_wait_ms, char *err, size_t errlen);

/* A new [samples] batch_wait (a reload); NULL is fine. */
void ingest_set_batch_wait(struct ingest *in, int64_t ms);

/* Stop the thread, close the socket, free everything; NULL is fine.
 * Datagrams still queued in the socket are dropped uncounted. */
void ingest_stop(struct ingest *in);

#endif
