/* fileio.c: whole-file reads and atomic writes (temp file + rename). */
#include "common/fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fileio_read_all(const char *path, size_t max_bytes, char **out, size_t *len,
		    struct ts_error *err)
{
	FILE *f;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	struct stat st;

	*out = NULL;
	*len = 0;
	f = fopen(path, "rb");
	if (!f)
		return ts_error_set(err, TS_EINPUT, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return ts_error_set(err, TS_EINPUT, "'%s' is a directory, not a file", path);
	}
	for (;;) {
		if (n + 4096 + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, ncap);
			if (!nb) {
				free(buf);
				fclose(f);
				return ts_error_set(err, TS_ENOMEM, "'%s': out of memory", path);
			}
			buf = nb;
			cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (n > max_bytes) {
			free(buf);
			fclose(f);
			return ts_error_set(err, TS_EINPUT, "'%s' is larger than %zu bytes", path,
					    max_bytes);
		}
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return ts_error_set(err, TS_EINPUT, "cannot read '%s'", path);
	}
	fclose(f);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int afile_open(struct afile *a, const char *path, struct ts_error *err)
{
	size_t n = strlen(path) + 16;
	int fd;

	*a = (struct afile)AFILE_INIT;
	{
		/* the rename would replace a device, FIFO or socket (as root,
		 * even /dev/null) with a plain file */
		struct stat st;
		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return ts_error_set(err, TS_EIO, "'%s' exists and is not a regular file",
					    path);
	}
	a->path = malloc(strlen(path) + 1);
	a->tmp_path = malloc(n);
	if (!a->path || !a->tmp_path) {
		afile_abort(a);
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	}
	memcpy(a->path, path, strlen(path) + 1);
	snprintf(a->tmp_path, n, "%s.tmp.XXXXXX", path);
	fd = mkstemp(a->tmp_path);
	if (fd < 0) {
		int e = errno;
		free(a->tmp_path);
		a->tmp_path = NULL;
		afile_abort(a);
		return ts_error_set(err, TS_EIO, "cannot create '%s': %s", path, strerror(e));
	}
	a->f = fdopen(fd, "w");
	if (!a->f) {
		close(fd);
		afile_abort(a);
		return ts_error_set(err, TS_EIO, "cannot write '%s'", path);
	}
	fchmod(fd, 0644);
	return 0;
}

int afile_commit(struct afile *a, struct ts_error *err)
{
	int bad = 0;
	if (!a->f)
		return ts_error_set(err, TS_EIO, "internal: commit of an unopened file");
	if (fflush(a->f) != 0 || ferror(a->f) || fsync(fileno(a->f)) != 0)
		bad = errno ? errno : EIO;
	if (fclose(a->f) != 0 && !bad)
		bad = errno ? errno : EIO;
	a->f = NULL;
	if (!bad && rename(a->tmp_path, a->path) != 0)
		bad = errno;
	if (bad) {
		ts_error_set(err, TS_EIO, "cannot write '%s': %s", a->path, strerror(bad));
		afile_abort(a);
		return TS_EIO;
	}
	free(a->tmp_path);
	a->tmp_path = NULL;
	afile_abort(a);
	return 0;
}

void afile_abort(struct afile *a)
{
	if (a->f) {
		fclose(a->f);
		a->f = NULL;
	}
	if (a->tmp_path) {
		unlink(a->tmp_path);
		free(a->tmp_path);
		a->tmp_path = NULL;
	}
	free(a->path);
	a->path = NULL;
}

int fileio_write_atomic(const char *path, const void *data, size_t len, struct ts_error *err)
{
	struct afile a;
	int rc = afile_open(&a, path, err);
	if (rc)
		return rc;
	if (len && fwrite(data, 1, len, a.f) != len) {
		afile_abort(&a);
		return ts_error_set(err, TS_EIO, "cannot write '%s'", path);
	}
	return afile_commit(&a, err);
}

/* The canonical form of path's directory joined to its last component
 * (heap; NULL if the directory does not resolve). */
static char *canonical(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char *dir, *real, *out;
	size_t n;
	if (slash == path)
		dir = strdup("/");
	else if (slash)
		dir = strndup(path, (size_t)(slash - path));
	else
		dir = strdup(".");
	if (!dir)
		return NULL;
	real = realpath(dir, NULL);
	free(dir);
	if (!real)
		return NULL;
	n = strlen(real) + strlen(base) + 2;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s/%s", real, base);
	free(real);
	return out;
}

bool fileio_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	char *ca, *cb;
	bool same;
	if (!strcmp(a, b))
		return true;
	if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	ca = canonical(a);
	cb = canonical(b);
	same = ca && cb && !strcmp(ca, cb);
	free(ca);
	free(cb);
	return same;
}
