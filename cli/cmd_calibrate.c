/* cmd_calibrate.c: `trainsim calibrate`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_calibrate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'calibrate' is not implemented in this version\n");
	return 2;
}
