/* error.c: one-line error messages and their exit status. */
#include "common/error.h"

#include <string.h>

/* Keep a message on one line and free of terminal controls whatever the
 * input contained: line breaks and tabs become spaces, other control
 * characters '?' (found by review: an ESC from a JSON string reached the
 * terminal). */
void ts_one_line(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
		else if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

int ts_error_vset(struct ts_error *err, int code, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	ts_one_line(err->msg);
	return code;
}

int ts_error_set(struct ts_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ts_error_vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

void ts_error_prefix(struct ts_error *err, const char *fmt, ...)
{
	char prefix[256];
	char old[TS_ERROR_MSG_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
	ts_one_line(err->msg);
}

int ts_error_exit_status(int code)
{
	if (code == 0)
		return 0;
	if (code == TS_EINFEASIBLE)
		return 1;
	return 2;
}

void ts_error_print(const struct ts_error *err)
{
	fprintf(stderr, "trainsim: error: %s\n",
		err && err->msg[0] ? err->msg : "unknown error");
}
