/*
** interrupt.c — the stop request behind gl_interrupted() (see interrupt.h).
*/
#include "interrupt.h"

atomic_int gl_interrupt_flag = 0;

void gl_interrupt_request(void) {
  atomic_store_explicit(&gl_interrupt_flag, 1, memory_order_relaxed);
}

bool gl_interrupt_clear(void) {
  return atomic_exchange_explicit(&gl_interrupt_flag, 0, memory_order_relaxed) != 0;
}

gl_status gl_interrupt_check(void) {
  if (!gl_interrupted() || !gl_interrupt_clear()) return GL_OK;
  return gl_fail(GL_EINTR, "interrupted");
}
