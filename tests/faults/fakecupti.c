/* A stand-in CUPTI 13 for tests (no GPU needed): it reports its version and
 * takes NVTX's injection call, writing what it was given to $FAKECUPTI_OUT;
 * it has none of the other entry points, so the injection library cannot
 * trace with it and must say which one it lacks. Built as
 * libcupti.so.13. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int cuptiGetVersion(uint32_t *version)
{
	*version = 130000;
	return 0;
}

int InitializeInjectionNvtx2(const void *get_export_table)
{
	const char *out = getenv("FAKECUPTI_OUT");
	FILE *f = out ? fopen(out, "w") : NULL;

	if (f) {
		fprintf(f, "nvtx %p\n", get_export_table);
		fclose(f);
	}
	return 1;
}
