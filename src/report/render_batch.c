/* A batch fix's replays in words (C3), for the terminal and the HTML: the
 * per-sample speed-up at each batch factor, which the figures use, and
 * which factors need more memory than the run had room for. */
#include <errno.h>

#include "../util/util.h"
#include "render.h"

int batch_text(struct strbuf *sb, const struct finding *fd)
{
	unsigned over = fd->batch_n;
	double at = fd->batch_k[fd->batch_at];
	int err = sb_addf(sb, "per sample, by batch size:");

	for (unsigned i = 0; !err && i < fd->batch_n; i++) {
		int fits = !(fd->batch_mem_k > 0) || fd->batch_k[i] <= fd->batch_mem_k;

		if (!fits && over == fd->batch_n)
			over = i;
		err = sb_addf(sb, "%s x%.0f %.3gx%s", i ? "," : "", fd->batch_k[i], fd->batch_x[i], fits ? "" : "*");
	}
	if (!err && fd->batch_at + 1 < over)
		err = sb_addf(sb, ". The gain above is at x%.0f, where doubling the batch again adds under 10%%: "
			      "the GPU is full.", at);
	else if (!err)
		err = sb_addf(sb, ". The gain above is at x%.0f, the largest%s.", at,
			      over < fd->batch_n ? " that fits" : " replayed");
	if (!err && over < fd->batch_n)
		err = sb_addf(sb, " *: more than the x%.0f the GPU's memory allows if everything in it grew "
			      "with the batch (the weights do not).", fd->batch_mem_k);
	if (!err)
		err = sb_addf(sb, " Were every kernel's grid to grow with the batch (the replay keeps those "
			      "that already cover the SMs, and the optimizer's), x%.0f would give %.3gx.", at,
			      fd->batch_lo);
	return err;
}
