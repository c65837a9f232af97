/* cmd_predict.c: `trainsim predict`: not built yet; says so instead of pretending. */
#include <stdio.h>

#include "cli/cli.h"

int cmd_predict(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "trainsim: error: 'predict' is not implemented in this version\n");
	return 2;
}
