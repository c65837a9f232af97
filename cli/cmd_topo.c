/* cmd_topo.c: `trainsim topo`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_topo(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'topo' is not implemented in this version\n");
	return 2;
}
