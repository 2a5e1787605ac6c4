/* Recording reader: streams chunks from a file, checks each chunk's CRC,
 * decodes records against the schema, keeps the per-stream string tables.
 * At damage (a bad chunk header, a CRC mismatch, a chunk that does not
 * inflate, a malformed record) it says where, passes over the damaged bytes
 * to the next chunk that validates and reads on, counting what it skipped;
 * a file cut at any byte yields everything before the cut. What it found
 * is one verdict (gw_reader_verdict) that every command reports alike. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef GW_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "format.h"

struct str_slot {
	uint64_t key; /* stream << 32 | id; 0 = empty */
	char *s;
};

/* The fields of a record type that are not plain uvarints (times, signed
 * values), in order: decoding reads every field as a uvarint first, then
 * transforms these few. */
struct coded_fields {
	uint8_t n;
	uint8_t idx[GW_MAX_FIELDS];
	char kind[GW_MAX_FIELDS];
};

/* A chunk read, to find later copies of it: its header's identity, where
 * it is, and whether it holds a timed record (learnt from its first copy). */
enum { TIMED_UNKNOWN, TIMED_YES, TIMED_NO };
struct chunk_seen {
	uint64_t offset; /* 0: an empty slot (no chunk starts inside the file header) */
	uint32_t stream, stored, raw, crc;
	uint8_t timed;
};

/* load_chunk's results */
enum { CHUNK_BAD = -1, CHUNK_REFUSED = -2, CHUNK_END = 0, CHUNK_LOADED = 1, CHUNK_REPEAT = 2 };

/* The strings' text, copied into blocks freed together at close: one
 * allocation for many strings (a recording defines thousands: kernel names,
 * Python frames), not one each. */
#define STR_BLOCK_BYTES (64u << 10)
struct str_block {
	struct str_block *next;
	size_t used, cap;
	char text[];
};

struct gw_reader {
	FILE *f;
	const struct gw_rec_desc *desc[GW_REC_TYPE_MAX]; /* from the schema, at open */
	uint8_t want[GW_REC_TYPE_MAX]; /* fields to decode per type (gw_reader_fields) */
	struct coded_fields coded[GW_REC_TYPE_MAX];
#ifdef GW_HAVE_LIBDEFLATE
	struct libdeflate_decompressor *dd; /* whole-buffer inflate */
#else
	z_stream z; /* raw inflate, reused for every chunk */
	int z_ready;
#endif
	uint64_t offset; /* file offset of the next chunk */
	unsigned minor;
	uint8_t *raw, *stored;
	size_t raw_cap, stored_cap;
	size_t raw_len, pos;
	uint32_t stream;
	uint64_t last_time;
	struct str_slot *strs;
	size_t str_cap, str_count;
	struct str_block *str_blocks; /* the strings' text, newest block first */
	uint64_t unknown;
	char damage[256]; /* the first damage: what and where */
	int done;
	uint64_t file_size;      /* at open; 0 when not a regular file (no resynchronizing) */
	uint64_t bytes_skipped;  /* damaged bytes passed over before a valid chunk */
	uint64_t chunks_skipped; /* chunk headers among them (at least 1 per damaged region) */
	uint64_t malformed;      /* malformed records: the rest of their chunk is skipped */
	uint64_t cut_bytes;      /* a partial chunk at the end of the file */
	int cut;                 /* the file ends inside a chunk */
	uint64_t resync_work;    /* bytes read by failed resynchronization attempts */
	int ended;               /* the end record (meta record.end_ns) was read */
	int gave_up;             /* resynchronizing stopped at its work bound */
	uint64_t inflated;       /* raw bytes of the chunks loaded and inflated (GW_INFLATE_LIMIT) */
	int refused;             /* stopped at refused_at: the chunks inflate past the bound */
	uint64_t refused_at;
	struct chunk_seen *seen; /* the chunks read, by header identity (repeats) */
	size_t seen_cap, seen_count;
	uint8_t *prev;           /* an earlier chunk's stored bytes, to compare */
	size_t prev_cap;
	uint64_t repeat_at, repeat_of; /* the repeated chunk just passed over, and its original */
	uint64_t chunks_repeated, bytes_repeated;
	int nomem; /* an allocation failed: what was read is incomplete (gw_reader_nomem) */
};

size_t gw_get_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift = 0;
	size_t n = 0;

	while (p + n < end && shift < 64) {
		uint8_t b = p[n++];

		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return n;
		}
		shift += 7;
	}
	return 0;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int gw_reader_open(struct gw_reader **out, const char *path, char *err, size_t errlen)
{
	return gw_reader_open_flags(out, path, 0, err, errlen);
}

int gw_reader_open_flags(struct gw_reader **out, const char *path, unsigned flags, char *err,
			 size_t errlen)
{
	int fd;

	*out = NULL;
	/* A FIFO would block the open itself: with GW_OPEN_REGULAR the open
	 * does not wait, and anything but a regular file is refused. */
	fd = open(path, O_RDONLY | O_CLOEXEC |
				(flags & GW_OPEN_REGULAR ? O_NONBLOCK | O_NOFOLLOW : 0));
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot open %s: %s%s", path, strerror(e),
			 e == ELOOP && (flags & GW_OPEN_REGULAR) ? " (a symbolic link)" : "");
		return -e;
	}
	return gw_reader_open_fd(out, fd, path, flags, err, errlen);
}

