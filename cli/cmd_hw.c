/* cmd_hw.c: `trainsim hw`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_hw(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'hw' is not implemented in this version\n");
	return 2;
}
