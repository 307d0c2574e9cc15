#include "cli/cli.h"
int cmd_show(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 2;
}