int gw_reader_open_fd(struct gw_reader **out, int fd, const char *path, unsigned flags, char *err,
		      size_t errlen)
{
	uint8_t h[GW_FILE_HEADER_SIZE];
	struct gw_reader *r;
	struct stat st;
	int ret;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory opening %s", path);
		close(fd);
		return -ENOMEM;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		close(fd);
		goto out_free;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		snprintf(err, errlen, "%s is a directory, not a recording", path);
		close(fd);
		goto out_free;
	}
	if ((flags & GW_OPEN_REGULAR) && !S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen, "%s is not a regular file (%s), not a recording", path,
			 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket"
			 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a file");
		close(fd);
		goto out_free;
	}
	if (S_ISREG(st.st_mode))
		r->file_size = (uint64_t)st.st_size;
	if (flags & GW_OPEN_REGULAR)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	r->f = fdopen(fd, "rb");
	if (!r->f) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		close(fd);
		goto out_free;
	}
	if (fread(h, 1, sizeof(h), r->f) != sizeof(h) || memcmp(h, GW_MAGIC, 8) != 0) {
		ret = -EPROTO;
		snprintf(err, errlen, "%s is not a gpuwhy recording (no gpuwhy header)", path);
		goto out_close;
	}
	if (h[8] != GW_VERSION_MAJOR) {
		ret = -EPROTO;
		snprintf(err, errlen,
			 "%s uses recording format version %u, this gpuwhy reads version %u: "
			 "use the gpuwhy that made it, or a newer one",
			 path, (unsigned)h[8], (unsigned)GW_VERSION_MAJOR);
		goto out_close;
	}
	r->minor = h[10];
	r->offset = sizeof(h);
	for (unsigned t = 0; t < GW_REC_TYPE_MAX; t++) {
		const struct gw_rec_desc *d = gw_rec_desc(t);
		struct coded_fields *c = &r->coded[t];

		r->desc[t] = d;
		r->want[t] = d ? d->nfields : 0;
		for (unsigned i = 0; d && i < d->nfields; i++)
			if (d->fields[i].kind == 't' || d->fields[i].kind == 'd' || d->fields[i].kind == 'i') {
				c->idx[c->n] = (uint8_t)i;
				c->kind[c->n++] = d->fields[i].kind;
			}
	}
	r->str_cap = 1024;
	r->strs = calloc(r->str_cap, sizeof(*r->strs));
	if (!r->strs) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out_close;
	}
	*out = r;
	return 0;
out_close:
	fclose(r->f);
out_free:
	free(r);
	return ret;
}

void gw_reader_close(struct gw_reader *r)
{
	if (!r)
		return;
	while (r->str_blocks) {
		struct str_block *b = r->str_blocks;

		r->str_blocks = b->next;
		free(b);
	}
	free(r->strs);
	free(r->raw);
	free(r->stored);
	free(r->seen);
	free(r->prev);
#ifdef GW_HAVE_LIBDEFLATE
	if (r->dd)
		libdeflate_free_decompressor(r->dd);
#else
	if (r->z_ready)
		inflateEnd(&r->z);
#endif
	if (r->f)
		fclose(r->f);
	free(r);
}

/* Inflates a zlib-wrapped chunk payload into exactly raw bytes. The chunk's
 * CRC32 already covers the stored bytes, so the deflate data is inflated raw:
 * the 2-byte zlib header is checked by hand and the Adler-32 trailer is not
 * computed again (it showed as 3-5% of a report's time in perf). With
 * libdeflate the whole chunk is inflated in one call (the report runs about
 * 1.2x faster than with zlib: bench/inflate_compare.sh). */
static int inflate_chunk(struct gw_reader *r, const uint8_t *in, size_t n, uint8_t *out, size_t raw)
{
	if (n < 6 || (in[0] & 0x0f) != Z_DEFLATED || ((unsigned)in[0] << 8 | in[1]) % 31 ||
	    (in[1] & 0x20))
		return -1; /* not a zlib header, or a preset dictionary */
#ifdef GW_HAVE_LIBDEFLATE
	if (!r->dd && !(r->dd = libdeflate_alloc_decompressor())) {
		r->nomem = 1;
		return -1;
	}
	/* the deflate data lies between the header and the 4-byte trailer */
	return libdeflate_deflate_decompress(r->dd, in + 2, n - 6, out, raw, NULL) ==
			       LIBDEFLATE_SUCCESS ? 0 : -1;
#else
	if (!r->z_ready) {
		memset(&r->z, 0, sizeof(r->z));
		int zr = inflateInit2(&r->z, -MAX_WBITS);

		if (zr != Z_OK) {
			r->nomem = zr == Z_MEM_ERROR;
			return -1;
		}
		r->z_ready = 1;
	} else if (inflateReset(&r->z) != Z_OK) {
		return -1;
	}
	r->z.next_in = (Bytef *)(uintptr_t)(in + 2);
	r->z.avail_in = (uInt)(n - 2);
	r->z.next_out = out;
	r->z.avail_out = (uInt)raw;
	if (inflate(&r->z, Z_FINISH) != Z_STREAM_END || r->z.total_out != raw)
		return -1;
	return 0;
#endif
}

