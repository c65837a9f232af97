/* fileio.h: reading whole files and writing output files atomically.
 *
 * Output files are written to a temporary file in the same directory and
 * renamed over the target on commit, so a failed or interrupted run leaves
 * nothing half-written on disk. */
#ifndef TS_FILEIO_H
#define TS_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

/* Read path into a NUL-terminated heap buffer (caller frees *out). Files
 * larger than max_bytes are refused as absurd input. */
int fileio_read_all(const char *path, size_t max_bytes, char **out, size_t *len,
		    struct ts_error *err);

struct afile {
	FILE *f;          /* write here between open and commit */
	char *path;       /* final path (owned) */
	char *tmp_path;   /* temporary path in the same directory (owned) */
};

#define AFILE_INIT { NULL, NULL, NULL }

/* Open a temporary file beside path (beside the file a symbolic link at
 * path names, which is what commit replaces; the link stays). Until commit
 * or abort, SIGINT, SIGTERM and SIGHUP remove it before the process ends. */
int afile_open(struct afile *a, const char *path, struct ts_error *err);
/* Whether an output file name is empty or blanks alone (afile_open refuses
 * it; a caller may say first which option gave it). */
bool ts_path_blank(const char *path);
/* Flush, sync and close the temporary, not yet over path (commit puts it
 * there, abort drops it); on failure it is removed. So a caller can learn
 * that a file could be written before it writes anything else. */
int afile_finish(struct afile *a, struct ts_error *err);
/* Flush, sync and rename over path (a finished file: rename); on failure
 * the temporary is removed. */
int afile_commit(struct afile *a, struct ts_error *err);
/* Drop the temporary file (safe after commit, and on an unopened afile). */
void afile_abort(struct afile *a);

/* Whether paths a and b name one file, symbolic links followed: the same
 * inode when both exist, else the same canonical directory and last
 * component ("x.json", "./x.json" and "$PWD/x.json" are one file). */
bool fileio_same_file(const char *a, const char *b);

/* Write len bytes to path atomically. */
int fileio_write_atomic(const char *path, const void *data, size_t len, struct ts_error *err);

#endif
