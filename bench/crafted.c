/* Writes a SYNTHETIC crafted recording (tests/unit/crafted.h) for
 * bench/crafted.sh: crafted KIND N OUT, KIND one of descending, streams,
 * processes, py_ids. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crafted.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: crafted KIND N OUT.gwr\n");
		return 2;
	}
	for (int k = 0; k < CRAFTED_NKINDS; k++)
		if (!strcmp(argv[1], crafted_names[k]))
			return crafted_write(argv[3], (enum crafted_kind)k, (unsigned)atoi(argv[2])) ? 1 : 0;
	fprintf(stderr, "crafted: unknown kind %s\n", argv[1]);
	return 2;
}
