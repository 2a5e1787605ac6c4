/* Builds a large recording from a real one for bench/analysis_speed.sh: the
 * recording's timeline repeated N times back to back (timestamps shifted by
 * the recording's span each time), strings re-interned, one chunk stream per
 * producer as in a real file. Usage: repeat IN OUT N */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/format.h"

#define MAXS 64

int main(int argc, char **argv)
{
	struct gw_writer w[MAXS];
	uint32_t ids[MAXS];
	int nw = 0, fd, n;
	uint64_t t_min = UINT64_MAX, t_max = 0;
	char err[256];
	struct gw_reader *r;
	struct gw_record rec;

	if (argc != 4 || (n = atoi(argv[3])) < 1)
		return 2;
	/* first walk: the time span */
	if (gw_reader_open(&r, argv[1], err, sizeof(err)) < 0)
		return fprintf(stderr, "%s\n", err), 1;
	while (gw_reader_next(r, &rec) == 1) {
		const struct gw_rec_desc *d = gw_rec_desc(rec.type);

		for (unsigned i = 0; d && i < rec.nfields; i++)
			if ((d->fields[i].kind == 't' || d->fields[i].kind == 'd') && rec.v[i]) {
				if (rec.v[i] < t_min)
					t_min = rec.v[i];
				if (rec.v[i] > t_max)
					t_max = rec.v[i];
			}
	}
	gw_reader_close(r);
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || gw_write_file_header(fd) < 0)
		return 1;
	for (int k = 0; k < n; k++) {
		uint64_t shift = (uint64_t)k * (t_max - t_min + 1000000);

		if (gw_reader_open(&r, argv[1], err, sizeof(err)) < 0)
			return 1;
		while (gw_reader_next(r, &rec) == 1) {
			const struct gw_rec_desc *d = gw_rec_desc(rec.type);
			int j;

			if (rec.type == GW_REC_STRING || (rec.type == GW_REC_META && k > 0))
				continue;
			for (j = 0; j < nw && ids[j] != rec.stream; j++)
				;
			if (j == nw) {
				if (nw == MAXS)
					continue;
				gw_writer_init(&w[nw], fd, rec.stream, 1, 1 << 20);
				ids[nw++] = rec.stream;
			}
			if (rec.type == GW_REC_META) {
				char key[256], val[4096];

				snprintf(key, sizeof(key), "%.*s", (int)rec.blob_len, (const char *)rec.blob);
				snprintf(val, sizeof(val), "%.*s", (int)rec.blob2_len, (const char *)rec.blob2);
				gw_emit_meta(&w[j], key, val);
				continue;
			}
			for (unsigned i = 0; i < rec.nfields; i++) {
				char kind = d->fields[i].kind;

				if ((kind == 't' || kind == 'd') && rec.v[i])
					rec.v[i] += shift;
				else if (kind == 's')
					rec.v[i] = gw_intern(&w[j], gw_reader_string(r, rec.stream, rec.v[i]));
			}
			gw_emit(&w[j], rec.type, rec.v, rec.nfields);
		}
		gw_reader_close(r);
		for (int i = 0; i < nw; i++)
			gw_flush(&w[i]);
	}
	for (int i = 0; i < nw; i++)
		gw_writer_free(&w[i]);
	close(fd);
	return 0;
}
