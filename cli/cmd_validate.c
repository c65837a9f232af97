/* cmd_validate.c: `trainsim validate`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_validate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'validate' is not implemented in this version\n");
	return 2;
}
