/* testutil.c: helpers shared by the Check unit tests. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Files tu_tmpfile made, removed when the process that made them exits
 * (Check runs each test in a forked child: a child removes only its own). */
struct tmp_made {
	char path[256];
	pid_t owner;
};
static struct tmp_made *tmp_made;
static int tmp_count, tmp_cap;
static pid_t tmp_hook_pid;

static void tmp_cleanup(void)
{
	pid_t me = getpid();
	for (int i = 0; i < tmp_count; i++)
		if (tmp_made[i].owner == me && tmp_made[i].path[0]) {
			unlink(tmp_made[i].path);
			tmp_made[i].path[0] = '\0';
		}
}

static void tmp_remember(const char *path)
{
	pid_t me = getpid();
	if (tmp_hook_pid != me) {
		/* a forked child inherits the parent's hook; one more per process
		 * is harmless (the cleanup is idempotent) */
		ck_assert_int_eq(atexit(tmp_cleanup), 0);
		tmp_hook_pid = me;
	}
	if (tmp_count == tmp_cap) {
		int nc = tmp_cap ? 2 * tmp_cap : 32;
		struct tmp_made *g = realloc(tmp_made, (size_t)nc * sizeof(*g));
		ck_assert_ptr_nonnull(g);
		tmp_made = g;
		tmp_cap = nc;
	}
	snprintf(tmp_made[tmp_count].path, sizeof(tmp_made[tmp_count].path), "%s", path);
	tmp_made[tmp_count++].owner = me;
}

const char *tu_tmpfile(int slot, const char *suffix, const char *text)
{
	static char paths[8][256];
	char *p = paths[slot & 7];
	size_t n = strlen(text);
	int fd;
	FILE *f;

	snprintf(p, 256, "/tmp/trainsim_test_XXXXXX%s", suffix);
	fd = mkstemps(p, (int)strlen(suffix));
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, n, f), n);
	fclose(f);
	tmp_remember(p);
	return p;
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

const char *tu_src(int slot, const char *rel)
{
	static char paths[8][512];
	snprintf(paths[slot & 7], 512, "%s/%s", TS_SOURCE_DIR, rel);
	return paths[slot & 7];
}
