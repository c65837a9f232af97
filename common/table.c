/* table.c: aligned text tables. */
#include "common/table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

void table_init(struct table *t, int ncols, const char *const *headers)
{
	TS_ASSERT(ncols > 0 && ncols <= TABLE_MAX_COLS);
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (int i = 0; i < ncols; i++) {
		t->right[i] = headers[i][0] == '>';
		t->head[i] = headers[i] + t->right[i];
	}
}

void table_release(struct table *t)
{
	int n = t->nrows * t->ncols + (t->cur ? t->cur : 0);
	if (t->cells) {
		for (int i = 0; i < n; i++)
			free(t->cells[i]);
		free(t->cells);
	}
	memset(t, 0, sizeof(*t));
}

void table_cell(struct table *t, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	size_t len;
	int idx;

	if (t->oom)
		return;
	if (t->cur == 0 && t->nrows >= t->cap) {
		int ncap = t->cap ? t->cap * 2 : 16;
		char **nc = realloc(t->cells, sizeof(char *) * (size_t)ncap * (size_t)t->ncols);
		if (!nc) {
			t->oom = 1;
			return;
		}
		t->cells = nc;
		t->cap = ncap;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	len = strlen(buf);
	idx = t->nrows * t->ncols + t->cur;
	t->cells[idx] = malloc(len + 1);
	if (!t->cells[idx]) {
		t->oom = 1;
		return;
	}
	memcpy(t->cells[idx], buf, len + 1);
	if (++t->cur == t->ncols) {
		t->cur = 0;
		t->nrows++;
	}
}

void table_print(const struct table *t, FILE *out)
{
	int w[TABLE_MAX_COLS];
	for (int c = 0; c < t->ncols; c++) {
		w[c] = (int)strlen(t->head[c]);
		for (int r = 0; r < t->nrows; r++) {
			int l = (int)strlen(t->cells[r * t->ncols + c]);
			if (l > w[c])
				w[c] = l;
		}
	}
	for (int c = 0; c < t->ncols; c++)
		fprintf(out, "%s%*s%s", c ? "  " : "", t->right[c] ? w[c] : -w[c], t->head[c],
			c == t->ncols - 1 ? "\n" : "");
	for (int c = 0; c < t->ncols; c++) {
		fputs(c ? "  " : "", out);
		for (int i = 0; i < w[c]; i++)
			fputc('-', out);
	}
	fputc('\n', out);
	for (int r = 0; r < t->nrows; r++)
		for (int c = 0; c < t->ncols; c++)
			fprintf(out, "%s%*s%s", c ? "  " : "", t->right[c] ? w[c] : -w[c],
				t->cells[r * t->ncols + c], c == t->ncols - 1 ? "\n" : "");
}
