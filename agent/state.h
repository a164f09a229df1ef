/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state.h - [samples] state_file: the waiting table written every
 * WAITSTATE_SAVE_MS and at stop, read back at start
 * (collectors/waits/waitstate.h).  Main thread only.
 */
#ifndef LOCKWATCH_AGENT_STATE_H
#define LOCKWATCH_AGENT_STATE_H

#include "agent/agent.h"

/* Read the file back into the waiting table, before samples come in;
 * what cannot be read is said, and the table starts empty. */
void agent_state_load(struct agent *a);

/* Write the waiting table to the file; a failure is said once, until a
 * write works again.  A file there that holds something else is never
 * written (said once). */
void agent_state_save(struct agent *a);

/* What the two keep between calls. */
void agent_state_free(struct agent *a);

#endif