int gw_reader_nomem(const struct gw_reader *r)
{
	return r->nomem;
}

const char *gw_reader_damage(const struct gw_reader *r)
{
	return r->damage[0] ? r->damage : NULL;
}

void gw_reader_verdict(const struct gw_reader *r, int main_file, struct gw_verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->bytes_skipped = r->bytes_skipped;
	v->chunks_skipped = r->chunks_skipped;
	v->records_malformed = r->malformed;
	v->cut_bytes = r->cut_bytes;
	v->chunks_repeated = r->chunks_repeated;
	v->bytes_repeated = r->bytes_repeated;
	v->refused = r->refused;
	v->refused_at = r->refused_at;
	v->bytes_refused = r->refused && r->file_size > r->refused_at ? r->file_size - r->refused_at : 0;
	v->file_bytes = r->file_size;
	v->cut = r->cut;
	v->ended = r->ended || !main_file;
	snprintf(v->first, sizeof(v->first), "%s", r->damage);
	if (v->chunks_skipped || v->records_malformed || v->chunks_repeated || v->refused)
		v->kind = GW_VERDICT_DAMAGED;
	else if (v->cut || !v->ended)
		v->kind = GW_VERDICT_TRUNCATED;
}

void gw_verdict_add(struct gw_verdict *v, const struct gw_verdict *side)
{
	v->bytes_skipped += side->bytes_skipped;
	v->chunks_skipped += side->chunks_skipped;
	v->records_malformed += side->records_malformed;
	v->chunks_repeated += side->chunks_repeated;
	v->bytes_repeated += side->bytes_repeated;
	v->bytes_refused += side->bytes_refused;
	if (side->refused && !v->refused) {
		v->refused = 1;
		v->refused_at = side->refused_at;
	}
	if (!v->first[0])
		snprintf(v->first, sizeof(v->first), "%s", side->first);
	/* a side file cut at its end belongs to a recording that was not
	 * finished, which its own verdict says already */
	if (side->kind == GW_VERDICT_DAMAGED)
		v->kind = GW_VERDICT_DAMAGED;
}

const char *gw_verdict_name(const struct gw_verdict *v)
{
	return v->kind == GW_VERDICT_DAMAGED ? "damaged"
	       : v->kind == GW_VERDICT_TRUNCATED ? "truncated" : "ok";
}

int gw_verdict_exit(const struct gw_verdict *v)
{
	return v->kind == GW_VERDICT_OK ? 0 : GW_EXIT_DAMAGED;
}

void gw_verdict_describe(const struct gw_verdict *v, char *buf, size_t len)
{
	size_t n = 0;

#define ADD(...) (n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__))
	if (len)
		buf[0] = 0;
	if (v->kind == GW_VERDICT_OK)
		return;
	if (v->kind == GW_VERDICT_DAMAGED) {
		const char *sep = " ";

		ADD("the recording is damaged:");
		if (v->chunks_skipped) {
			ADD("%s%" PRIu64 " damaged bytes skipped (%" PRIu64 " chunk%s)", sep,
			    v->bytes_skipped, v->chunks_skipped, v->chunks_skipped == 1 ? "" : "s");
			sep = ", ";
		}
		if (v->records_malformed) {
			ADD("%s%" PRIu64 " malformed record%s (the rest of %s chunk skipped)", sep,
			    v->records_malformed, v->records_malformed == 1 ? "" : "s",
			    v->records_malformed == 1 ? "its" : "their");
			sep = ", ";
		}
		if (v->chunks_repeated)
			ADD("%s%" PRIu64 " repeated chunk%s skipped (%" PRIu64 " bytes that copy earlier "
			    "chunks byte for byte: their records were read once)", sep,
			    v->chunks_repeated, v->chunks_repeated == 1 ? "" : "s", v->bytes_repeated);
		if (sep[0] == ',' || v->chunks_repeated)
			ADD("; first: %s%s", v->first, v->refused ? ";" : "");
		if (v->refused)
			ADD(" reading stopped at byte %" PRIu64 ": its chunks would inflate to more "
			    "than 16 times the file's size plus 8 MiB (recordings inflate 2 to 5 times: "
			    "this is a compression bomb), so the remaining %" PRIu64 " bytes were "
			    "refused. What precedes was read", v->refused_at, v->bytes_refused);
		else if (v->cut || !v->ended)
			ADD("; and it is cut short%s", v->cut ? " inside its last chunk"
							      : " (no end record)");
		if (!v->refused)
			ADD(". Everything else was read. If the file was copied, copy it again");
	} else if (v->cut) {
		ADD("the recording is cut short: it ends inside a chunk (%" PRIu64 " bytes of an "
		    "incomplete chunk at the end of the file): gpuwhy was stopped while writing it, "
		    "or the file was copied short. What precedes was read; the end of the run, and "
		    "the traced processes' GPU timeline that is appended at the end, may be missing. "
		    "Copy it again if it was copied, or record again and let gpuwhy finish",
		    v->cut_bytes);
	} else {
		char at[40] = "";

		if (v->file_bytes)
			snprintf(at, sizeof(at), " at byte %" PRIu64, v->file_bytes);
		ADD("the recording is cut short: it ends%s without its end record: gpuwhy was "
		    "stopped before it finished (killed, or the machine went down), or the file "
		    "was copied short. What it holds was read; the end of the run, and the traced "
		    "processes' GPU timeline that is appended at the end, may be missing. Copy it "
		    "again if it was copied, or record again and let gpuwhy finish", at);
	}
#undef ADD
}

