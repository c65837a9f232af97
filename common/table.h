/* table.h: aligned text tables for the readable output of every subcommand.
 * Cells are formatted into owned strings; columns are right-aligned when
 * the header says so (numbers), left otherwise. */
#ifndef TS_TABLE_H
#define TS_TABLE_H

#include <stdio.h>

#define TABLE_MAX_COLS 24

struct table {
	int ncols;                       /* columns */
	const char *head[TABLE_MAX_COLS];/* header labels (not owned) */
	int right[TABLE_MAX_COLS];       /* 1 = right-align column */
	char **cells;                    /* nrows * ncols owned strings */
	int nrows;                       /* complete or current rows */
	int cur;                         /* next column of the current row */
	int cap;                         /* allocated rows */
	int oom;                         /* set when an allocation failed */
};

/* Headers starting with '>' are right-aligned (the '>' is not printed). */
void table_init(struct table *t, int ncols, const char *const *headers);
void table_release(struct table *t);
/* Append one cell to the current row (a new row starts after ncols cells). */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print with a header line, a rule, and two spaces between columns. */
void table_print(const struct table *t, FILE *out);

#endif
