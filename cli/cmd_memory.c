/* cmd_memory.c: `trainsim memory`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_memory(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'memory' is not implemented in this version\n");
	return 2;
}
