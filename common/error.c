/* error.c: one-line error messages and their exit status. */
#include "common/error.h"

#include <string.h>

int ts_error_vset(struct ts_error *err, int code, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	/* Keep the message on one line whatever the input contained. */
	for (char *p = err->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
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
