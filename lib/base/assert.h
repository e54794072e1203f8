/* assert.h — PD_ASSERT(cond): an invariant of the code itself (never a
 * check of input: those return a pd_status). Checked unless NDEBUG is
 * defined, so in the default, debug and sanitizer builds; a failure prints
 * the condition and where it is, then aborts. */
#ifndef PD_ASSERT_H
#define PD_ASSERT_H

#ifdef NDEBUG
#define PD_ASSERT(cond) ((void)0)
#else
#define PD_ASSERT(cond) ((cond) ? (void)0 : pd_assert_fail(#cond, __FILE__, __LINE__, __func__))
#endif

/* Prints "paddle-run: internal error: FILE:LINE: FUNC: PD_ASSERT(COND) failed"
 * to stderr and aborts. */
_Noreturn void pd_assert_fail(const char *cond, const char *file, int line, const char *func);

#endif
