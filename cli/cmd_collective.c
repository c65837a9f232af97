/* cmd_collective.c: `trainsim collective`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_collective(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'collective' is not implemented in this version\n");
	return 2;
}
