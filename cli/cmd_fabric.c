/* cmd_fabric.c: `trainsim fabric`: not built yet; says so instead of pretending. */
#include "cli/cli.h"

int cmd_fabric(int argc, char **argv)
{
	return cli_planned(argc, argv);
}
