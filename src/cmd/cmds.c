/* What every subcommand shares, set once before one runs. */
#include "../format/format.h"
#include "../util/outfile.h"
#include "cmds.h"

void cmds_init(void)
{
	/* no output replaces a recording, whatever its name (--force included):
	 * `report --force --html old.gwr` meant --html=OUT old.gwr */
	outfile_protect(GW_MAGIC, sizeof(GW_MAGIC) - 1);
}
