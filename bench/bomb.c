/* Writes a SYNTHETIC compression bomb (tests/unit/bomb.h) for
 * bench/bomb.sh: bomb CHUNKS OUT.gwr [repeat]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bomb.h"

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "repeat"))) {
		fprintf(stderr, "usage: bomb CHUNKS OUT.gwr [repeat]\n");
		return 2;
	}
	return bomb_write(argv[2], (unsigned)atoi(argv[1]), argc == 4) ? 0 : 1;
}
