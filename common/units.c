/* units.c: parsing and printing quantities with units. */
#include "common/units.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct unit {
	const char *name; /* as written after the number */
	double scale;     /* to SI: bytes/s, bytes or seconds */
};

/* Longest names first within a shared prefix is not needed: matching is exact. */
static const struct unit bw_units[] = {
	{ "b/s", 1.0 / 8 }, { "bps", 1.0 / 8 }, { "bit/s", 1.0 / 8 },
	{ "kb/s", 1e3 / 8 }, { "Kb/s", 1e3 / 8 }, { "kbps", 1e3 / 8 }, { "Kbps", 1e3 / 8 }, { "kbit/s", 1e3 / 8 },
	{ "Mb/s", 1e6 / 8 }, { "Mbps", 1e6 / 8 }, { "Mbit/s", 1e6 / 8 },
	{ "Gb/s", 1e9 / 8 }, { "Gbps", 1e9 / 8 }, { "Gbit/s", 1e9 / 8 },
	{ "Tb/s", 1e12 / 8 }, { "Tbps", 1e12 / 8 }, { "Tbit/s", 1e12 / 8 },
	{ "Pb/s", 1e15 / 8 }, { "Pbps", 1e15 / 8 }, { "Pbit/s", 1e15 / 8 },
	{ "B/s", 1.0 }, { "Bps", 1.0 },
	{ "kB/s", 1e3 }, { "KB/s", 1e3 }, { "kBps", 1e3 }, { "KBps", 1e3 },
	{ "MB/s", 1e6 }, { "MBps", 1e6 }, { "GB/s", 1e9 }, { "GBps", 1e9 },
	{ "TB/s", 1e12 }, { "TBps", 1e12 }, { "PB/s", 1e15 }, { "PBps", 1e15 },
	{ "KiB/s", 1024.0 }, { "MiB/s", TS_MiB }, { "GiB/s", TS_GiB },
	{ "Gib/s", TS_GiB / 8 },
};
static const struct unit size_units[] = {
	{ "B", 1.0 }, { "bytes", 1.0 },
	{ "kB", 1e3 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 }, { "PB", 1e15 },
	{ "KiB", TS_KiB }, { "MiB", TS_MiB }, { "GiB", TS_GiB }, { "TiB", TS_GiB * 1024.0 },
	{ "PiB", TS_GiB * 1024.0 * 1024.0 },
	{ "K", TS_KiB }, { "M", TS_MiB }, { "G", TS_GiB }, /* nccl-tests style -b 8M */
	{ "T", TS_GiB * 1024.0 },
};
static const struct unit time_units[] = {
	{ "s", 1.0 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "\xc2\xb5s", 1e-6 }, { "ns", 1e-9 }, { "ps", 1e-12 },
};

static const struct unit *table_for(enum ts_qty kind, size_t *n)
{
	switch (kind) {
	case TS_QTY_BANDWIDTH:
		*n = TS_ARRAY_LEN(bw_units);
		return bw_units;
	case TS_QTY_SIZE:
		*n = TS_ARRAY_LEN(size_units);
		return size_units;
	case TS_QTY_TIME:
		*n = TS_ARRAY_LEN(time_units);
		return time_units;
	}
	TS_BUG("unknown quantity kind %d", (int)kind);
}

int units_parse(const char *s, enum ts_qty kind, double *out, const char **why)
{
	const char *p = s;
	char *end;
	double v;
	size_t n;
	const struct unit *t;
	const char *unit;

	if (strpbrk(s, "\t\n\v\f\r")) { /* (spaces only; found by review: "80\nGB") */
		*why = "a line break or tab in a quantity";
		return TS_EINPUT;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (!*p) {
		*why = "empty quantity";
		return TS_EINPUT;
	}
	v = strtod(p, &end);
	if (end == p) {
		*why = "expected a number followed by a unit";
		return TS_EINPUT;
	}
	if (memchr(p, 'x', (size_t)(end - p)) || memchr(p, 'X', (size_t)(end - p))) {
		*why = "expected a decimal number"; /* strtod also reads "0x10" */
		return TS_EINPUT;
	}
	if (!isfinite(v)) {
		*why = "not a finite number";
		return TS_EINPUT;
	}
	unit = end;
	while (isspace((unsigned char)*unit))
		unit++;
	if (!*unit) {
		*why = "missing unit";
		return TS_EINPUT;
	}
	/* Trailing spaces after the unit are tolerated. */
	size_t ulen = strlen(unit);
	while (ulen > 0 && isspace((unsigned char)unit[ulen - 1]))
		ulen--;
	t = table_for(kind, &n);
	for (size_t i = 0; i < n; i++) {
		if (strlen(t[i].name) == ulen && memcmp(t[i].name, unit, ulen) == 0) {
			if (!isfinite(v * t[i].scale)) {
				*why = "too large (beyond a double's 1.8e308 in base units)";
				return TS_EINPUT;
			}
			*out = v * t[i].scale;
			return 0;
		}
	}
	switch (kind) {
	case TS_QTY_BANDWIDTH:
		*why = "unknown bandwidth unit (use e.g. Gb/s for bits or GB/s for bytes)";
		break;
	case TS_QTY_SIZE:
		*why = "unknown size unit (use e.g. B, KiB, MiB, GiB, GB)";
		break;
	case TS_QTY_TIME:
		*why = "unknown time unit (use s, ms, us, ns or ps)";
		break;
	}
	return TS_EINPUT;
}

static const char *const bw_suffixes[] = { "_gbps", "_GBps", "_mbps", "_bps", "_Bps", "_MBps", "_tbps", NULL };
static const char *const size_suffixes[] = { "_bytes", "_kib", "_mib", "_gib", "_kb", "_mb", "_gb", "_tb", NULL };
static const char *const time_suffixes[] = { "_s", "_ms", "_us", "_ns", "_ps", NULL };

int units_parse_decimal(const char *s, double *out)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(s, &end);
	/* (an underflow is the tiny number it is: found by review, --jitter
	 * 1e-320 was "needs a number") */
	if (errno == ERANGE && fabs(v) <= DBL_MIN)
		errno = 0;
	if (end == s || *end || errno || !isfinite(v) || strpbrk(s, "xX"))
		return TS_EINPUT;
	*out = v;
	return 0;
}

