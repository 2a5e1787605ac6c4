/* A batch fix's replays in words (C3), for the terminal and the HTML: the
 * per-sample speed-up at each batch factor, which the figures use, and
 * which factors need more memory than the run had room for. */
#include <string.h>

#include "../util/util.h"
#include "render.h"

#define ADDF_AT(buf, len, ...) \
	do { \
		size_t used_ = strlen(buf); \
		if (used_ < (len)) \
			snprintf((buf) + used_, (len) - used_, __VA_ARGS__); \
	} while (0)

int batch_text(char *buf, size_t len, const struct finding *fd)
{
	unsigned over = fd->batch_n;
	double at = fd->batch_k[fd->batch_at];

	buf[0] = 0;
	if (!fd->batch_n || !len)
		return 0;
	snprintf(buf, len, "per sample, by batch size:");
	for (unsigned i = 0; i < fd->batch_n; i++) {
		int fits = !(fd->batch_mem_k > 0) || fd->batch_k[i] <= fd->batch_mem_k;

		if (!fits && over == fd->batch_n)
			over = i;
		ADDF_AT(buf, len, "%s x%.0f %.3gx%s", i ? "," : "", fd->batch_k[i], fd->batch_x[i], fits ? "" : "*");
	}
	if (fd->batch_at + 1 < over)
		ADDF_AT(buf, len, ". The gain above is at x%.0f, where doubling the batch again adds under 10%%: "
			"the GPU is full.", at);
	else
		ADDF_AT(buf, len, ". The gain above is at x%.0f, the largest%s.", at,
			over < fd->batch_n ? " that fits" : " replayed");
	if (over < fd->batch_n)
		ADDF_AT(buf, len, " *: more than the x%.0f the GPU's memory allows if everything in it grew with "
			"the batch (the weights do not).", fd->batch_mem_k);
	ADDF_AT(buf, len, " Were every kernel's grid to grow with the batch (the replay keeps those that "
		"already cover the SMs, and the optimizer's), x%.0f would give %.3gx.", at,
		fd->batch_lo);
	return 1;
}
