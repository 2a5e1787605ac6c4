/* Recording writer: varint records into a chunk buffer, chunks to a file
 * descriptor. Used by gpuwhy's samplers and by the injection library, so it
 * must not print, abort or allocate after init except for interning. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "format.h"
#include "intern.h"

size_t gw_put_uvarint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Writes everything or fails; *done: the bytes that did reach the file. */
static int write_all(int fd, const struct iovec *iov, int n, size_t *done)
{
	struct iovec v[4];
	int i = 0;

	*done = 0;
	memcpy(v, iov, sizeof(*iov) * (size_t)n);
	while (i < n) {
		ssize_t r = writev(fd, v + i, n - i);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		*done += (size_t)r;
		while (i < n && (size_t)r >= v[i].iov_len) {
			r -= (ssize_t)v[i].iov_len;
			i++;
		}
		if (i < n) {
			v[i].iov_base = (char *)v[i].iov_base + r;
			v[i].iov_len -= (size_t)r;
		}
	}
	return 0;
}

int gw_write_file_header(int fd)
{
	uint8_t h[GW_FILE_HEADER_SIZE] = { 0 };
	struct iovec iov = { h, sizeof(h) };

	memcpy(h, GW_MAGIC, 8);
	h[8] = GW_VERSION_MAJOR;
	size_t done;

	h[10] = GW_VERSION_MINOR;
	return write_all(fd, &iov, 1, &done);
}

int gw_write_chunk(int fd, uint32_t stream, const uint8_t *raw, size_t raw_len, int compress,
		   uint64_t *bytes_out)
{
	uint8_t hdr[GW_CHUNK_HEADER_SIZE];
	const uint8_t *payload = raw;
	size_t stored = raw_len;
	uint8_t *z = NULL;
	uint16_t flags = 0;
	int ret;

	if (raw_len > GW_CHUNK_MAX_RAW)
		return -EFBIG;
	if (compress > 0) {
		uLongf zlen = compressBound((uLong)raw_len);

		z = malloc(zlen);
		if (z && compress2(z, &zlen, raw, (uLong)raw_len, compress) == Z_OK &&
		    zlen < raw_len) {
			payload = z;
			stored = zlen;
			flags = GW_CHUNK_ZLIB;
		}
	}
	put_le32(hdr, GW_CHUNK_MAGIC);
	hdr[4] = 1; /* chunk type: records */
	hdr[5] = 0;
	hdr[6] = (uint8_t)flags;
	hdr[7] = (uint8_t)(flags >> 8);
	put_le32(hdr + 8, stream);
	put_le32(hdr + 12, (uint32_t)stored);
	put_le32(hdr + 16, (uint32_t)raw_len);
	put_le32(hdr + 20, (uint32_t)crc32(0L, payload, (uInt)stored));
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)payload, stored } };
	size_t done;

	ret = write_all(fd, iov, 2, &done);
	if (ret < 0 && done > 0) {
		/* A short write (a full disk) left part of a chunk: cut the file
		 * back to the last whole chunk, so that chunks written once space
		 * is free again follow whole ones. Where that fails, readers pass
		 * over the partial chunk to the next valid one. */
		off_t end = lseek(fd, 0, SEEK_CUR);

		if (end >= (off_t)done && ftruncate(fd, end - (off_t)done) == 0)
			lseek(fd, end - (off_t)done, SEEK_SET);
	}
	if (ret == 0 && bytes_out)
		*bytes_out += sizeof(hdr) + stored;
	free(z);
	return ret;
}

int gw_writer_init(struct gw_writer *w, int fd, uint32_t stream, int compress, size_t chunk_size)
{
	memset(w, 0, sizeof(*w));
	if (chunk_size < 4096)
		chunk_size = 4096;
	if (chunk_size > GW_CHUNK_MAX_RAW)
		chunk_size = GW_CHUNK_MAX_RAW;
	w->buf = malloc(chunk_size);
	w->strings = gw_intern_new();
	if (!w->buf || !w->strings) {
		free(w->buf);
		gw_intern_free(w->strings);
		w->buf = NULL;
		w->strings = NULL;
		return -ENOMEM;
	}
	w->fd = fd;
	w->stream = stream;
	w->compress = compress;
	w->cap = chunk_size;
	return 0;
}