unsigned gw_reader_version_minor(const struct gw_reader *r)
{
	return r->minor;
}

uint64_t gw_reader_unknown_records(const struct gw_reader *r)
{
	return r->unknown;
}

uint64_t gw_reader_inflated(const struct gw_reader *r)
{
	return r->inflated;
}

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

/* s[0..n) as a C string in the reader's blocks, or NULL (out of memory). */
static char *str_copy(struct gw_reader *r, const uint8_t *s, size_t n)
{
	struct str_block *b = r->str_blocks;
	char *copy;

	if (!b || b->cap - b->used < n + 1) {
		size_t cap = n + 1 > STR_BLOCK_BYTES ? n + 1 : STR_BLOCK_BYTES;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		/* a string bigger than a block gets a block of its own, kept
		 * behind the current one so that its room stays in use */
		if (r->str_blocks && cap > STR_BLOCK_BYTES) {
			b->next = r->str_blocks->next;
			r->str_blocks->next = b;
		} else {
			b->next = r->str_blocks;
			r->str_blocks = b;
		}
	}
	copy = b->text + b->used;
	memcpy(copy, s, n);
	copy[n] = 0;
	b->used += n + 1;
	return copy;
}

static void str_put(struct gw_reader *r, uint64_t key, const uint8_t *s, size_t n)
{
	size_t i;
	char *copy;

	if (!(key & 0xffffffffu))
		return; /* id 0 means "no string": never defined (and 0 marks empty slots) */
	if ((r->str_count + 1) * 2 > r->str_cap) {
		size_t ncap = r->str_cap * 2;
		struct str_slot *ns = calloc(ncap, sizeof(*ns));

		if (!ns) {
			r->nomem = 1;
			return;
		}
		for (size_t j = 0; j < r->str_cap; j++) {
			if (!r->strs[j].key)
				continue;
			size_t k = mix(r->strs[j].key) & (ncap - 1);

			while (ns[k].key)
				k = (k + 1) & (ncap - 1);
			ns[k] = r->strs[j];
		}
		free(r->strs);
		r->strs = ns;
		r->str_cap = ncap;
	}
	copy = str_copy(r, s, n);
	if (!copy) {
		r->nomem = 1;
		return;
	}
	for (i = mix(key) & (r->str_cap - 1); r->strs[i].key; i = (i + 1) & (r->str_cap - 1)) {
		if (r->strs[i].key == key) { /* redefined after a lost chunk: the old text stays in its block */
			r->strs[i].s = copy;
			return;
		}
	}
	r->strs[i].key = key;
	r->strs[i].s = copy;
	r->str_count++;
}

const char *gw_reader_string(struct gw_reader *r, uint32_t stream, uint64_t id)
{
	uint64_t key = (uint64_t)stream << 32 | (id & 0xffffffffu);

	if (!id)
		return "";
	for (size_t i = mix(key) & (r->str_cap - 1); r->strs[i].key; i = (i + 1) & (r->str_cap - 1))
		if (r->strs[i].key == key)
			return r->strs[i].s;
	return "?";
}

static int grow_buf(uint8_t **b, size_t *cap, size_t need)
{
	uint8_t *nb;

	if (*cap >= need)
		return 0;
	nb = realloc(*b, need);
	if (!nb)
		return -ENOMEM;
	*b = nb;
	*cap = need;
	return 0;
}

/* Keeps the first damage's description. */
static void note_damage(struct gw_reader *r, const char *what)
{
	if (!r->damage[0])
		snprintf(r->damage, sizeof(r->damage), "%s", what);
}

/* ---- repeated chunks --------------------------------------------------------
 * A bad copy can leave a chunk twice; every chunk's times are absolute, so
 * a timed chunk never recurs byte for byte in a real recording (chunks of
 * other streams, ring segments and merged parts differ in stream or bytes).
 * The chunks read are kept by header identity, and one whose identity
 * matches is compared with the earlier chunk's bytes on disk. */

static uint64_t seen_hash(const struct chunk_seen *c)
{
	return mix((uint64_t)c->crc << 32 ^ (uint64_t)c->stored ^
		   (uint64_t)c->raw * 0x9e3779b97f4a7c15ull ^ (uint64_t)c->stream << 20);
}

static int seen_same(const struct chunk_seen *a, const struct chunk_seen *b)
{
	return a->stream == b->stream && a->stored == b->stored && a->raw == b->raw &&
	       a->crc == b->crc;
}

/* Keeps a chunk read (r->nomem on a failed allocation: the reading is then
 * incomplete, as for every other allocation of the reader). */
