/*
** interrupt.h — a process-wide request to stop the op that is running (Ctrl-C).
**
** Lua sees a signal only between its instructions, so one long op (a 13 s matmul, a sum
** over 2^40 elements of an expanded view) would run to its end. A SIGINT handler
** therefore also calls gl_interrupt_request(); the backends poll gl_interrupted() once
** per chunk of their loops (a relaxed load per ~10^5 elements or per BLAS panel, never
** per element), skip the chunks that remain, and return gl_interrupt_check()'s
** GL_EINTR ("interrupted"). The ops layer releases the half-made output as after any
** failure; inputs are only read, so they are intact, but an in-place op stopped half-way
** has updated part of its receiver (as in NumPy and PyTorch).
**
** The request is taken by the first gl_interrupt_check() that sees it, so one Ctrl-C
** stops one op and makes one error; a host clears a request no op took (one that came
** while Lua code ran) before it starts the next chunk.
*/
#ifndef GL_INTERRUPT_H
#define GL_INTERRUPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "status.h"

/* Elements a CPU loop handles between two polls: a span of the slowest element op
** (float64 pow, or a conversion on a strided view: ~50 ns an element on one core) stays
** near 10 ms, and one load per span costs nothing. A power of two, so spans keep the
** blocks of vectorised loops whole. */
#define GL_POLL_SPAN ((int64_t)1 << 18)

/* The flag itself, read through gl_interrupted(); lock-free, so a handler may set it. */
extern atomic_int gl_interrupt_flag;

/* Asks the running op to stop. Async-signal-safe: call it from a SIGINT handler. */
void gl_interrupt_request(void);

/* Whether a stop was asked for and not taken yet: the poll of the chunked loops (any
** thread; costs one relaxed load). */
static inline bool gl_interrupted(void) {
  return atomic_load_explicit(&gl_interrupt_flag, memory_order_relaxed) != 0;
}

/* Takes a pending request (the flag is clear afterwards); answers whether there was one. */
bool gl_interrupt_clear(void);

/* GL_OK, or GL_EINTR with the message "interrupted" when a stop was asked for (the
** request is taken). The last line of a function whose loops poll: call it on the thread
** that called the backend, after any parallel region (messages are per thread). */
gl_status gl_interrupt_check(void);

#endif
