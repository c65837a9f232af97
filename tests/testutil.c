/* testutil.c: helpers shared by the Check unit tests. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* tu_run's directory for the temporary files of one test program ("" when
 * a test runs outside tu_run: then /tmp). Check runs each test in a forked
 * child, which may end without cleaning up (a failed assertion, a
 * timeout), so the parent removes the whole directory after the run. */
static char tmp_dir[64];

const char *tu_tmpfile(int slot, const char *suffix, const char *text)
{
	static char paths[8][256];
	char *p = paths[slot & 7];
	size_t n = strlen(text);
	int fd;
	FILE *f;

	snprintf(p, 256, "%s/trainsim_test_XXXXXX%s", tmp_dir[0] ? tmp_dir : "/tmp", suffix);
	fd = mkstemps(p, (int)strlen(suffix));
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, n, f), n);
	fclose(f);
	return p;
}

/* Remove dir and the files in it (the tests make no subdirectories). */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/trainsim_tests_XXXXXX");
	if (!mkdtemp(tmp_dir))
		tmp_dir[0] = '\0'; /* fall back to /tmp */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (tmp_dir[0])
		remove_dir(tmp_dir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

const char *tu_src(int slot, const char *rel)
{
	static char paths[8][512];
	snprintf(paths[slot & 7], 512, "%s/%s", TS_SOURCE_DIR, rel);
	return paths[slot & 7];
}