static void seen_add(struct gw_reader *r, const struct chunk_seen *c)
{
	size_t k;

	if ((r->seen_count + 1) * 2 > r->seen_cap) {
		size_t ncap = r->seen_cap ? r->seen_cap * 2 : 64;
		struct chunk_seen *ns = calloc(ncap, sizeof(*ns));

		if (!ns) {
			r->nomem = 1;
			return;
		}
		for (size_t j = 0; j < r->seen_cap; j++) {
			if (!r->seen[j].offset)
				continue;
			for (k = seen_hash(&r->seen[j]) & (ncap - 1); ns[k].offset; k = (k + 1) & (ncap - 1))
				;
			ns[k] = r->seen[j];
		}
		free(r->seen);
		r->seen = ns;
		r->seen_cap = ncap;
	}
	for (k = seen_hash(c) & (r->seen_cap - 1); r->seen[k].offset; k = (k + 1) & (r->seen_cap - 1))
		;
	r->seen[k] = *c;
	r->seen_count++;
}

/* The earlier chunk that the one just read (c; its stored bytes in
 * r->stored) repeats byte for byte, or NULL. Only a regular file is
 * compared (pread). */
static struct chunk_seen *seen_find(struct gw_reader *r, const struct chunk_seen *c)
{
	if (!r->seen_cap || !r->file_size)
		return NULL;
	for (size_t k = seen_hash(c) & (r->seen_cap - 1); r->seen[k].offset;
	     k = (k + 1) & (r->seen_cap - 1)) {
		struct chunk_seen *e = &r->seen[k];

		if (!seen_same(e, c))
			continue;
		if (grow_buf(&r->prev, &r->prev_cap, c->stored ? c->stored : 1) < 0) {
			r->nomem = 1;
			return NULL;
		}
		if (pread(fileno(r->f), r->prev, c->stored, (off_t)(e->offset + GW_CHUNK_HEADER_SIZE)) ==
			    (ssize_t)c->stored && !memcmp(r->prev, r->stored, c->stored))
			return e;
	}
	return NULL;
}

/* Whether a chunk's records hold a time (delta) field. A chunk of untimed
 * records alone (string definitions, thread names) may be written twice
 * alike and is read again; a timed one that recurs is a copy. */
static int chunk_timed(const struct gw_reader *r, const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		uint64_t type, len;
		size_t n1 = gw_get_uvarint(p, end, &type), n2 = n1 ? gw_get_uvarint(p + n1, end, &len) : 0;

		if (!n2 || len > (uint64_t)(end - p - n1 - n2))
			return 0; /* malformed: read as any chunk, where the damage is said */
		for (unsigned k = 0; type < GW_REC_TYPE_MAX && k < r->coded[type].n; k++)
			if (r->coded[type].kind[k] == 't')
				return 1;
		p += n1 + n2 + len;
	}
	return 0;
}

/* Loads the chunk at r->offset (the file is positioned there) into r->raw.
 * CHUNK_LOADED; CHUNK_REPEAT: a copy of an earlier timed chunk, passed over
 * (r->repeat_at, r->repeat_of); CHUNK_END: the file ends here; CHUNK_BAD: no
 * valid chunk here (why says what; *cut is set when the file ends inside
 * it); CHUNK_REFUSED: a valid chunk that would take what the chunks inflate
 * to past GW_INFLATE_LIMIT (why says so). A resynchronization candidate
 * (strict) must also have the chunk type and flags this version writes and
 * fit in the file, and what it reads counts against the work bound. */
