/* cmd_model.c: `trainsim model`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_model(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'model' is not implemented in this version\n");
	return 2;
}