const char *const *units_suffixes(enum ts_qty kind)
{
	switch (kind) {
	case TS_QTY_BANDWIDTH:
		return bw_suffixes;
	case TS_QTY_SIZE:
		return size_suffixes;
	case TS_QTY_TIME:
		return time_suffixes;
	}
	TS_BUG("unknown quantity kind %d", (int)kind);
}

double units_suffix_scale(const char *suffix, enum ts_qty kind)
{
	static const struct unit bw[] = {
		{ "_gbps", 1e9 / 8 }, { "_GBps", 1e9 }, { "_mbps", 1e6 / 8 }, { "_bps", 1.0 / 8 },
		{ "_Bps", 1.0 }, { "_MBps", 1e6 }, { "_tbps", 1e12 / 8 },
	};
	static const struct unit sz[] = {
		{ "_bytes", 1.0 }, { "_kib", TS_KiB }, { "_mib", TS_MiB }, { "_gib", TS_GiB },
		{ "_kb", 1e3 }, { "_mb", 1e6 }, { "_gb", 1e9 }, { "_tb", 1e12 },
	};
	static const struct unit tm[] = {
		{ "_s", 1.0 }, { "_ms", 1e-3 }, { "_us", 1e-6 }, { "_ns", 1e-9 }, { "_ps", 1e-12 },
	};
	const struct unit *t;
	size_t n;

	switch (kind) {
	case TS_QTY_BANDWIDTH:
		t = bw, n = TS_ARRAY_LEN(bw);
		break;
	case TS_QTY_SIZE:
		t = sz, n = TS_ARRAY_LEN(sz);
		break;
	case TS_QTY_TIME:
		t = tm, n = TS_ARRAY_LEN(tm);
		break;
	default:
		TS_BUG("unknown quantity kind %d", (int)kind);
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, suffix) == 0)
			return t[i].scale;
	return 0;
}

const char *units_fmt_bw(double bytes_per_s, char *buf, int n)
{
	double gbps = bw_to_gbps(bytes_per_s);
	if (gbps >= 1.0)
		snprintf(buf, (size_t)n, "%g Gb/s", gbps);
	else
		snprintf(buf, (size_t)n, "%g Mb/s", gbps * 1e3);
	return buf;
}

const char *units_fmt_size(double bytes, char *buf, int n)
{
	if (bytes >= TS_GiB)
		snprintf(buf, (size_t)n, "%.1f GiB", bytes / TS_GiB);
	else if (bytes >= TS_MiB)
		snprintf(buf, (size_t)n, "%.1f MiB", bytes / TS_MiB);
	else if (bytes >= TS_KiB)
		snprintf(buf, (size_t)n, "%.1f KiB", bytes / TS_KiB);
	else
		snprintf(buf, (size_t)n, "%.0f B", bytes);
	return buf;
}

const char *units_fmt_time(double s, char *buf, int n)
{
	double a = fabs(s);
	if (a >= 1.0)
		snprintf(buf, (size_t)n, "%.3f s", s);
	else if (a >= 1e-3)
		snprintf(buf, (size_t)n, "%.3f ms", s * 1e3);
	else if (a >= 1e-6)
		snprintf(buf, (size_t)n, "%.2f us", s * 1e6);
	else
		snprintf(buf, (size_t)n, "%.1f ns", s * 1e9);
	return buf;
}