static int load_chunk(struct gw_reader *r, int strict, char *why, size_t whylen, int *cut)
{
	uint8_t h[GW_CHUNK_HEADER_SIZE];
	uint32_t stored, raw, flags;
	struct chunk_seen id, *orig;
	size_t got;

	*cut = 0;
	got = fread(h, 1, sizeof(h), r->f);
	if (got == 0)
		return CHUNK_END;
	if (got < sizeof(h)) {
		*cut = 1;
		snprintf(why, whylen, "file cut off at byte %" PRIu64 " inside a chunk header",
			 r->offset + got);
		return CHUNK_BAD;
	}
	stored = get_le32(h + 12);
	raw = get_le32(h + 16);
	flags = (uint32_t)h[6] | (uint32_t)h[7] << 8;
	if (get_le32(h) != GW_CHUNK_MAGIC || raw > GW_CHUNK_MAX_RAW ||
	    stored > GW_CHUNK_MAX_RAW + 1024 || (!(flags & GW_CHUNK_ZLIB) && stored != raw) ||
	    (strict && (h[4] != 1 || h[5] != 0 || (flags & ~GW_CHUNK_ZLIB) ||
			r->offset + sizeof(h) + stored > r->file_size))) {
		snprintf(why, whylen, "damaged chunk header at byte %" PRIu64, r->offset);
		return CHUNK_BAD;
	}
	if (strict)
		r->resync_work += sizeof(h) + stored;
	/* raw: 8 bytes more, zeroed, that tail_malformed may read past the end */
	if (grow_buf(&r->stored, &r->stored_cap, stored ? stored : 1) < 0 ||
	    grow_buf(&r->raw, &r->raw_cap, (size_t)raw + 8) < 0) {
		snprintf(why, whylen, "out of memory at byte %" PRIu64, r->offset);
		r->nomem = 1;
		return CHUNK_BAD;
	}
	got = fread(r->stored, 1, stored, r->f);
	if (got < stored) {
		*cut = 1;
		snprintf(why, whylen,
			 "file cut off at byte %" PRIu64 " (chunk of %u bytes at byte %" PRIu64
			 " has only %zu)", r->offset + sizeof(h) + got, stored, r->offset, got);
		return CHUNK_BAD;
	}
#ifndef GW_FUZZING /* the fuzzer skips CRCs so that mutations reach the decoders */
	if ((uint32_t)crc32(0L, r->stored, stored) != get_le32(h + 20)) {
		snprintf(why, whylen, "checksum mismatch in the chunk at byte %" PRIu64, r->offset);
		return CHUNK_BAD;
	}
#endif
	id = (struct chunk_seen){ r->offset, get_le32(h + 8), stored, raw, get_le32(h + 20), TIMED_UNKNOWN };
	orig = seen_find(r, &id);
	if (orig && orig->timed == TIMED_YES)
		goto repeat; /* known to be timed: not inflated again */
	/* every byte inflated counts, a candidate's that fails too: a crafted
	 * file cannot make the work grow faster than its size */
	if (r->inflated + raw > GW_INFLATE_LIMIT(r->file_size ? r->file_size : r->offset + sizeof(h) + stored)) {
		snprintf(why, whylen, "the chunk at byte %" PRIu64 " would take what the chunks "
			 "inflate to past 16 times the file's size plus 8 MiB", r->offset);
		return CHUNK_REFUSED;
	}
	r->inflated += raw;
	if (flags & GW_CHUNK_ZLIB) {
		if (inflate_chunk(r, r->stored, stored, r->raw, raw) < 0) {
			snprintf(why, whylen, "cannot decompress the chunk at byte %" PRIu64,
				 r->offset);
			return CHUNK_BAD;
		}
	} else {
		memcpy(r->raw, r->stored, stored);
	}
	memset(r->raw + raw, 0, 8);
	if (orig) {
		if (orig->timed == TIMED_UNKNOWN)
			orig->timed = chunk_timed(r, r->raw, r->raw + raw) ? TIMED_YES : TIMED_NO;
		if (orig->timed == TIMED_YES)
			goto repeat;
	} else if (r->file_size) { /* only a regular file is compared */
		seen_add(r, &id);
	}
	r->offset += sizeof(h) + stored;
	r->raw_len = raw;
	r->pos = 0;
	r->stream = id.stream;
	r->last_time = 0;
	return CHUNK_LOADED;
repeat:
	r->repeat_at = r->offset;
	r->repeat_of = orig->offset;
	r->offset += sizeof(h) + stored;
	r->raw_len = r->pos = 0;
	return CHUNK_REPEAT;
}

/* Resynchronizing tries every chunk magic after the damage; a crafted file
 * full of false headers must not make that quadratic, so the bytes read by
 * failed attempts are bounded by a multiple of the file's size. */
#define RESYNC_WORK(size) (((uint64_t)64 << 20) + (size) * 4)

/* After damage at byte `bad`: finds the next chunk that validates (magic,
 * header, sizes within the file, CRC, inflate) and loads it. Returns what
 * load_chunk returned for it (CHUNK_LOADED, CHUNK_REPEAT, or CHUNK_REFUSED
 * with why set; the bytes passed over are counted), or 0: none before the
 * end. Only a regular file can be searched. */
static int resync(struct gw_reader *r, uint64_t bad, char *why, size_t whylen)
{
	static const uint8_t magic[4] = { 'G', 'W', 'C', '1' }; /* GW_CHUNK_MAGIC on disk */
	uint8_t buf[1 << 16];
	uint64_t pos = bad + 1, magics = 0;
	size_t n = 0, i = 0;
	int cut, got;

	if (!r->file_size)
		return 0;
	for (;;) {
		const uint8_t *m;

		if (i + sizeof(magic) > n) { /* refill, keeping a possible partial magic */
			pos += i;
			if (fseeko(r->f, (off_t)pos, SEEK_SET) != 0)
				return 0;
			n = fread(buf, 1, sizeof(buf), r->f);
			i = 0;
			if (n < sizeof(magic))
				return 0;
		}
		m = memmem(buf + i, n - i, magic, sizeof(magic));
		if (!m) {
			i = n - (sizeof(magic) - 1);
			if (n < sizeof(buf))
				return 0; /* the end of the file */
			continue;
		}
		i = (size_t)(m - buf);
		magics++;
		if (r->resync_work > RESYNC_WORK(r->file_size)) {
			r->gave_up = 1;
			return 0;
		}
		r->offset = pos + i;
		got = fseeko(r->f, (off_t)r->offset, SEEK_SET) == 0 ? load_chunk(r, 1, why, whylen, &cut)
								    : CHUNK_BAD;
		if (got > CHUNK_END || got == CHUNK_REFUSED) {
			/* the damaged chunk and the false starts after it */
			r->bytes_skipped += pos + i - bad;
			r->chunks_skipped += magics;
			return got;
		}
		i++;
	}
}

/* Stops the reading at r->offset: the chunk there would inflate past the
 * bound. */
static int refuse(struct gw_reader *r, const char *why)
{
	r->refused = 1;
	r->refused_at = r->offset;
	note_damage(r, why);
	return CHUNK_END;
}

/* Loads the next chunk into r->raw, passing over damage: CHUNK_LOADED,
 * CHUNK_REPEAT (nothing loaded), or CHUNK_END (the end, or refused). */