void gw_writer_free(struct gw_writer *w)
{
	free(w->buf);
	gw_intern_free(w->strings);
	w->buf = NULL;
	w->strings = NULL;
}

int gw_flush(struct gw_writer *w)
{
	int ret;

	if (w->len == 0)
		return 0;
	ret = gw_write_chunk(w->fd, w->stream, w->buf, w->len, w->compress, &w->bytes_written);
	if (ret < 0) {
		if (!w->error)
			w->error = ret;
		w->records_lost += w->records_in_chunk;
		/* Strings defined in the lost chunk must be defined again. */
		gw_intern_clear(w->strings);
		w->intern_gen++;
	} else {
		w->chunks_written++;
	}
	w->len = 0;
	w->last_time = 0;
	w->records_in_chunk = 0;
	return ret;
}

/* Appends type, length and payload; flushes first if it would not fit. */
static int append(struct gw_writer *w, unsigned type, const uint8_t *p1, size_t n1,
		  const uint8_t *p2, size_t n2)
{
	uint8_t head[20];
	size_t h = gw_put_uvarint(head, type);

	h += gw_put_uvarint(head + h, n1 + n2);
	if (h + n1 + n2 > w->cap)
		return -E2BIG;
	if (w->len + h + n1 + n2 > w->cap)
		gw_flush(w); /* a failed write is counted; the record still goes in the next chunk */
	memcpy(w->buf + w->len, head, h);
	w->len += h;
	if (n1)
		memcpy(w->buf + w->len, p1, n1);
	w->len += n1;
	if (n2)
		memcpy(w->buf + w->len, p2, n2);
	w->len += n2;
	w->records_in_chunk++;
	return 0;
}

int gw_emit(struct gw_writer *w, unsigned type, const uint64_t *v, unsigned n)
{
	const struct gw_rec_desc *d = gw_rec_desc(type);
	uint8_t tmp[GW_MAX_FIELDS * 10];
	uint64_t last = w->last_time, rec_t = 0;
	size_t len = 0;

	if (!d || type == GW_REC_STRING || type == GW_REC_META)
		return -EINVAL;
	if (n > d->nfields)
		n = d->nfields;
	/* Time fields depend on the chunk's clock: if the record will start a new
	 * chunk, it must be encoded against 0. Encode, then re-encode if needed. */
	for (int pass = 0; pass < 2; pass++) {
		len = 0;
		last = pass ? 0 : w->last_time;
		for (unsigned i = 0; i < n; i++) {
			uint64_t x = v[i];

			switch (d->fields[i].kind) {
			case 't':
				len += gw_put_uvarint(tmp + len, gw_zigzag((int64_t)(x - last)));
				last = rec_t = x;
				break;
			case 'd':
				len += gw_put_uvarint(tmp + len, x > rec_t ? x - rec_t : 0);
				break;
			case 'i':
				len += gw_put_uvarint(tmp + len, gw_zigzag((int64_t)x));
				break;
			default:
				len += gw_put_uvarint(tmp + len, x);
			}
		}
		if (pass == 1 || w->len + len + 20 <= w->cap)
			break;
		gw_flush(w);
	}
	w->last_time = last;
	return append(w, type, tmp, len, NULL, 0);
}

uint64_t gw_intern(struct gw_writer *w, const char *s)
{
	uint8_t head[10];
	uint64_t id;
	int is_new = 0;
	size_t n;

	if (!s)
		return 0;
	id = gw_intern_get(w->strings, s, &is_new);
	if (!id || !is_new)
		return id;
	n = strlen(s);
	if (n > 65536)
		n = 65536;
	if (append(w, GW_REC_STRING, head, gw_put_uvarint(head, id), (const uint8_t *)s, n) < 0)
		return 0;
	return id;
}

int gw_emit_meta(struct gw_writer *w, const char *key, const char *value)
{
	uint8_t head[10];
	size_t kl = strlen(key), vl = strlen(value), h;
	uint8_t *tmp;
	int ret;

	if (vl > 65536)
		vl = 65536;
	h = gw_put_uvarint(head, kl);
	tmp = malloc(h + kl);
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, head, h);
	memcpy(tmp + h, key, kl);
	ret = append(w, GW_REC_META, tmp, h + kl, (const uint8_t *)value, vl);
	free(tmp);
	return ret;
}
