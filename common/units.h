/* units.h: unit types, converters and parsing of quantities with units.
 *
 * Internally: time in integer picoseconds (simtime_ps) inside the engine and
 * in double seconds elsewhere, sizes in bytes, bandwidth in bytes per second.
 * A unit bug in a simulator is a wrong answer that looks right, so every
 * conversion goes through a named converter here.
 *
 * Accepted strings (case matters for b/B):
 *   bandwidth: "400Gb/s" "400Gbps" "400Gbit/s" (bits), "50GB/s" "50GBps"
 *              (bytes), prefixes k/K M G T (decimal) and Ki Mi Gi Ti (binary)
 *   size:      "80GiB" "80GB" "4KiB" "1500B" "1.5MB"
 *   time:      "1.5us" "1.5µs" "100ns" "2ms" "1s" "10ps"
 *   count:     plain numbers only. */
#ifndef TS_UNITS_H
#define TS_UNITS_H

#include <stdint.h>

#include "common/error.h"

typedef int64_t simtime_ps; /* simulated time, picoseconds */

#define TS_PS_PER_S 1000000000000LL
#define TS_PS_PER_US 1000000LL
#define TS_PS_PER_NS 1000LL
#define TS_SIMTIME_MAX INT64_MAX

#define TS_KiB 1024.0
#define TS_MiB (1024.0 * 1024.0)
#define TS_GiB (1024.0 * 1024.0 * 1024.0)

static inline simtime_ps time_from_s(double s) { return (simtime_ps)(s * 1e12 + 0.5); }
static inline simtime_ps time_from_us(double us) { return (simtime_ps)(us * 1e6 + 0.5); }
static inline simtime_ps time_from_ns(double ns) { return (simtime_ps)(ns * 1e3 + 0.5); }
static inline double time_to_s(simtime_ps t) { return (double)t * 1e-12; }
static inline double time_to_us(simtime_ps t) { return (double)t * 1e-6; }

static inline double bw_from_gbps(double gbit_per_s) { return gbit_per_s * 1e9 / 8.0; } /* -> B/s */
static inline double bw_from_GBps(double gbyte_per_s) { return gbyte_per_s * 1e9; }    /* -> B/s */
static inline double bw_to_gbps(double bytes_per_s) { return bytes_per_s * 8.0 / 1e9; }
static inline double bw_to_GBps(double bytes_per_s) { return bytes_per_s / 1e9; }
static inline double bytes_to_gib(double bytes) { return bytes / TS_GiB; }

enum ts_qty {
	TS_QTY_BANDWIDTH, /* -> bytes per second */
	TS_QTY_SIZE,      /* -> bytes */
	TS_QTY_TIME       /* -> seconds */
};

/* Parse s as a quantity of kind; on success store the SI value (B/s, B, s)
 * in *out and return 0. On failure return TS_EINPUT and set *why to a
 * static explanation (e.g. "unknown unit 'Gx'"). */
int units_parse(const char *s, enum ts_qty kind, double *out, const char **why);

/* s, whole, as a finite decimal number (strtod without its hexadecimal,
 * "inf" and "nan" forms): 0 and *out set, else TS_EINPUT. */
int units_parse_decimal(const char *s, double *out);

/* Bandwidths a device can have: beyond them no hardware, only simulated
 * times past the engine's range (cluster and calibration files). */
#define TS_MIN_BPS 1e6  /* 1 MB/s */
#define TS_MAX_BPS 1e15 /* 1 PB/s */

/* Scale factor of a key suffix for kind ("_gbps" -> 1.25e8 for bandwidth,
 * "_gib" -> 2^30 for size, "_us" -> 1e-6 for time). Returns 0 when the
 * suffix (including its leading '_') is not one of kind's. */
double units_suffix_scale(const char *suffix, enum ts_qty kind);

/* The suffixes accepted for kind, NULL-terminated (for error messages and
 * for trying each key variant). */
const char *const *units_suffixes(enum ts_qty kind);

/* Human-readable formatting into buf: "400 Gb/s", "80.0 GiB", "1.50 us". */
const char *units_fmt_bw(double bytes_per_s, char *buf, int n);
const char *units_fmt_size(double bytes, char *buf, int n);
const char *units_fmt_time(double seconds, char *buf, int n);

#endif
