/* cmd_search.c: `trainsim search`: not built yet; says so instead of pretending. */
#include "cli/cli.h"

int cmd_search(int argc, char **argv)
{
	return cli_planned(argc, argv);
}