static int next_chunk_once(struct gw_reader *r)
{
	uint64_t bad = r->offset;
	char why[256], rwhy[256];
	int cut, ret = load_chunk(r, 0, why, sizeof(why), &cut);

	if (ret >= CHUNK_END)
		return ret;
	if (ret == CHUNK_REFUSED)
		return refuse(r, why);
	r->offset = bad;
	ret = resync(r, bad, rwhy, sizeof(rwhy));
	if (ret != CHUNK_END) {
		/* valid chunks follow: what looked cut was a partial chunk */
		if (cut)
			snprintf(why, sizeof(why), "an incomplete chunk at byte %" PRIu64, bad);
		note_damage(r, why);
		return ret == CHUNK_REFUSED ? refuse(r, rwhy) : ret;
	}
	if (r->gave_up && !r->damage[0])
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 " (the search for a valid chunk after it stopped: too many false chunk "
			 "headers)");
	note_damage(r, why);
	r->offset = bad;
	/* nothing valid follows: a partial chunk at the end is a cut file; a
	 * whole chunk that does not validate, or bytes that are no chunk, damage */
	if (cut && !r->gave_up) {
		r->cut = 1;
		r->cut_bytes = r->file_size > bad ? r->file_size - bad : 0;
	} else {
		r->bytes_skipped += r->file_size > bad ? r->file_size - bad : 0;
		r->chunks_skipped++;
	}
	return CHUNK_END;
}

/* Loads the next chunk into r->raw, passing over damage and repeated
 * chunks. 1 = loaded, 0 = end. */
static int next_chunk(struct gw_reader *r)
{
	int ret;

	while ((ret = next_chunk_once(r)) == CHUNK_REPEAT) {
		char why[160];

		r->chunks_repeated++;
		r->bytes_repeated += r->offset - r->repeat_at;
		snprintf(why, sizeof(why), "the chunk at byte %" PRIu64 " repeats the one at byte %"
			 PRIu64 " byte for byte (a bad copy)", r->repeat_at, r->repeat_of);
		note_damage(r, why);
	}
	return ret == CHUNK_LOADED;
}

/* Whether the first `left` varints of [p, end) hold a malformed one, as
 * gw_get_uvarint decides: one the record's end cuts, or one whose 10th byte
 * still has the continuation bit (a run of 10 such bytes). Bytes after the
 * first `left` varints (fields of a newer version) are not checked. This is
 * on every report's hot path: the continuation bits of a short tail are
 * gathered 8 bytes at a time into a mask; a tail whose last byte ends a
 * varint and that has no run of 10 is well formed, and only the others (or
 * long tails) are walked byte by byte. */
static int tail_malformed(const uint8_t *p, const uint8_t *end, unsigned left)
{
	size_t len = (size_t)(end - p);

	if (len <= 64) {
		uint64_t m = 0, a;

		for (size_t k = 0; k < len; k += 8) {
			uint64_t w;

			/* 8 bytes at once, little endian: the chunk buffer has 8
			 * readable bytes past its end, and the mask drops them */
			memcpy(&w, p + k, 8);
			m |= (((w & 0x8080808080808080ull) * 0x0002040810204081ull) >> 56) << k;
		}
		if (len < 64)
			m &= ((uint64_t)1 << len) - 1;
		a = m & m >> 1; /* runs of 2 */
		a &= a >> 2;    /* 4 */
		a &= a >> 4;    /* 8 */
		a &= a >> 2;    /* 10 */
		if (!(m >> (len - 1) & 1) && !a)
			return 0;
	}
	for (unsigned k = 0; k < left && p < end; k++) { /* exactly, byte by byte */
		unsigned run = 0;

		while (p < end && *p >= 0x80) {
			p++;
			if (++run >= 10)
				return 1;
		}
		if (p == end)
			return 1;
		p++;
	}
	return 0;
}

static int decode(struct gw_reader *r, const struct gw_rec_desc *d, unsigned type,
		  const uint8_t *p, const uint8_t *end, struct gw_record *rec)
{
	uint64_t rec_t = 0, x;
	size_t n;

	/* not a memset of the whole record: this is the hot loop of every report */
	rec->type = type;
	rec->stream = r->stream;
	rec->nfields = 0;
	rec->blob = rec->blob2 = NULL;
	rec->blob_len = rec->blob2_len = 0;
	if (type == GW_REC_STRING) {
		n = gw_get_uvarint(p, end, &x);
		if (!n)
			return -1;
		rec->v[0] = x;
		rec->nfields = 1;
		rec->blob = p + n;
		rec->blob_len = (size_t)(end - p - n);
		str_put(r, (uint64_t)r->stream << 32 | (x & 0xffffffffu), rec->blob, rec->blob_len);
		return 0;
	}
	if (type == GW_REC_META) {
		n = gw_get_uvarint(p, end, &x);
		if (!n || x > (uint64_t)(end - p - n))
			return -1;
		rec->blob = p + n;
		rec->blob_len = (size_t)x;
		rec->blob2 = p + n + x;
		rec->blob2_len = (size_t)(end - rec->blob2);
		if (x == sizeof(GW_END_KEY) - 1 && !memcmp(rec->blob, GW_END_KEY, x))
			r->ended = 1;
		return 0;
	}
	unsigned nf = r->want[type], i = 0;

	while (i < nf && p < end) {
		if (*p < 0x80) { /* one-byte varint: the common case */
			rec->v[i++] = *p++;
			continue;
		}
		n = gw_get_uvarint(p, end, &x);
		if (!n)
			return -1;
		p += n;
		rec->v[i++] = x;
	}
	rec->nfields = i;
	/* Fields not wanted are still checked, so that whether a record is
	 * malformed does not depend on which fields a reader asked for. */
	if (i < d->nfields && p < end && tail_malformed(p, end, d->nfields - i))
		return -1;
	for (unsigned k = i; k < d->nfields; k++)
		rec->v[k] = 0; /* fields an older writer did not have, or not wanted */
	const struct coded_fields *c = &r->coded[type];

	for (unsigned k = 0; k < c->n && c->idx[k] < i; k++) {
		uint64_t *v = &rec->v[c->idx[k]];

		if (c->kind[k] == 't') {
			*v = r->last_time + (uint64_t)gw_unzigzag(*v);
			r->last_time = rec_t = *v;
		} else if (c->kind[k] == 'd') {
			*v += rec_t;
		} else {
			*v = (uint64_t)gw_unzigzag(*v);
		}
	}
	return 0;
}

