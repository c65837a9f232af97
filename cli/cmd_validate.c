/* cmd_validate.c: `trainsim validate`: not built yet; says so instead of pretending. */
#include "cli/cli.h"

int cmd_validate(int argc, char **argv)
{
	return cli_planned(argc, argv);
}
