/* gpuwhy check: placeholder until the machine doctor lands (see src/check/). */
#include <stdio.h>

#include "../util/util.h"
#include "cmds.h"

int cmd_check(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	gw_error("'gpuwhy check' is not built yet in this version");
	return 2;
}
