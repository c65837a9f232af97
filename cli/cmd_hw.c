/* cmd_hw.c: `trainsim hw`: not built yet; says so instead of pretending. */
#include "cli/cli.h"

int cmd_hw(int argc, char **argv)
{
	return cli_planned(argc, argv);
}
