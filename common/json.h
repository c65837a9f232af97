/* json.h: reading JSON input files with positions in every error.
 *
 * cJSON parses; this layer remembers the source text so that any error about
 * a value can name file:line:column and its JSON path, e.g.
 *   cluster.json:7:14: fabric.link_bandwidth: must be positive (got -400 Gb/s)
 * Positions are found lazily (only when an error is reported) by re-scanning
 * the source along the path, so reading stays O(size of file).
 *
 * Ownership: a struct jdoc owns its text and cJSON tree; struct jval is a
 * small by-value view into a jdoc and must not outlive it. */
#ifndef TS_JSON_H
#define TS_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/error.h"
#include "common/units.h"

#define TS_JSON_MAX_FILE_BYTES (256u << 20) /* refuse larger inputs: absurd */
#define TS_JPATH_MAX 200
/* A value's place as messages give it, "file:line:col" (jval_where), and
 * with its path after it, "file:line:col: a.b[2]": room for a file name
 * shown in at most TS_WHERE_FILE_MAX characters (a longer one keeps its
 * end: "...dir/plan.json"), the position and a path. */
#define TS_WHERE_FILE_MAX 160
#define TS_WHERE_MAX (TS_WHERE_FILE_MAX + 32 + TS_JPATH_MAX)

struct jdoc {
	char *name;   /* file name as shown in messages (owned) */
	char *text;   /* NUL-terminated source (owned) */
	size_t len;   /* bytes of text */
	cJSON *root;  /* parsed tree (owned) */
};

#define JDOC_INIT { NULL, NULL, 0, NULL }

struct jval {
	const struct jdoc *doc;     /* the document this value lives in */
	const cJSON *j;             /* the value, NULL when absent */
	char path[TS_JPATH_MAX];    /* JSON path, "" for the root: "fabric.tiers[1].k" */
};

/* Append n bytes of s to buf (capacity cap, used at) as one line of
 * printable text: valid UTF-8 as it is but for C1 controls, any other
 * byte below 0x20, DEL or from 0x80 as \xNN; whole characters only.
 * Returns the new length. */
size_t json_clean_text(char *buf, size_t cap, size_t at, const char *s, size_t n);
/* src into dst (capacity cap), cut where it fills dst but never inside a
 * character, a byte that is not UTF-8 (a path's) as '?' (a name or path
 * copied into a fixed field; found by review: a cluster named by 40 'é'
 * was cut mid-character at 63 bytes, and `topo --json` printed invalid
 * UTF-8). Control characters are left to ts_one_line. */
void json_copy_text(char *dst, size_t cap, const char *src);
/* Shorten s in place to fit cap bytes (NUL included) where it does not:
 * cut on a character and end with "..." (a text a file field limits). */
void json_shorten_text(char *s, size_t cap);

/* Parse text (copied) under the display name; malformed JSON gives
 * "name:line:col: malformed JSON ..." and TS_EINPUT. */
int jdoc_parse(struct jdoc *d, const char *name, const char *text, size_t len,
	       struct ts_error *err);
/* Read and parse a file (size-limited). */
int jdoc_load(struct jdoc *d, const char *path, struct ts_error *err);
void jdoc_release(struct jdoc *d);

struct jval jdoc_root(const struct jdoc *d);

/* "file:line:col" of the value at v's path (or of its nearest present
 * ancestor) into buf. */
const char *jval_where(const struct jval *v, char *buf, size_t n);

/* v as the shortest %g text that reads back as v (a message quoting a
 * number says the number the file holds, or inf where it overflows a
 * double: %g said 128256 for 128256.5), into buf (32 bytes are enough). */
const char *json_num_text(double v, char *buf, size_t n);

/* Refuse v unless it is a whole number (finite, no fraction), with
 * jval_get_int's message. */
int jval_expect_whole(const struct jval *v, struct ts_error *err);
/* The %.*g precision that prints whole number v whole: every digit below
 * 1e18, else 6 (for messages about integers out of range). */
static inline int jval_whole_prec(double v)
{
	return v > -1e18 && v < 1e18 ? 19 : 6;
}

/* Report an error about v: "file:line:col: path: <message>". Returns TS_EINPUT. */
int jval_error(const struct jval *v, struct ts_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Child access. jval_child returns true when key is present (exact case).
 * out->path is set either way, so a missing field can still be reported. */
bool jval_child(const struct jval *obj, const char *key, struct jval *out);
/* View of item, the i-th element of array arr (for cJSON_ArrayForEach). */
void jval_elem(const struct jval *arr, const cJSON *item, int i, struct jval *out);

/* Type checks with errors naming the value. */
int jval_expect_object(const struct jval *v, struct ts_error *err);
int jval_expect_array(const struct jval *v, struct ts_error *err);

/* Refuse keys of obj not in allowed (NULL-terminated); catches typos such as
 * "tp_size". A quantity entry is written "name*B" (bandwidth), "name*S"
 * (size) or "name*T" (time): "name" and "name" + one of that kind's unit
 * suffixes (units.h) are accepted; another "name_..." is refused with the
 * suffixes expected. */
int jval_check_keys(const struct jval *obj, const char *const *allowed, struct ts_error *err);

/* Typed getters. Each returns 0 and stores the value, returns 0 and leaves
 * *out untouched when the key is absent and !required, or returns TS_EINPUT
 * with a positioned message. */
int jval_get_number(const struct jval *obj, const char *key, bool required,
		    double *out, struct ts_error *err);
/* An integer in [min, max]; refuses fractions and out-of-range values. */
int jval_get_int(const struct jval *obj, const char *key, bool required,
		 long long min, long long max, long long *out, struct ts_error *err);
int jval_get_bool(const struct jval *obj, const char *key, bool required,
		  bool *out, struct ts_error *err);
/* The string stays owned by the document. */
int jval_get_string(const struct jval *obj, const char *key, bool required,
		    const char **out, struct ts_error *err);
/* One of names (NULL-terminated); stores its index. */
int jval_get_enum(const struct jval *obj, const char *key, bool required,
		  const char *const *names, int *out, struct ts_error *err);
/* A quantity: "key": "400Gb/s" (string with units), or "key_gbps": 400 and
 * the other suffixes of kind (units.h). Two spellings at once is an error.
 * The value must be > 0 unless allow_zero. Stores SI units (B/s, B, s). */
int jval_get_quantity(const struct jval *obj, const char *key, enum ts_qty kind,
		      bool required, bool allow_zero, double *out, struct ts_error *err);
/* The node of quantity key in obj, given plain or with a suffix of kind
 * (for an error at its position after jval_get_quantity read it); false
 * when absent. */
bool jval_quantity_node(const struct jval *obj, const char *key, enum ts_qty kind,
			struct jval *out);

#endif
