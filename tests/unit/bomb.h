/* A SYNTHETIC compression bomb: a finished recording (tests/unit/synth.h's
 * start) whose GPU timeline is `chunks` chunks of 4 MiB (the most a chunk
 * may hold) of kernel records alike but for the first one's time, one
 * kernel every microsecond, times rising from chunk to chunk; zlib packs
 * each into about 5 KB, 800 times smaller. With `repeat`, every chunk is a
 * byte-for-byte copy of the first (a file made by copying one chunk).
 * Nothing here is a real recording. Shared by tests/unit/test_bomb.c
 * (bounds on what the reader inflates and the analysis holds) and
 * bench/bomb.c (times and peak memory for docs/RELIABILITY.md). */
#ifndef GPUWHY_TEST_BOMB_H
#define GPUWHY_TEST_BOMB_H

#include <stdlib.h>
#include <unistd.h>

#include "synth.h"

#define BOMB_STREAM 4242
#define BOMB_SPACING_NS 1000ull

/* Appends one kernel record starting `delta` ns after the chunk's last
 * time to p; returns its length. */
static inline size_t bomb_kernel(uint8_t *p, uint64_t delta)
{
	uint8_t body[GW_KERNEL_NF * 10];
	size_t n = 0, h;

	n += gw_put_uvarint(body + n, gw_zigzag((int64_t)delta)); /* start */
	n += gw_put_uvarint(body + n, 500);                       /* end - start */
	/* name (string 1), device 0, context 1, stream 7, grid 1x1x1, block 128x1x1,
	 * correlation 0, registers 32, shared memory 0, graph 0 */
	static const uint8_t rest[] = { 1, 0, 1, 7, 1, 1, 1, 0x80, 0x01, 1, 1, 0, 32, 0, 0 };

	memcpy(body + n, rest, sizeof(rest));
	n += sizeof(rest);
	h = gw_put_uvarint(p, GW_REC_KERNEL);
	h += gw_put_uvarint(p + h, n);
	memcpy(p + h, body, n);
	return h + n;
}

/* Writes the bomb to path: the number of kernels in each chunk, or 0. */
static inline size_t bomb_write(const char *path, unsigned chunks, int repeat)
{
	static const char name[] = "bomb_kernel";
	uint8_t *raw = malloc(GW_CHUNK_MAX_RAW);
	struct gw_writer w;
	size_t per_chunk = 0;
	int fd = synth_begin(&w, path, 100, 81559, 700000);

	if (fd < 0 || !raw)
		goto out;
	gw_flush(&w);
	off_t first = lseek(fd, 0, SEEK_CUR), first_len = 0;

	for (unsigned c = 0; c < chunks; c++) {
		size_t len = 0, n = 0;

		if (repeat && c) { /* the first chunk's bytes again */
			int rfd = c == 1 ? open(path, O_RDONLY) : -1;

			if (c == 1 && (first_len = lseek(fd, 0, SEEK_CUR) - first) > 0 &&
			    pread(rfd, raw, (size_t)first_len, first) != first_len)
				first_len = 0;
			if (rfd >= 0)
				close(rfd);
			if (first_len <= 0 || write(fd, raw, (size_t)first_len) != first_len)
				goto fail;
			continue;
		}
		uint64_t t0 = 1000000000ull + (repeat ? 0 : (uint64_t)c * (GW_CHUNK_MAX_RAW / 8) * BOMB_SPACING_NS);

		raw[len++] = GW_REC_STRING; /* the kernels' name, defined in every chunk */
		raw[len++] = (uint8_t)(sizeof(name));
		raw[len++] = 1;
		memcpy(raw + len, name, sizeof(name) - 1);
		len += sizeof(name) - 1;
		len += bomb_kernel(raw + len, t0);
		for (n = 1; len + 32 <= GW_CHUNK_MAX_RAW; n++)
			len += bomb_kernel(raw + len, BOMB_SPACING_NS);
		if (gw_write_chunk(fd, BOMB_STREAM, raw, len, 6, NULL) < 0)
			goto fail;
		per_chunk = n;
	}
	goto out;
fail:
	per_chunk = 0;
out:
	if (fd >= 0) {
		gw_writer_free(&w);
		close(fd);
	}
	free(raw);
	return per_chunk;
}

#endif
