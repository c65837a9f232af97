/* testutil.c: helpers shared by the Check unit tests. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
