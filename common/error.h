/* error.h: error values and one-line user-facing messages.
 *
 * Functions return 0 on success or a negative TS_E* code and, for user
 * errors, fill a struct ts_error with one line that names the file, line,
 * column and JSON path where there is one (git's error() style: lower case,
 * subject quoted). Programmer errors are TS_BUG assertions, never user
 * errors. The CLI maps codes to exit status: TS_EINPUT/TS_EUSAGE -> 2,
 * TS_EINFEASIBLE -> 1. */
#ifndef TS_ERROR_H
#define TS_ERROR_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum {
	TS_OK = 0,
	TS_EINPUT = -2,      /* bad file content or value: exit 2 */
	TS_EUSAGE = -3,      /* bad command line: exit 2 */
	TS_ENOMEM = -4,      /* allocation failed */
	TS_EIO = -5,         /* file system error (open, write, rename) */
	TS_EINFEASIBLE = -6, /* input valid, but the plan cannot run: exit 1 */
	TS_EUNSUPPORTED = -7 /* feature not available in this build: exit 2 */
};

#define TS_ERROR_MSG_MAX 512

struct ts_error {
	int code;                   /* one of the TS_E* values, 0 if none */
	char msg[TS_ERROR_MSG_MAX]; /* one line, no trailing newline */
};

#define TS_ERROR_INIT { 0, { 0 } }

/* Set err (may be NULL) to code and a printf-style message; returns code so
 * callers can write `return ts_error_set(err, TS_EINPUT, ...)`. */
int ts_error_set(struct ts_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Turn line breaks and tabs in s into spaces, other control characters
 * (C1's U+0080-U+009F too) into '?' (messages built from input stay one
 * line), and drop a character left incomplete at the end (ts_utf8_trim). */
void ts_one_line(char *s);
/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms,
 * no surrogates, at most U+10FFFF), 0 if invalid; p[0] >= 0x80. */
size_t ts_utf8_len(const unsigned char *p);
/* Drop a character that a cut left incomplete at the end of s (a message
 * or name formatted into a fixed buffer: snprintf cuts bytes). */
void ts_utf8_trim(char *s);

int ts_error_vset(struct ts_error *err, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Prefix an existing message with "prefix: " (e.g. the file name). */
void ts_error_prefix(struct ts_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Exit status for a code: 0, 1 (infeasible) or 2 (input, usage, I/O). */
int ts_error_exit_status(int code);

/* Print "trainsim: error: <msg>" to stderr. */
void ts_error_print(const struct ts_error *err);

/* Programmer error: print location and abort. Never for user input. */
#define TS_BUG(...)                                                        \
	do {                                                               \
		fprintf(stderr, "trainsim: BUG: %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                              \
		fputc('\n', stderr);                                       \
		abort();                                                   \
	} while (0)
#define TS_ASSERT(cond)                                                     \
	do {                                                                \
		if (!(cond))                                                \
			TS_BUG("assertion failed: %s", #cond);              \
	} while (0)

#define TS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#include "common/banned.h"

#endif
