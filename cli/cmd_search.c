/* cmd_search.c: `trainsim search`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_search(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'search' is not implemented in this version\n");
	return 2;
}
