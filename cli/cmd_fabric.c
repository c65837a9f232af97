/* cmd_fabric.c: `trainsim fabric`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_fabric(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'fabric' is not implemented in this version\n");
	return 2;
}
