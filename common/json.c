/* json.c: JSON documents with positions (see json.h). */
#include "common/json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/fileio.h"

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

/* Up to 12 bytes of s, stopping at a line end. */
static int snippet_len(const char *s)
{
	size_t n = strcspn(s, "\r\n");
	return n > 12 ? 12 : (int)n;
}

/* Line and column (in characters: a UTF-8 sequence counts once, as editors
 * count; found by review: columns counted bytes) of byte offset off. */
static void offset_to_linecol(const char *text, size_t off, int *line, int *col)
{
	int l = 1, c = 1;
	for (size_t i = 0; i < off && text[i]; i++) {
		/* a line ends at LF, CRLF or a lone CR (classic Mac OS files;
		 * found by review) */
		if (text[i] == '\n' || (text[i] == '\r' && text[i + 1] != '\n')) {
			l++;
			c = 1;
		} else if (text[i] == '\r') {
			/* (the CR of CRLF: the LF counts the line) */
		} else if (((unsigned char)text[i] & 0xC0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

static const char *skip_ws(const char *p);
static const char *skip_string(const char *p);
static const char *skip_value(const char *p);

/* ---- duplicate keys ----------------------------------------------------------
 * cJSON keeps the first of two equal keys and ignores the second; a file
 * that says "tp": 2 and later "tp": 4 is refused instead. Keys are compared
 * as cJSON decodes them, so "tp" and "t\u0070" are the same key. */

struct keyref {
	const char *at; /* first character of the key in the text, after the quote */
	const char *s;  /* the key: as written, or own when it holds escapes */
	size_t n;       /* length of s, bytes */
	char *own;      /* decoded key (cJSON), or NULL */
};

static int cmp_keyref(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->s, y->s, n);
	if (c)
		return c;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at; /* equal keys in text order */
}

/* Scan the value at p (valid JSON) for an object with a repeated key; the
 * later occurrence goes to *dup. Returns the end of the value; *oom on
 * allocation failure. */
static const char *scan_dups(const char *p, struct keyref *dup, bool *oom)
{
	p = skip_ws(p);
	if (*p == '[') {
		p = skip_ws(p + 1);
		while (*p && *p != ']' && !dup->s && !*oom) {
			p = skip_ws(scan_dups(p, dup, oom));
			if (*p == ',')
				p = skip_ws(p + 1);
		}
		return *p == ']' ? p + 1 : p;
	}
	if (*p != '{')
		return skip_value(p);
	{
		struct keyref *k = NULL;
		size_t nk = 0, cap = 0;
		p = skip_ws(p + 1);
		while (*p == '"' && !dup->s && !*oom) {
			const char *ke = skip_string(p);
			if (nk == cap) {
				size_t nc = cap ? 2 * cap : 16;
				struct keyref *g = realloc(k, nc * sizeof(*k));
				if (!g) {
					*oom = true;
					break;
				}
				k = g;
				cap = nc;
			}
			k[nk].at = k[nk].s = p + 1;
			k[nk].n = (size_t)(ke - 1 - (p + 1));
			k[nk].own = NULL;
			if (memchr(k[nk].s, '\\', k[nk].n)) {
				cJSON *d = cJSON_ParseWithLength(p, (size_t)(ke - p));
				if (d && cJSON_IsString(d)) {
					k[nk].own = d->valuestring; /* taken over */
					d->valuestring = NULL;
				}
				cJSON_Delete(d);
				if (!k[nk].own) {
					*oom = true; /* the key parsed once already */
					break;
				}
				k[nk].s = k[nk].own;
				k[nk].n = strlen(k[nk].own);
			}
			nk++;
			p = skip_ws(ke);
			if (*p == ':')
				p = skip_ws(p + 1);
			p = skip_ws(scan_dups(p, dup, oom));
			if (*p == ',')
				p = skip_ws(p + 1);
		}
		if (!dup->s && !*oom && nk > 1) {
			qsort(k, nk, sizeof(*k), cmp_keyref);
			for (size_t i = 1; i < nk && !dup->s; i++)
				if (k[i].n == k[i - 1].n && !memcmp(k[i].s, k[i - 1].s, k[i].n)) {
					*dup = k[i];
					k[i].own = NULL; /* now the caller's */
				}
		}
		for (size_t i = 0; i < nk; i++)
			cJSON_free(k[i].own);
		free(k);
		if (dup->s || *oom)
			return p;
		return *p == '}' ? p + 1 : p;
	}
}

/* Append n bytes of s to buf (capacity cap, used at) as printable text:
 * valid UTF-8 as it is but for C1 controls, any other byte below 0x20,
 * DEL or from 0x80 as \xNN,
 * so an error line stays one valid line (found by review: a stray 0xFF
 * was echoed raw). Returns the new length. */
size_t json_clean_text(char *buf, size_t cap, size_t at, const char *s, size_t n)
{
	for (size_t i = 0; i < n && at + 1 < cap; i++) {
		unsigned char ch = (unsigned char)s[i];
		size_t k = ch >= 0x80 ? ts_utf8_len((const unsigned char *)s + i) : 1;
		if (k == 2 && ch == 0xc2 && (unsigned char)s[i + 1] < 0xa0)
			k = 0; /* a C1 control (U+0080-U+009F): its bytes escaped */
		if (k > 1 && i + k <= n && at + k < cap) {
			memcpy(buf + at, s + i, k);
			at += k;
			i += k - 1;
		} else if (ch < 0x20 || ch >= 0x7f) {
			if (at + 4 >= cap)
				break;
			snprintf(buf + at, cap - at, "\\x%02x", ch);
			at += 4;
		} else {
			buf[at++] = (char)ch;
		}
	}
	buf[at] = '\0';
	return at;
}

void json_shorten_text(char *s, size_t cap)
{
	if (cap < 4 || strlen(s) < cap)
		return;
	s[cap - 4] = '\0';
	ts_utf8_trim(s);
	memcpy(s + strlen(s), "...", 4);
}

void json_copy_text(char *dst, size_t cap, const char *src)
{
	size_t at = 0;
	if (cap == 0)
		return;
	for (const unsigned char *p = (const unsigned char *)src; *p && at + 1 < cap;) {
		size_t k = *p >= 0x80 ? ts_utf8_len(p) : 1;
		if (k == 0) { /* not UTF-8 (a path's byte) */
			dst[at++] = '?';
			p++;
			continue;
		}
		if (at + k >= cap)
			break; /* no room for the whole character */
		memcpy(dst + at, p, k);
		at += k;
		p += k;
	}
	dst[at] = '\0';
}

/* Whether the n bytes of JSON string text at s hold the escape \u0000
 * (a backslash that is itself escaped does not start one). */
static bool has_nul_escape(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 5 < n && !memcmp(s + i + 2, "0000", 4))
			return true;
		i++; /* the escaped character */
	}
	return false;
}

/* The path (as jval names fields: a.b[2].c) of the innermost key or value
 * of the JSON text at *pp that holds byte t, into buf from at; true when
 * found. The text is one cJSON parsed. */
static bool path_walk(const char **pp, const char *t, char *buf, size_t cap, size_t at)
{
	const char *p = skip_ws(*pp);
	if (*p == '{' || *p == '[') {
		bool obj = *p == '{';
		int i = 0;
		p = skip_ws(p + 1);
		while (*p && *p != (obj ? '}' : ']')) {
			size_t nat = at;
			if (obj) {
				/* .key, or ["key"] where it holds path syntax, as
				 * path_join_key writes it: decoded (found by review: a
				 * key spelt with an escape was named as written,
				 * node["\u0067pus"] for node.gpus) */
				const char *ke = skip_string(p), *ks = p + 1;
				size_t rn = (size_t)(ke - 1 - (p + 1)), kn = rn; /* as written */
				char *own = NULL;
				bool quote;
				if (memchr(ks, '\\', kn) && !has_nul_escape(ks, kn)) {
					/* (a \u0000 would cut the decoded key short:
					 * such a key stays as written) */
					cJSON *d = cJSON_ParseWithLength(p, (size_t)(ke - p));
					if (d && cJSON_IsString(d) && d->valuestring) {
						own = d->valuestring; /* taken over */
						d->valuestring = NULL;
						ks = own;
						kn = strlen(own);
					}
					cJSON_Delete(d);
				}
				quote = !kn;
				for (size_t q = 0; q < kn && !quote; q++)
					quote = strchr(".[]\"\\", ks[q]) != NULL;
				if (quote) {
					/* " and \ escaped again, the key cleaned in one
					 * piece (cut where it stops fitting, not in
					 * the middle: found by review) */
					char *esc = own ? malloc(2 * kn + 1) : NULL;
					size_t en = 0;
					if (esc) {
						for (size_t q = 0; q < kn; q++) {
							if (ks[q] == '"' || ks[q] == '\\')
								esc[en++] = '\\';
							esc[en++] = ks[q];
						}
					}
					nat = json_clean_text(buf, cap, nat, "[\"", 2);
					nat = json_clean_text(buf, cap, nat, esc ? esc : p + 1, esc ? en : rn);
					nat = json_clean_text(buf, cap, nat, "\"]", 2);
					free(esc);
				} else {
					if (at && at + 1 < cap)
						buf[nat++] = '.';
					nat = json_clean_text(buf, cap, nat, ks, kn);
				}
				cJSON_free(own);
				if (t >= p && t < ke) {
					*pp = ke;
					return true;
				}
				p = skip_ws(ke);
				if (*p == ':')
					p = skip_ws(p + 1);
			} else {
				int w = snprintf(buf + at, cap - at, "[%d]", i++);
				nat = w > 0 && (size_t)w < cap - at ? at + (size_t)w : at;
			}
			if (path_walk(&p, t, buf, cap, nat))
				return true;
			buf[at] = '\0';
			p = skip_ws(p);
			if (*p == ',')
				p = skip_ws(p + 1);
		}
		*pp = *p ? p + 1 : p;
		return false;
	}
	{
		const char *v = p;
		*pp = skip_value(p);
		return t >= v && t < *pp;
	}
}

/* The path of the key or value holding text[off], or "" (the root). */
static void path_at(const char *text, size_t off, char *buf, size_t cap)
{
	const char *p = text;
	buf[0] = '\0';
	if (!path_walk(&p, text + off, buf, cap, 0))
		buf[0] = '\0';
}

/* Length of the JSON number (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?
 * ([eE][+-]?[0-9]+)?) at t, 0 if the token there is not one. */
static size_t json_number_len(const unsigned char *t, size_t n)
{
	size_t i = 0;
	if (i < n && t[i] == '-')
		i++;
	if (i < n && t[i] == '0')
		i++;
	else if (i < n && t[i] >= '1' && t[i] <= '9')
		while (i < n && isdigit(t[i]))
			i++;
	else
		return 0;
	if (i < n && t[i] == '.') {
		size_t d = ++i;
		while (i < n && isdigit(t[i]))
			i++;
		if (i == d)
			return 0;
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		size_t d;
		i++;
		if (i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		d = i;
		while (i < n && isdigit(t[i]))
			i++;
		if (i == d)
			return 0;
	}
	return i;
}

/* In a document cJSON accepted: the offset of the first thing strict JSON
 * (RFC 8259) refuses and cJSON lets through (found by review): a number
 * such as 01 or 1., a raw control character in a string, an escape other
 * than JSON's, a \\u without four hex digits (cJSON makes it a NUL); or
 * string content that C strings cannot carry faithfully (an escaped NUL,
 * which would cut the value short) or that is not UTF-8 (copied into JSON
 * output, it would make that invalid); -1 if none. */
static long bad_string_at(const char *text, size_t len, const char **why)
{
	const unsigned char *t = (const unsigned char *)text;
	bool in = false;
	for (size_t i = 0; i < len; i++) {
		if (!in) {
			in = t[i] == '"';
			if (t[i] == '-' || isdigit(t[i])) {
				size_t k = json_number_len(t + i, len - i), e = i;
				while (e < len && (isalnum(t[e]) || t[e] == '.' || t[e] == '+' ||
						   t[e] == '-'))
					e++;
				if (!k || i + k != e) {
					*why = "malformed JSON: not a JSON number (leading zero, or a "
					       "point or exponent without digits)";
					return (long)i;
				}
				i = e - 1;
			}
			continue;
		}
		if (t[i] == '"') {
			in = false;
		} else if (t[i] < 0x20) {
			*why = "malformed JSON: a raw control character in a string (JSON needs it "
			       "escaped)";
			return (long)i;
		} else if (t[i] == '\\') {
			if (i + 1 >= len || !strchr("\"\\/bfnrtu", t[i + 1])) {
				*why = "malformed JSON: not a JSON escape in a string";
				return (long)i;
			}
			if (t[i + 1] == 'u') {
				for (int k = 2; k < 6; k++)
					if (i + (size_t)k >= len || !isxdigit(t[i + (size_t)k])) {
						*why = "malformed JSON: \\u needs four hex digits";
						return (long)i;
					}
				if (!memcmp(t + i + 2, "0000", 4)) {
					*why = "a string holds a NUL character (\\u0000)";
					return (long)i;
				}
			}
			i++; /* the escaped character (a \\uXXXX's digits are plain) */
		} else if (t[i] >= 0x80) {
			size_t n = ts_utf8_len(t + i);
			if (!n || i + n > len) {
				*why = "a string is not valid UTF-8";
				return (long)i;
			}
			i += n - 1;
		}
	}
	return -1;
}

/* The offset of the quote that closes the string opening at text[i] (a
 * '"'), or len when it runs to the end. */
static size_t string_end(const char *text, size_t len, size_t i)
{
	for (i++; i < len && text[i] != '"'; i++)
		if (text[i] == '\\')
			i++;
	return i < len ? i : len;
}

/* The offset of the first comma of text before a closing '}' or ']'
 * (strings skipped; JSON has no trailing commas), or -1; *close gets the
 * bracket. */
static long trailing_comma_at(const char *text, size_t len, char *close)
{
	for (size_t i = 0; i < len; i++) {
		char ch = text[i];
		if (ch == '"') {
			i = string_end(text, len, i);
		} else if (ch == ',') {
			size_t k = i + 1;
			while (k < len && strchr(" \t\r\n", text[k]))
				k++;
			if (k < len && (text[k] == '}' || text[k] == ']')) {
				*close = text[k];
				return (long)i;
			}
		}
	}
	return -1;
}

/* Arrays and objects open before offset off of text (strings skipped). */
static long nesting_at(const char *text, size_t off)
{
	long depth = 0;
	for (size_t i = 0; i < off && text[i]; i++) {
		char ch = text[i];
		if (ch == '"') {
			i = string_end(text, off, i);
		} else if (ch == '[' || ch == '{') {
			depth++;
		} else if (ch == ']' || ch == '}') {
			depth--;
		}
	}
	return depth;
}

int jdoc_parse(struct jdoc *d, const char *name, const char *text, size_t len,
	       struct ts_error *err)
{
	const char *end = NULL;

	*d = (struct jdoc)JDOC_INIT;
	if (len > TS_JSON_MAX_FILE_BYTES)
		return ts_error_set(err, TS_EINPUT, "%s: file is larger than %u MiB", name,
				    TS_JSON_MAX_FILE_BYTES >> 20);
	d->name = dup_str(name);
	d->text = malloc(len + 1);
	if (!d->name || !d->text)
		goto nomem;
	memcpy(d->text, text, len);
	d->text[len] = '\0';
	d->len = len;
	if (len >= 3 && !memcmp(d->text, "\xef\xbb\xbf", 3)) {
		/* cJSON would skip it and every position after would be off
		 * (found by review: errors all said 1:1) */
		ts_error_set(err, TS_EINPUT,
			     "%s:1:1: malformed JSON: the file starts with a UTF-8 byte-order mark "
			     "(JSON text has none; save it without)",
			     name);
		goto fail;
	}
	if (memchr(d->text, '\0', len)) {
		size_t off = strlen(d->text);
		int l, c;
		offset_to_linecol(d->text, off, &l, &c);
		ts_error_set(err, TS_EINPUT, "%s:%d:%d: malformed JSON: NUL byte in input", name, l, c);
		goto fail;
	}
	d->root = cJSON_ParseWithLengthOpts(d->text, len + 1, &end, 1);
	if (!d->root) {
		size_t off = end ? (size_t)(end - d->text) : 0;
		int l, c;
		if (!end) {
			/* cJSON does not say where when it runs out of memory. */
			const char *e = cJSON_GetErrorPtr();
			if (e && e >= d->text && e <= d->text + len)
				off = (size_t)(e - d->text);
		}
		char close = 0;
		long tc = trailing_comma_at(d->text, len, &close);
		offset_to_linecol(d->text, off, &l, &c);
		/* a trailing comma before where cJSON stopped is the fault, at
		 * the comma (found by review: "unexpected end of input" past
		 * the '}', or "near ''" on the next line) */
		if (tc >= 0 && (size_t)tc < off) {
			offset_to_linecol(d->text, (size_t)tc, &l, &c);
			ts_error_set(err, TS_EINPUT,
				     "%s:%d:%d: malformed JSON: a comma before '%c' (JSON has no "
				     "trailing commas)",
				     name, l, c, close);
		} else if (off < len && (d->text[off] == '[' || d->text[off] == '{') &&
			   nesting_at(d->text, off) >= CJSON_NESTING_LIMIT)
			ts_error_set(err, TS_EINPUT,
				     "%s:%d:%d: JSON nested deeper than %d levels (cJSON's limit)", name,
				     l, c, CJSON_NESTING_LIMIT);
		else if (off >= len)
			ts_error_set(err, TS_EINPUT, "%s:%d:%d: malformed JSON: unexpected end of input",
				     name, l, c);
		else {
			char near[64];
			json_clean_text(near, sizeof(near), 0, d->text + off,
				     (size_t)snippet_len(d->text + off));
			ts_error_set(err, TS_EINPUT, "%s:%d:%d: malformed JSON near '%s'", name, l, c,
				     near);
		}
		goto fail;
	}
	{
		const char *why = NULL;
		long at = bad_string_at(d->text, len, &why);
		if (at >= 0) {
			int l, c;
			char path[256];
			offset_to_linecol(d->text, (size_t)at, &l, &c);
			/* the field too (found by review: not named) */
			path_at(d->text, (size_t)at, path, sizeof(path));
			ts_error_set(err, TS_EINPUT, "%s:%d:%d: %s%s%s", name, l, c, path,
				     path[0] ? ": " : "", why);
			goto fail;
		}
	}
	{
		struct keyref dup = { NULL, NULL, 0, NULL };
		bool oom = false;
		scan_dups(d->text, &dup, &oom);
		if (oom)
			goto nomem;
		if (dup.s) {
			int l, c;
			char path[256];
			offset_to_linecol(d->text, (size_t)(dup.at - 1 - d->text), &l, &c);
			/* its whole path (found by review: the key alone) */
			path_at(d->text, (size_t)(dup.at - 1 - d->text), path, sizeof(path));
			ts_error_set(err, TS_EINPUT, "%s:%d:%d: %s: given twice in one object", name, l,
				     c, path);
			cJSON_free(dup.own);
			goto fail;
		}
	}
	return 0;
nomem:
	ts_error_set(err, TS_ENOMEM, "%s: out of memory", name);
fail:
	jdoc_release(d);
	return err ? err->code : TS_EINPUT;
}

int jdoc_load(struct jdoc *d, const char *path, struct ts_error *err)
{
	char *text = NULL;
	size_t len = 0;
	int rc;

	*d = (struct jdoc)JDOC_INIT;
	rc = fileio_read_all(path, TS_JSON_MAX_FILE_BYTES, &text, &len, err);
	if (rc)
		return rc;
	rc = jdoc_parse(d, path, text, len, err);
	free(text);
	return rc;
}

void jdoc_release(struct jdoc *d)
{
	if (!d)
		return;
	cJSON_Delete(d->root);
	free(d->text);
	free(d->name);
	*d = (struct jdoc)JDOC_INIT;
}

struct jval jdoc_root(const struct jdoc *d)
{
	struct jval v;
	v.doc = d;
	v.j = d->root;
	v.path[0] = '\0';
	return v;
}

/* ---- locating a path in the source text ---------------------------------- */

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* p at '"': return just past the closing quote. */
static const char *skip_string(const char *p)
{
	p++;
	while (*p && *p != '"') {
		if (*p == '\\' && p[1])
			p++;
		p++;
	}
	return *p ? p + 1 : p;
}

/* Skip one JSON value starting at p (already validated by cJSON). */
static const char *skip_value(const char *p)
{
	int depth = 0;
	p = skip_ws(p);
	do {
		if (!*p)
			return p;
		if (*p == '"') {
			p = skip_string(p);
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			depth--;
		else if (depth == 0) {
			/* a scalar: number or literal */
			while (*p && *p != ',' && *p != '}' && *p != ']' && !isspace((unsigned char)*p))
				p++;
			return p;
		}
		p++;
	} while (depth > 0);
	return p;
}

/* Whether the JSON string text [qs, qe) (quotes included, escapes in it)
 * reads as key: cJSON decodes it (found by an audit: a key spelled with an
 * escape, "\u0074p", was not found and its errors placed at 1:1). */
static bool key_is(const char *qs, const char *qe, const char *key, size_t klen)
{
	cJSON *j = cJSON_ParseWithLength(qs, (size_t)(qe - qs));
	bool same = j && cJSON_IsString(j) && strlen(j->valuestring) == klen &&
		    memcmp(j->valuestring, key, klen) == 0;
	cJSON_Delete(j);
	return same;
}

/* From p at a value, find member key (length klen) of the object there.
 * Returns the position of its value or NULL. */
static const char *find_member(const char *p, const char *key, size_t klen)
{
	p = skip_ws(p);
	if (*p != '{')
		return NULL;
	p = skip_ws(p + 1);
	while (*p == '"') {
		const char *ks = p + 1;
		const char *ke = skip_string(p) - 1;
		p = skip_ws(ke + 1);
		if (*p != ':')
			return NULL;
		p = skip_ws(p + 1);
		if ((size_t)(ke - ks) == klen && memcmp(ks, key, klen) == 0)
			return p;
		if (memchr(ks, '\\', (size_t)(ke - ks)) && key_is(ks - 1, ke + 1, key, klen))
			return p;
		p = skip_ws(skip_value(p));
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return NULL;
}

static const char *find_index(const char *p, long idx)
{
	p = skip_ws(p);
	if (*p != '[')
		return NULL;
	p = skip_ws(p + 1);
	for (long i = 0; *p && *p != ']'; i++) {
		if (i == idx)
			return p;
		p = skip_ws(skip_value(p));
		if (*p != ',')
			return NULL;
		p = skip_ws(p + 1);
	}
	return NULL;
}

/* Offset of the deepest component of path present in the text. Keys are
 * separated by '.', indices written "[i]". */
static size_t locate(const struct jdoc *d, const char *path)
{
	const char *p = skip_ws(d->text);
	const char *s = path;

	while (*s) {
		const char *next = NULL;
		if (*s == '.')
			s++;
		if (s[0] == '[' && s[1] == '"') {
			/* a key written ["..."] (path_join_key) */
			char key[TS_JPATH_MAX];
			size_t n = 0;
			for (s += 2; *s && *s != '"' && n + 1 < sizeof(key); s++) {
				if (*s == '\\' && s[1])
					s++;
				key[n++] = *s;
			}
			if (s[0] != '"' || s[1] != ']')
				break;
			s += 2;
			next = find_member(p, key, n);
		} else if (*s == '[') {
			char *e;
			long idx = strtol(s + 1, &e, 10);
			if (*e != ']')
				break;
			next = find_index(p, idx);
			s = e + 1;
		} else {
			size_t klen = strcspn(s, ".[");
			next = find_member(p, s, klen);
			s += klen;
		}
		if (!next)
			break;
		p = next;
	}
	return (size_t)(p - d->text);
}

const char *jval_where(const struct jval *v, char *buf, size_t n)
{
	int l = 1, c = 1;
	const char *name = v->doc && v->doc->name ? v->doc->name : "<input>";
	size_t len = strlen(name);
	if (v->doc && v->doc->text)
		offset_to_linecol(v->doc->text, locate(v->doc, v->path), &l, &c);
	/* a long file name keeps its end, so that the position and the
	 * field after it still fit in a message (found by an audit: a
	 * 70-character path cut them off) */
	if (len > TS_WHERE_FILE_MAX) {
		const char *tail = name + len - (TS_WHERE_FILE_MAX - 3);
		while ((*tail & 0xC0) == 0x80) /* (from a character's first byte) */
			tail++;
		snprintf(buf, n, "...%s:%d:%d", tail, l, c);
	} else
		snprintf(buf, n, "%s:%d:%d", name, l, c);
	return buf;
}

int jval_error(const struct jval *v, struct ts_error *err, const char *fmt, ...)
{
	char where[TS_WHERE_MAX];
	char msg[TS_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jval_where(v, where, sizeof(where));
	return ts_error_set(err, TS_EINPUT, "%s: %s: %s", where, v->path[0] ? v->path : "(top level)",
			    msg);
}

/* parent.key, or parent["key"] when the key holds a character of the path
 * syntax (. [ ] " \), escaped, so that locate finds it (found by review:
 * "a.b[3]" was sought as a.b, element 3, and placed at 1:1). */
static void path_join_key(char *dst, const char *parent, const char *key)
{
	if (key[0] && !strpbrk(key, ".[]\"\\")) {
		if (parent[0])
			snprintf(dst, TS_JPATH_MAX, "%s.%s", parent, key);
		else
			snprintf(dst, TS_JPATH_MAX, "%s", key);
		return;
	}
	{
		size_t n = (size_t)snprintf(dst, TS_JPATH_MAX, "%s[\"", parent);
		for (const char *k = key; *k && n + 4 < TS_JPATH_MAX; k++) {
			if (*k == '"' || *k == '\\')
				dst[n++] = '\\';
			dst[n++] = *k;
		}
		if (n + 3 <= TS_JPATH_MAX) {
			dst[n++] = '"';
			dst[n++] = ']';
		}
		dst[n < TS_JPATH_MAX ? n : TS_JPATH_MAX - 1] = '\0';
	}
}

bool jval_child(const struct jval *obj, const char *key, struct jval *out)
{
	char path[TS_JPATH_MAX];
	path_join_key(path, obj->path, key);
	out->doc = obj->doc;
	out->j = (obj->j && cJSON_IsObject(obj->j))
			 ? cJSON_GetObjectItemCaseSensitive(obj->j, key)
			 : NULL;
	memcpy(out->path, path, sizeof(path));
	return out->j != NULL;
}

void jval_elem(const struct jval *arr, const cJSON *item, int i, struct jval *out)
{
	char path[TS_JPATH_MAX];
	snprintf(path, sizeof(path), "%s[%d]", arr->path, i);
	out->doc = arr->doc;
	out->j = item;
	memcpy(out->path, path, sizeof(path));
}

static const char *type_name(const cJSON *j)
{
	if (!j)
		return "nothing";
	if (cJSON_IsNumber(j))
		return "a number";
	if (cJSON_IsString(j))
		return "a string";
	if (cJSON_IsBool(j))
		return "a boolean";
	if (cJSON_IsNull(j))
		return "null";
	if (cJSON_IsArray(j))
		return "an array";
	if (cJSON_IsObject(j))
		return "an object";
	return "an invalid value";
}

int jval_expect_object(const struct jval *v, struct ts_error *err)
{
	if (v->j && cJSON_IsObject(v->j))
		return 0;
	return jval_error(v, err, "expected an object, got %s", type_name(v->j));
}

int jval_expect_array(const struct jval *v, struct ts_error *err)
{
	if (v->j && cJSON_IsArray(v->j))
		return 0;
	return jval_error(v, err, "expected an array, got %s", type_name(v->j));
}

/* The kind of a quantity entry "name*B" (bandwidth), "name*S" (size) or
 * "name*T" (time); -1 for a plain key. */
static int qty_entry_kind(const char *entry, size_t n)
{
	if (n && entry[n - 1] == '*')
		TS_BUG("allowed key '%s': a quantity is written name*B, name*S or name*T", entry);
	if (n < 3 || entry[n - 2] != '*')
		return -1;
	switch (entry[n - 1]) {
	case 'B':
		return TS_QTY_BANDWIDTH;
	case 'S':
		return TS_QTY_SIZE;
	case 'T':
		return TS_QTY_TIME;
	}
	TS_BUG("allowed key '%s': a quantity is written name*B, name*S or name*T", entry);
}

/* 1: key is allowed; 0: unknown; -1 - i: "name_<suffix>" of quantity entry
 * i with a suffix that is not one of its kind's (a typo such as
 * "link_bandwidth_gbs", which jval_get_quantity would never read). */
static int key_allowed(const char *key, const char *const *allowed)
{
	int bad = 0;
	for (int i = 0; allowed[i]; i++) {
		size_t n = strlen(allowed[i]);
		int kind = qty_entry_kind(allowed[i], n);
		if (kind < 0) {
			if (strcmp(key, allowed[i]) == 0)
				return 1;
		} else if (strncmp(key, allowed[i], n - 2) == 0) {
			/* quantity: "name" or "name_<suffix of its kind>" */
			if (key[n - 2] == '\0' ||
			    units_suffix_scale(key + n - 2, (enum ts_qty)kind) > 0)
				return 1;
			if (key[n - 2] == '_' && !bad)
				bad = -1 - i;
		}
	}
	return bad;
}

int jval_check_keys(const struct jval *obj, const char *const *allowed, struct ts_error *err)
{
	const cJSON *it;
	if (jval_expect_object(obj, err))
		return TS_EINPUT;
	cJSON_ArrayForEach(it, obj->j)
	{
		int ok = key_allowed(it->string, allowed);
		if (ok != 1) {
			struct jval c;
			char key64[65]; /* its first 64 bytes, whole characters */
			json_copy_text(key64, sizeof(key64), it->string);
			jval_child(obj, it->string, &c);
			if (ok < 0) {
				const char *e = allowed[-1 - ok];
				const char *const *suf = units_suffixes((enum ts_qty)qty_entry_kind(e, strlen(e)));
				return jval_error(&c, err, "unknown field '%s%s' (a unit suffix of '%.*s' "
						  "expected: %s, %s, ...)",
						  key64, strlen(it->string) > 64 ? "..." : "",
						  (int)strlen(e) - 2, e, suf[0], suf[1]);
			}
			return jval_error(&c, err, "unknown field '%s%s'", key64,
					  strlen(it->string) > 64 ? "..." : "");
		}
	}
	return 0;
}

static int missing(const struct jval *obj, const struct jval *c, struct ts_error *err)
{
	/* Point at the object that lacks the field, but name the field's path. */
	char where[TS_WHERE_MAX];
	jval_where(obj, where, sizeof(where));
	return ts_error_set(err, TS_EINPUT, "%s: %s: missing field", where, c->path);
}

int jval_get_number(const struct jval *obj, const char *key, bool required, double *out,
		    struct ts_error *err)
{
	struct jval c;
	if (!jval_child(obj, key, &c))
		return required ? missing(obj, &c, err) : 0;
	if (!cJSON_IsNumber(c.j))
		return jval_error(&c, err, "expected a number, got %s", type_name(c.j));
	if (!isfinite(c.j->valuedouble))
		return jval_error(&c, err, "too large (beyond a double's 1.8e308)");
	*out = c.j->valuedouble;
	return 0;
}

const char *json_num_text(double v, char *buf, size_t n)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (!isfinite(v) || strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

int jval_expect_whole(const struct jval *v, struct ts_error *err)
{
	char nb[32];
	double d;
	if (!cJSON_IsNumber(v->j))
		return jval_error(v, err, "expected an integer, got %s", type_name(v->j));
	d = v->j->valuedouble;
	if (isinf(d)) /* (a literal past a double's range; found by review: "got inf") */
		return jval_error(v, err, "too large (beyond a double's 1.8e308)");
	if (!isfinite(d) || d != floor(d))
		return jval_error(v, err, "expected an integer, got %s",
				  json_num_text(d, nb, sizeof(nb)));
	return 0;
}

int jval_get_int(const struct jval *obj, const char *key, bool required, long long min,
		 long long max, long long *out, struct ts_error *err)
{
	struct jval c;
	double v;
	if (!jval_child(obj, key, &c))
		return required ? missing(obj, &c, err) : 0;
	if (cJSON_IsNumber(c.j) && isinf(c.j->valuedouble))
		return jval_error(&c, err, "must be between %lld and %lld (got a number past a "
				  "double's 1.8e308)", min, max);
	if (jval_expect_whole(&c, err))
		return TS_EINPUT;
	v = c.j->valuedouble;
	/* (beyond 2^53 too: a whole number, printed whole below 1e18, as
	 * the double read, the nearest to the text past 2^53; found by
	 * review: a seed of 2^53 printed as 9.0072e+15) */
	if (v < (double)min || v > (double)max)
		return jval_error(&c, err, "must be between %lld and %lld (got %.*g)", min, max,
				  jval_whole_prec(v), v + 0.0);
	*out = (long long)v;
	return 0;
}

int jval_get_bool(const struct jval *obj, const char *key, bool required, bool *out,
		  struct ts_error *err)
{
	struct jval c;
	if (!jval_child(obj, key, &c))
		return required ? missing(obj, &c, err) : 0;
	if (!cJSON_IsBool(c.j))
		return jval_error(&c, err, "expected true or false, got %s", type_name(c.j));
	*out = cJSON_IsTrue(c.j);
	return 0;
}

int jval_get_string(const struct jval *obj, const char *key, bool required, const char **out,
		    struct ts_error *err)
{
	struct jval c;
	if (!jval_child(obj, key, &c))
		return required ? missing(obj, &c, err) : 0;
	if (!cJSON_IsString(c.j))
		return jval_error(&c, err, "expected a string, got %s", type_name(c.j));
	*out = c.j->valuestring;
	return 0;
}

int jval_get_enum(const struct jval *obj, const char *key, bool required,
		  const char *const *names, int *out, struct ts_error *err)
{
	const char *s = NULL;
	struct jval c;
	char list[256];
	size_t used = 0;
	int rc = jval_get_string(obj, key, required, &s, err);
	if (rc || !s)
		return rc;
	for (int i = 0; names[i]; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	list[0] = '\0';
	for (int i = 0; names[i] && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 names[i]);
	jval_child(obj, key, &c);
	return jval_error(&c, err, "unknown value '%s' (expected one of: %s)", s, list);
}

bool jval_quantity_node(const struct jval *obj, const char *key, enum ts_qty kind,
			struct jval *out)
{
	char k2[128];
	if (jval_child(obj, key, out))
		return true;
	for (const char *const *suf = units_suffixes(kind); *suf; suf++) {
		snprintf(k2, sizeof(k2), "%s%s", key, *suf);
		if (jval_child(obj, k2, out))
			return true;
	}
	return false;
}

int jval_get_quantity(const struct jval *obj, const char *key, enum ts_qty kind, bool required,
		      bool allow_zero, double *out, struct ts_error *err)
{
	const char *const *suf = units_suffixes(kind);
	struct jval found = { 0 }, c;
	double value = 0;
	int nfound = 0;
	char k2[128];

	if (jval_child(obj, key, &c)) {
		nfound++;
		found = c;
		if (cJSON_IsString(c.j)) {
			const char *why = NULL;
			if (units_parse(c.j->valuestring, kind, &value, &why))
				return jval_error(&c, err, "bad quantity '%s': %s", c.j->valuestring, why);
		} else if (cJSON_IsNumber(c.j)) {
			return jval_error(&c, err,
					  "a bare number needs a unit: write it as a string with "
					  "units or use a key with a unit suffix such as %s%s",
					  key, suf[0]);
		} else {
			return jval_error(&c, err, "expected a quantity with units, got %s",
					  type_name(c.j));
		}
	}
	for (int i = 0; suf[i]; i++) {
		snprintf(k2, sizeof(k2), "%s%s", key, suf[i]);
		if (!jval_child(obj, k2, &c))
			continue;
		if (nfound++)
			return jval_error(&c, err, "given twice (also as '%s')",
					  found.path[0] ? found.path : key);
		found = c;
		if (!cJSON_IsNumber(c.j))
			return jval_error(&c, err, "expected a number, got %s", type_name(c.j));
		value = c.j->valuedouble * units_suffix_scale(suf[i], kind);
	}
	if (!nfound) {
		if (!required)
			return 0;
		jval_child(obj, key, &c);
		return missing(obj, &c, err);
	}
	if (!isfinite(value)) /* (a finite number times its unit; found by review) */
		return jval_error(&found, err, "too large (beyond a double's 1.8e308 in base units)");
	if (value < 0 || (!allow_zero && value == 0)) {
		/* where 0 is allowed, "not negative" (found by review: a
		 * calibration's launch_us -1 was told "must be positive" while
		 * 0 was accepted) */
		const char *want = allow_zero ? "must not be negative" : "must be positive";
		if (cJSON_IsString(found.j))
			return jval_error(&found, err, "%s (got '%s')", want, found.j->valuestring);
		return jval_error(&found, err, "%s (got %g)", want, found.j->valuedouble);
	}
	*out = value;
	return 0;
}
