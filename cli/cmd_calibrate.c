/* cmd_calibrate.c: `trainsim calibrate`: not built yet; says so instead of pretending. */
#include "cli/cli.h"

int cmd_calibrate(int argc, char **argv)
{
	return cli_planned(argc, argv);
}
