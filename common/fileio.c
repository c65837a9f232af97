/* fileio.c: whole-file reads and atomic writes (temp file + rename). */
#include "common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- temporary files removed on SIGINT/SIGTERM/SIGHUP ------------------------ */

/* The temporary files open now; a signal handler may only unlink fixed
 * buffers, so a few slots of PATH_MAX each. */
#define TMP_SLOTS 4
static char tmp_slot[TMP_SLOTS][PATH_MAX];
static volatile sig_atomic_t tmp_used[TMP_SLOTS];
static const int tmp_sigs[] = { SIGINT, SIGTERM, SIGHUP };
#define TMP_NSIGS ((int)(sizeof(tmp_sigs) / sizeof(tmp_sigs[0])))
static struct sigaction tmp_old[TMP_NSIGS];

static void tmp_on_signal(int sig)
{
	for (int i = 0; i < TMP_SLOTS; i++)
		if (tmp_used[i])
			unlink(tmp_slot[i]);
	for (int k = 0; k < TMP_NSIGS; k++)
		if (tmp_sigs[k] == sig)
			sigaction(sig, &tmp_old[k], NULL);
	raise(sig);
}

/* Remember a temporary file (a path too long for a slot, or no slot free,
 * is simply not removed on a signal). The handler goes on each signal
 * whose disposition is not already it, keeping the one it replaces to pass
 * the signal on; a signal the process ignores (nohup, a background job)
 * stays ignored: the run goes on and writes its file. */
static void tmp_track(const char *path)
{
	for (int k = 0; k < TMP_NSIGS; k++) {
		struct sigaction cur, sa;
		if (sigaction(tmp_sigs[k], NULL, &cur) != 0 || cur.sa_handler == SIG_IGN ||
		    cur.sa_handler == tmp_on_signal)
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = tmp_on_signal;
		sigemptyset(&sa.sa_mask);
		tmp_old[k] = cur;
		sigaction(tmp_sigs[k], &sa, NULL);
	}
	if (strlen(path) >= PATH_MAX)
		return;
	for (int i = 0; i < TMP_SLOTS; i++)
		if (!tmp_used[i]) {
			memcpy(tmp_slot[i], path, strlen(path) + 1);
			/* the path is whole before a handler can see the slot used */
			atomic_signal_fence(memory_order_seq_cst);
			tmp_used[i] = 1;
			return;
		}
}

static void tmp_untrack(const char *path)
{
	for (int i = 0; i < TMP_SLOTS; i++)
		if (tmp_used[i] && !strcmp(tmp_slot[i], path))
			tmp_used[i] = 0;
}

/* path with its last component's symbolic links followed (heap; a copy of
 * path when it is not a link or does not exist): writing "out.json" that
 * links to "a.json" writes a.json and keeps the link. */
static char *follow_links(const char *path)
{
	char *cur = strdup(path);
	for (int hop = 0; cur && hop < 40; hop++) {
		struct stat st;
		char target[PATH_MAX];
		ssize_t n;
		if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
			break;
		n = readlink(cur, target, sizeof(target) - 1);
		if (n < 0)
			break;
		target[n] = '\0';
		const char *slash = strrchr(cur, '/');
		char *next;
		if (target[0] == '/' || !slash) {
			next = strdup(target);
		} else { /* relative to the link's directory */
			size_t d = (size_t)(slash - cur) + 1, len = d + strlen(target) + 1;
			next = malloc(len);
			if (next) {
				memcpy(next, cur, d);
				memcpy(next + d, target, strlen(target) + 1);
			}
		}
		free(cur);
		cur = next;
	}
	return cur;
}

/* How long a named pipe's reader waits for a writer to open it. */
#define PIPE_WAIT_MS 5000

/* Wait on fd, a pipe opened without blocking, until a writer holds it:
 * a writer that opens it late is read (found by review: 'mkfifo p;
 * trainsim ... p & cat plan.json > p' read it empty), one that never
 * does is an error after PIPE_WAIT_MS rather than a wait forever. A
 * pipe whose writer is there (bash's <(...)) returns at once, however
 * slowly it writes. A byte read on the way is left in *first (*nfirst
 * 1). Returns 0 (read on, blocking), 1 (no writer in time) or -1
 * (errno). */
