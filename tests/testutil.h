/* testutil.h: helpers shared by the Check unit tests. */
#ifndef TS_TESTUTIL_H
#define TS_TESTUTIL_H

#include <check.h>
#include <stddef.h>

/* Write text to a fresh temporary file; returns its path (static buffer
 * reused per call slot: slot 0..7). */
const char *tu_tmpfile(int slot, const char *suffix, const char *text);

/* Run the suite with CK_NORMAL output and return the process exit status. */
int tu_run(Suite *s);

/* Absolute path of a file in the source tree (static buffer per slot). */
const char *tu_src(int slot, const char *rel);

#endif