void gw_reader_fields(struct gw_reader *r, unsigned type, unsigned n)
{
	if (type >= GW_REC_TYPE_MAX || !r->desc[type])
		return;
	/* time (delta) fields chain from record to record: never skip one */
	for (unsigned k = 0; k < r->coded[type].n; k++)
		if (r->coded[type].kind[k] == 't' && n <= r->coded[type].idx[k])
			n = r->coded[type].idx[k] + 1u;
	r->want[type] = (uint8_t)(n < r->desc[type]->nfields ? n : r->desc[type]->nfields);
}

int gw_reader_next(struct gw_reader *r, struct gw_record *rec)
{
	for (;;) {
		uint64_t type, len;
		size_t n1, n2;
		const uint8_t *p, *end;

		if (r->done)
			return 0;
		if (r->pos >= r->raw_len) {
			if (!next_chunk(r)) {
				r->done = 1;
				return 0;
			}
			continue;
		}
		p = r->raw + r->pos;
		end = r->raw + r->raw_len;
		if (end - p >= 2 && p[0] < 0x80 && p[1] < 0x80) { /* the common case: one byte each */
			type = p[0];
			len = p[1];
			n1 = n2 = 1;
		} else {
			n1 = gw_get_uvarint(p, end, &type);
			n2 = n1 ? gw_get_uvarint(p + n1, end, &len) : 0;
		}
		if (!n1 || !n2 || len > (uint64_t)(end - p - n1 - n2)) {
			char why[160];

			/* no later record boundary is known: the rest of the chunk goes */
			snprintf(why, sizeof(why),
				 "malformed record in the chunk ending at byte %" PRIu64, r->offset);
			note_damage(r, why);
			r->malformed++;
			r->pos = r->raw_len;
			continue;
		}
		p += n1 + n2;
		r->pos += n1 + n2 + len;
		const struct gw_rec_desc *d = type < GW_REC_TYPE_MAX ? r->desc[type] : NULL;

		if (!d) {
			r->unknown++; /* from a newer minor version: skip */
			continue;
		}
		if (decode(r, d, (unsigned)type, p, p + len, rec) < 0) {
			char why[160];

			/* later records' times are coded against this one's: the
			 * rest of the chunk goes too */
			snprintf(why, sizeof(why),
				 "malformed %s record in the chunk ending at byte %" PRIu64, d->name,
				 r->offset);
			note_damage(r, why);
			r->malformed++;
			r->pos = r->raw_len;
			continue;
		}
		return 1;
	}
}

/* Copies every valid chunk of r to fd, then closes r. */
static int copy_chunks(struct gw_reader *r, int fd, int compress, uint64_t *bytes_out, char *err,
		       size_t errlen)
{
	int ret, copied = 0;

	while (next_chunk(r)) {
		ret = gw_write_chunk(fd, r->stream, r->raw, r->raw_len, compress, bytes_out);
		if (ret < 0) {
			snprintf(err, errlen, "cannot write: %s", strerror(-ret));
			gw_reader_close(r);
			return ret;
		}
		copied++;
	}
	if (r->damage[0])
		snprintf(err, errlen, "%s", r->damage);
	else if (errlen)
		err[0] = 0;
	gw_reader_close(r);
	return copied;
}

int gw_copy_chunks(const char *path, int fd, int compress, uint64_t *bytes_out, char *err,
		   size_t errlen)
{
	struct gw_reader *r;
	int ret;

	ret = gw_reader_open_flags(&r, path, GW_OPEN_REGULAR, err, errlen);
	if (ret < 0)
		return ret;
	return copy_chunks(r, fd, compress, bytes_out, err, errlen);
}

int gw_copy_chunks_fd(int in, const char *name, int fd, int compress, uint64_t *bytes_out,
		      char *err, size_t errlen)
{
	struct gw_reader *r;
	int ret;

	ret = gw_reader_open_fd(&r, in, name, GW_OPEN_REGULAR, err, errlen);
	if (ret < 0)
		return ret;
	return copy_chunks(r, fd, compress, bytes_out, err, errlen);
}
