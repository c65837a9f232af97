/* error.c: one-line error messages and their exit status. */
#include "common/error.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms,
 * no surrogates, at most U+10FFFF), 0 if invalid; p[0] >= 0x80. */
size_t ts_utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	unsigned min, cp;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void ts_utf8_trim(char *s)
{
	size_t n = strlen(s), i = n;
	/* back over the continuation bytes at the end to their lead byte */
	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	/* (a lead byte, 0xC2-0xF4: a byte no character starts with is not a
	 * cut one, and ts_one_line shows it; found by review, 2026-12-06:
	 * `trainsim $'\xff'` named the command '') */
	if (i > 0 && (unsigned char)s[i - 1] >= 0xc2 && (unsigned char)s[i - 1] <= 0xf4) {
		unsigned c = (unsigned char)s[i - 1];
		size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (n - (i - 1) < want)
			s[i - 1] = '\0'; /* the cut left it short */
	}
}

/* Keep a message on one line and free of terminal controls whatever the
 * input contained: line breaks and tabs become spaces, other control
 * characters '?' (found by review: an ESC from a JSON string reached the
 * terminal). */
void ts_one_line(char *s)
{
	/* a message or name cut by its buffer ends on a whole character */
	ts_utf8_trim(s);
	for (unsigned char *p = (unsigned char *)s; *p; p++) {
		size_t k;
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
		else if (*p < 0x20 || *p == 0x7f)
			*p = '?';
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0)
			p[0] = p[1] = '?', p++; /* a C1 control (U+0080-U+009F: CSI...) */
		else if (*p >= 0x80 && (k = ts_utf8_len(p)) > 0)
			p += k - 1; /* a whole character */
		else if (*p >= 0x80)
			*p = '?'; /* not UTF-8 (found by an audit, 2026-12-06: a 0xFF
				   * of a cluster name reached stderr raw) */
	}
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