static int pipe_wait(int fd, char *first, int *nfirst)
{
	struct pollfd pfd = { fd, POLLIN, 0 };
	int left = PIPE_WAIT_MS;
	for (;;) {
		ssize_t r = read(fd, first, 1);
		if (r == 1) {
			*nfirst = 1;
			return 0;
		}
		/* no data but a writer (EAGAIN), or a writer that came and
		 * went (end of file after a hang-up): read on */
		if ((r < 0 && errno == EAGAIN) || (r == 0 && (pfd.revents & POLLHUP)))
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (left <= 0)
			return 1;
		/* no writer yet: poll in slices, so a writer that opens and
		 * then writes slowly is seen by the read above */
		int slice = left < 100 ? left : 100, pr = poll(&pfd, 1, slice);
		if (pr < 0 && errno != EINTR)
			return -1;
		left -= slice;
	}
}

int fileio_read_all(const char *path, size_t max_bytes, char **out, size_t *len,
		    struct ts_error *err)
{
	FILE *f;
	char *buf = NULL, first = 0;
	size_t cap = 0, n = 0;
	int nfirst = 0;
	struct stat st;

	*out = NULL;
	*len = 0;
	memset(&st, 0, sizeof(st));
	{
		/* without blocking: opening a named pipe that no one writes
		 * would wait forever (found by review); a pipe waits for its
		 * writer a while (pipe_wait), then its reads block as usual */
		int fd = open(path, O_RDONLY | O_NONBLOCK), fl, w = 0;
		if (fd < 0)
			return ts_error_set(err, TS_EINPUT, "cannot open '%s': %s", path, strerror(errno));
		if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
			w = pipe_wait(fd, &first, &nfirst);
		fl = fcntl(fd, F_GETFL);
		if (w || fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || !(f = fdopen(fd, "rb"))) {
			int e = errno;
			close(fd);
			if (w > 0)
				return ts_error_set(err, TS_EINPUT, "'%s' is a pipe that no one opened "
						    "to write within %d s", path, PIPE_WAIT_MS / 1000);
			return ts_error_set(err, TS_EINPUT, "cannot open '%s': %s", path, strerror(e));
		}
	}
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
		if (nfirst) { /* the byte pipe_wait read */
			buf[n++] = first;
			nfirst = 0;
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
	if (n == 0 && S_ISFIFO(st.st_mode)) {
		free(buf);
		return ts_error_set(err, TS_EINPUT, "'%s' is a pipe with nothing written to it", path);
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int afile_open(struct afile *a, const char *user_path, struct ts_error *err)
{
	char *path;
	size_t n;
	int fd;
	mode_t mode;

	*a = (struct afile)AFILE_INIT;
	/* (found by review: refused only after the run); a name of blanks
	 * alone is an empty one gone wrong, not a file to make (found by a
	 * fuzzer: --svg ' ' wrote a file named by a space) */
	if (ts_path_blank(user_path))
		return ts_error_set(err, TS_EINPUT, "an output file name is empty or blank");
	path = follow_links(user_path);
	if (!path)
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	n = strlen(path) + 16;
	{
		/* still a link after follow_links' 40 hops: a loop, which the
		 * rename would replace with a plain file */
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
			free(path);
			return ts_error_set(err, TS_EIO, "'%s': too many levels of symbolic links",
					    user_path);
		}
	}
	{
		/* (stat on the name as given: it follows /proc's links to a
		 * pipe or socket, which follow_links cannot; found by an audit:
		 * --trace /dev/stdout with standard output a pipe was refused
		 * as "cannot create: No such file or directory") */
		struct stat st, so;
		bool there = stat(user_path, &st) == 0 || stat(path, &st) == 0;
		/* the file standard output or error goes to (/dev/stdout with
		 * stdout redirected): the rename would put the output in place
		 * of what the program prints there (found by review) */
		for (int fd0 = 1; fd0 <= 2; fd0++)
			if (there && fstat(fd0, &so) == 0 && st.st_dev == so.st_dev &&
			    st.st_ino == so.st_ino) {
				free(path);
				return ts_error_set(err, TS_EIO,
						    "'%s' is where standard %s goes; name "
						    "another file",
						    user_path, fd0 == 1 ? "output" : "error");
			}
		/* the rename would replace a device, FIFO or socket (as root,
		 * even /dev/null) with a plain file */
		if (there && !S_ISREG(st.st_mode)) {
			free(path);
			return ts_error_set(err, TS_EIO, "'%s' exists and is not a regular file",
					    user_path);
		}
		/* the file replaced keeps its permissions, a new one gets
		 * what creating it would (0666 less the umask); found by an
		 * audit: every write left 0644, so a private 0640 file became
		 * world-readable */
		if (there) {
			mode = st.st_mode & 0777; /* (not setuid, setgid or sticky) */
		} else {
			mode_t um = umask(0);
			umask(um);
			mode = 0666 & ~um;
		}
	}
	a->path = path;
	a->tmp_path = malloc(n);
	if (!a->tmp_path) {
		afile_abort(a);
		return ts_error_set(err, TS_ENOMEM, "out of memory");
	}
	snprintf(a->tmp_path, n, "%s.tmp.XXXXXX", path);
	fd = mkstemp(a->tmp_path);
	if (fd >= 0)
		tmp_track(a->tmp_path);
	if (fd < 0) {
		int e = errno;
		free(a->tmp_path);
		a->tmp_path = NULL;
		afile_abort(a); /* (frees path: the message names user_path) */
		return ts_error_set(err, TS_EIO, "cannot create '%s': %s", user_path, strerror(e));
	}
	a->f = fdopen(fd, "w");
	if (!a->f) {
		close(fd);
		afile_abort(a);
		return ts_error_set(err, TS_EIO, "cannot write '%s'", user_path);
	}
	fchmod(fd, mode);
	return 0;
}

int afile_finish(struct afile *a, struct ts_error *err)
{
	int bad = 0;
	if (!a->f)
		return ts_error_set(err, TS_EIO, "internal: finish of an unopened file");
	if (fflush(a->f) != 0 || ferror(a->f) || fsync(fileno(a->f)) != 0)
		bad = errno ? errno : EIO;
	if (fclose(a->f) != 0 && !bad)
		bad = errno ? errno : EIO;
	a->f = NULL;
	if (bad) {
		ts_error_set(err, TS_EIO, "cannot write '%s': %s", a->path, strerror(bad));
		afile_abort(a);
		return TS_EIO;
	}
	return 0;
}

int afile_commit(struct afile *a, struct ts_error *err)
{
	int bad = 0, rc;
	if (a->f && (rc = afile_finish(a, err)))
		return rc;
	if (!a->tmp_path)
		return ts_error_set(err, TS_EIO, "internal: commit of an unopened file");
	if (rename(a->tmp_path, a->path) != 0)
		bad = errno;
	if (!bad)
		tmp_untrack(a->tmp_path);
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
		tmp_untrack(a->tmp_path);
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

bool fileio_same_file(const char *a0, const char *b0)
{
	struct stat sa, sb;
	char *a, *b, *ca = NULL, *cb = NULL;
	bool same;
	if (!strcmp(a0, b0))
		return true;
	/* (a link is the file it is written through, existing or not) */
	a = follow_links(a0);
	b = follow_links(b0);
	if (!a || !b)
		same = false;
	else if (!strcmp(a, b))
		same = true;
	else if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
		same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	else {
		ca = canonical(a);
		cb = canonical(b);
		same = ca && cb && !strcmp(ca, cb);
	}
	free(a);
	free(b);
	free(ca);
	free(cb);
	return same;
}

bool ts_path_blank(const char *path)
{
	return !path[strspn(path, " \t\r\n\v\f")];
}
