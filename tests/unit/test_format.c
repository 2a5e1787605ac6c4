/* The recording format: varints, writer/reader round trip, interning,
 * truncation at every offset, corruption, versions, schema indexes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/format.h"
#include "t.h"

static char dir[] = "/tmp/gw-test-format-XXXXXX";

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

static void test_varint(void)
{
	uint64_t vals[] = { 0, 1, 127, 128, 300, 16383, 16384, 1ull << 32, UINT64_MAX };
	uint8_t buf[16];

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint64_t back = 0;
		size_t n = gw_put_uvarint(buf, vals[i]);

		CHECK(gw_get_uvarint(buf, buf + n, &back) == n && back == vals[i], "value %llu",
		      (unsigned long long)vals[i]);
		CHECK(gw_get_uvarint(buf, buf + n - 1, &back) == 0, "short buffer must fail");
	}
}

static void test_schema(void)
{
	CHECK(gw_field_index(GW_REC_KERNEL, "correlation") == GW_KERNEL_CORR, "kernel corr");
	CHECK(gw_field_index(GW_REC_KERNEL, "graph_id") == GW_KERNEL_NF - 1, "kernel count");
	CHECK(gw_field_index(GW_REC_MEMCPY, "correlation") == GW_MEMCPY_NF - 1, "memcpy count");
	CHECK(gw_field_index(GW_REC_API, "domain") == GW_API_DOMAIN, "api domain");
	CHECK(gw_field_index(GW_REC_API, "py_stack") == GW_API_NF - 1, "api count");
	CHECK(gw_field_index(GW_REC_PY_FRAME, "line") == GW_PYF_NF - 1, "py_frame");
	CHECK(gw_field_index(GW_REC_PY_STACK, "frame") == GW_PYK_NF - 1, "py_stack");
	CHECK(gw_field_index(GW_REC_PY_SAMPLE, "stack") == GW_PYS_STACK &&
	      gw_field_index(GW_REC_PY_SAMPLE, "state") == GW_PYS_NF - 1, "py_sample");
	CHECK(gw_field_index(GW_REC_PY_STATUS, "dropped") == GW_PYST_NF - 1, "py_status");
	CHECK(gw_field_index(GW_REC_THREAD, "involuntary_csw") == GW_THREAD_IVCSW &&
	      gw_field_index(GW_REC_THREAD, "run_delay_ns") == GW_THREAD_NF - 1, "thread");
	CHECK(gw_field_index(GW_REC_PROC_LIBS, "python") == GW_PLIBS_NF - 1 && GW_REC_PROC_LIBS == 26,
	      "proc_libs");
	CHECK(gw_field_index(GW_REC_GPU, "mem_util_pct") == GW_GPU_NF - 1, "gpu");
	CHECK(gw_field_index(GW_REC_GPM, "pcie_rx_mibs_x100") == GW_GPM_NF - 1, "gpm");
	CHECK(gw_field_index(GW_REC_GPU_INFO, "cpu_affinity") == GW_GINFO_NF - 1, "gpu_info");
	CHECK(gw_field_index(GW_REC_PROCESS, "is_target") == GW_PROC_NF - 1, "process");
	CHECK(gw_field_index(GW_REC_SYS_CPU, "ncpu") == GW_SCPU_NF - 1, "sys_cpu");
	CHECK(gw_rec_desc(63) == NULL, "unknown type has no descriptor");
}

/* Writes a small synthetic recording: 3 chunks, strings, meta, kernels. */
static int write_sample(const char *path, int compress, int nkernels)
{
	struct gw_writer w;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return -1;
	gw_write_file_header(fd);
	gw_writer_init(&w, fd, 4242, compress, 4096);
	gw_emit_meta(&w, "target.cmdline", "python train.py --lr 0.1");
	for (int i = 0; i < nkernels; i++) {
		char name[32];

		snprintf(name, sizeof(name), "kernel_%d", i % 7);
		uint64_t v[GW_KERNEL_NF] = { 1000000000ull + (uint64_t)i * 10000, 1000000000ull + (uint64_t)i * 10000 + 5000,
					     gw_intern(&w, name), 0, 1, 7, 64, 1, 1, 128, 1, 1, (uint64_t)i + 1, 32,
					     0, 0 };
		gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
	}
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	return 0;
}

static int read_all(const char *path, int *nkernels, int *names_ok, int *damaged)
{
	struct gw_reader *r;
	struct gw_record rec;
	char err[256];
	int ret = gw_reader_open(&r, path, err, sizeof(err));

	*nkernels = 0;
	*names_ok = 1;
	*damaged = 0;
	if (ret < 0)
		return ret;
	while (gw_reader_next(r, &rec) == 1) {
		if (rec.type != GW_REC_KERNEL)
			continue;
		uint64_t i = rec.v[GW_KERNEL_CORR] - 1;
		char want[32];

		snprintf(want, sizeof(want), "kernel_%d", (int)(i % 7));
		if (strcmp(gw_reader_string(r, rec.stream, rec.v[GW_KERNEL_NAME]), want) != 0 ||
		    rec.v[GW_KERNEL_START] != 1000000000ull + i * 10000 ||
		    rec.v[GW_KERNEL_END] != rec.v[GW_KERNEL_START] + 5000 || rec.v[GW_KERNEL_GX] != 64 ||
		    rec.stream != 4242)
			*names_ok = 0;
		(*nkernels)++;
	}
	*damaged = gw_reader_damage(r) != NULL;
	gw_reader_close(r);
	return 0;
}

static void test_round_trip(void)
{
	char path[256];
	int n, ok, dmg;

	for (int compress = 0; compress <= 6; compress += 6) {
		path_of(path, sizeof(path), "rt.gwr");
		CHECK(write_sample(path, compress, 1000) == 0, "write");
		CHECK(read_all(path, &n, &ok, &dmg) == 0, "read");
		CHECK(n == 1000 && ok && !dmg, "compress %d: %d kernels, fields ok %d, damaged %d", compress, n,
		      ok, dmg);
	}
	/* compact: at most 32 bytes per kernel record on disk, uncompressed */
	struct stat st;

	path_of(path, sizeof(path), "size.gwr");
	write_sample(path, 0, 10000);
	stat(path, &st);
	CHECK(st.st_size / 10000 <= 32, "%lld bytes per kernel", (long long)(st.st_size / 10000));
}

/* A reader that wants only a kernel's first fields gets them right, the
 * others as 0, and the records after them still in step. */
static void test_fewer_fields(void)
{
	char path[256], err[256];
	struct gw_reader *r;
	struct gw_record rec;
	int n = 0, ok = 1;

	path_of(path, sizeof(path), "few.gwr");
	CHECK(write_sample(path, 6, 500) == 0, "write");
	if (gw_reader_open(&r, path, err, sizeof(err)) < 0) {
		CHECK(0, "open: %s", err);
		return;
	}
	gw_reader_fields(r, GW_REC_KERNEL, GW_KERNEL_GZ + 1);
	while (gw_reader_next(r, &rec) == 1) {
		if (rec.type != GW_REC_KERNEL)
			continue;
		ok &= rec.v[GW_KERNEL_START] == 1000000000ull + (uint64_t)n * 10000 &&
		      rec.v[GW_KERNEL_END] == rec.v[GW_KERNEL_START] + 5000 && rec.v[GW_KERNEL_GX] == 64 &&
		      rec.v[GW_KERNEL_BX] == 0 && rec.v[GW_KERNEL_CORR] == 0;
		n++;
	}
	CHECK(n == 500 && ok && !gw_reader_damage(r), "%d kernels with the first fields only, ok %d", n,
	      ok);
	gw_reader_close(r);
	/* asking for no field at all still decodes the start, which the next
	 * record's start is coded against */
	if (gw_reader_open(&r, path, err, sizeof(err)) < 0)
		return;
	gw_reader_fields(r, GW_REC_KERNEL, 0);
	n = 0;
	ok = 1;
	while (gw_reader_next(r, &rec) == 1)
		if (rec.type == GW_REC_KERNEL)
			ok &= rec.v[GW_KERNEL_START] == 1000000000ull + (uint64_t)n++ * 10000 &&
			      rec.v[GW_KERNEL_END] == 0;
	CHECK(n == 500 && ok, "no fields asked: starts still right (%d kernels, ok %d)", n, ok);
	gw_reader_close(r);
}

/* Python stacks: the trie shares prefixes, a sample is one small record, an
 * api record carries its stack, an api record written without the field
 * (as before it existed) reads 0, and definitions lost with a chunk are
 * written again. Synthetic frames. */
static void test_pytrie(void)
{
	char path[256], err[256];
	struct gw_pyframe a[3] = { { "/site-packages/torch/_tensor.py", "item", 10 },
				   { "train.py", "train_step", 57 }, { "train.py", "main", 90 } };
	struct gw_pyframe b[2] = { { "train.py", "log", 60 }, { "train.py", "main", 90 } };
	struct gw_pytrie *t = gw_pytrie_new(1000);
	struct gw_writer w;
	struct gw_reader *r;
	struct gw_record rec;
	uint32_t sa, sb, sa2;
	int fd;

	path_of(path, sizeof(path), "py.gwr");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gw_write_file_header(fd);
	gw_writer_init(&w, fd, 77, 0, 1 << 16);
	sa = gw_pytrie_stack(t, a, 3);
	sb = gw_pytrie_stack(t, b, 2);
	sa2 = gw_pytrie_stack(t, a, 3);
	CHECK(sa && sb && sa == sa2 && sa != sb, "stack ids %u %u %u", sa, sb, sa2);
	uint32_t nf, ns;

	gw_pytrie_counts(t, &nf, &ns);
	CHECK(nf == 4 && ns == 4, "shared root: 4 frames, 4 nodes (got %u, %u)", nf, ns);
	CHECK(gw_pytrie_stack(t, a, 0) == 0, "an empty stack is 0");
	gw_pytrie_emit(t, &w);
	size_t before = w.len;

	for (int i = 0; i < 1000; i++) {
		uint64_t v[GW_PYS_NF] = { 5000000000ull + (uint64_t)i * 10000000ull, 4242, 4243,
					  i % 2 ? sa : sb, GW_PYSTATE_RUN };
		gw_emit(&w, GW_REC_PY_SAMPLE, v, GW_PYS_NF);
	}
	double per = (double)(w.len - before) / 1000;

	CHECK(per <= 13, "%.1f bytes per sample uncompressed (at most 13: 12, and the thread's state)", per);
	uint64_t api[GW_API_NF] = { 6000000000ull, 6000001000ull, 131, 4243, 9,
				    gw_intern(&w, "cudaStreamSynchronize"), 2, sa };
	gw_emit(&w, GW_REC_API, api, GW_API_NF);
	gw_emit(&w, GW_REC_API, api, GW_API_DOMAIN + 1); /* written without py_stack */
	/* the writer's definitions are lost (a failed chunk, a new segment) */
	w.intern_gen++;
	gw_pytrie_emit(t, &w);
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	gw_pytrie_free(t);

	if (gw_reader_open(&r, path, err, sizeof(err)) < 0) {
		CHECK(0, "open: %s", err);
		return;
	}
	uint64_t parent[16] = { 0 }, frame[16] = { 0 }, line[16] = { 0 };
	int frames_def = 0, stacks_def = 0, samples = 0, apis = 0;
	uint64_t api_stack[2] = { 99, 99 };
	char func[16][32] = { { 0 } };

	while (gw_reader_next(r, &rec) == 1) {
		if (rec.type == GW_REC_PY_FRAME && rec.v[GW_PYF_ID] < 16) {
			frames_def++;
			line[rec.v[GW_PYF_ID]] = rec.v[GW_PYF_LINE];
			snprintf(func[rec.v[GW_PYF_ID]], 32, "%s",
				 gw_reader_string(r, rec.stream, rec.v[GW_PYF_FUNC]));
		} else if (rec.type == GW_REC_PY_STACK && rec.v[GW_PYK_ID] < 16) {
			stacks_def++;
			parent[rec.v[GW_PYK_ID]] = rec.v[GW_PYK_PARENT];
			frame[rec.v[GW_PYK_ID]] = rec.v[GW_PYK_FRAME];
		} else if (rec.type == GW_REC_PY_SAMPLE) {
			samples += rec.v[GW_PYS_STACK] == (samples % 2 ? sa : sb) &&
				   rec.v[GW_PYS_TID] == 4243;
		} else if (rec.type == GW_REC_API && apis < 2) {
			api_stack[apis++] = rec.v[GW_API_PY_STACK];
		}
	}
	CHECK(frames_def == 8 && stacks_def == 8, "defined twice: %d frames, %d stacks", frames_def,
	      stacks_def);
	CHECK(samples == 1000, "%d samples read back", samples);
	CHECK(api_stack[0] == sa && api_stack[1] == 0, "api py_stack %llu, old api record %llu",
	      (unsigned long long)api_stack[0], (unsigned long long)api_stack[1]);
	/* the innermost node of sa is item(), under train_step:57, under main:90 */
	CHECK(sa < 16 && !strcmp(func[frame[sa]], "item") && line[frame[parent[sa]]] == 57 &&
	      line[frame[parent[parent[sa]]]] == 90 && parent[parent[parent[sa]]] == 0,
	      "stack of the sample walks back to main");
	gw_reader_close(r);
}

static void test_truncation(void)
{
	char path[256], cut[256];
	struct stat st;
	int prev = 0, bad = 0, n, ok, dmg;

	path_of(path, sizeof(path), "full.gwr");
	path_of(cut, sizeof(cut), "cut.gwr");
	write_sample(path, 0, 300);
	stat(path, &st);
	char *buf = malloc((size_t)st.st_size);
	int fd = open(path, O_RDONLY);

	CHECK(read(fd, buf, (size_t)st.st_size) == st.st_size, "read back");
	close(fd);
	/* Every prefix must read without error, yield a monotone number of
	 * correct records, and say it is damaged unless cut at a chunk end. */
	for (off_t len = GW_FILE_HEADER_SIZE; len <= st.st_size; len++) {
		fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (write(fd, buf, (size_t)len) != len)
			bad++;
		close(fd);
		if (read_all(cut, &n, &ok, &dmg) < 0 || !ok || n < prev)
			bad++;
		prev = n;
	}
	CHECK(bad == 0, "%d bad prefixes of %lld", bad, (long long)st.st_size);
	CHECK(prev == 300, "the whole file reads all records (%d)", prev);
	/* a prefix shorter than the header is not a recording */
	fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(write(fd, buf, 10) == 10, "write");
	close(fd);
	CHECK(read_all(cut, &n, &ok, &dmg) == -EPROTO, "short header is rejected");
	/* a flipped byte inside a chunk is caught by the CRC */
	buf[st.st_size / 2] ^= 0x5a;
	fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(write(fd, buf, (size_t)st.st_size) == st.st_size, "write");
	close(fd);
	/* the chunks after it are read (names defined in the lost chunk read "?") */
	CHECK(read_all(cut, &n, &ok, &dmg) == 0 && dmg && n < 300 && n > 0,
	      "corruption: %d records, damaged %d", n, dmg);
	free(buf);
}

static void test_versions(void)
{
	char path[256], err[256];
	struct gw_reader *r;
	uint8_t h[GW_FILE_HEADER_SIZE] = { 0 };

	path_of(path, sizeof(path), "v9.gwr");
	memcpy(h, GW_MAGIC, 8);
	h[8] = GW_VERSION_MAJOR + 1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(write(fd, h, sizeof(h)) == sizeof(h), "write");
	close(fd);
	CHECK(gw_reader_open(&r, path, err, sizeof(err)) == -EPROTO && strstr(err, "version"),
	      "newer major version refused: %s", err);
	CHECK(gw_reader_open(&r, dir, err, sizeof(err)) == -EISDIR, "directory refused: %s", err);
	CHECK(gw_reader_open(&r, "/nonexistent/x.gwr", err, sizeof(err)) == -ENOENT, "missing file");
}

/* Unknown record types (from a newer minor version) are skipped, not fatal. */
static void test_unknown_records(void)
{
	char path[256], err[256];
	uint8_t raw[64];
	size_t n = 0;
	struct gw_reader *r;
	struct gw_record rec;
	int fd, got = 0;

	n += gw_put_uvarint(raw + n, 60); /* unknown type */
	n += gw_put_uvarint(raw + n, 3);
	raw[n++] = 1, raw[n++] = 2, raw[n++] = 3;
	n += gw_put_uvarint(raw + n, GW_REC_PROC_EXIT);
	n += gw_put_uvarint(raw + n, 3);
	raw[n++] = 10, raw[n++] = 20, raw[n++] = 2; /* ts=5 (zigzag), pid=20, status=1 */
	path_of(path, sizeof(path), "unknown.gwr");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gw_write_file_header(fd);
	gw_write_chunk(fd, 1, raw, n, 0, NULL);
	close(fd);
	CHECK(gw_reader_open(&r, path, err, sizeof(err)) == 0, "open");
	while (gw_reader_next(r, &rec) == 1)
		got += rec.type == GW_REC_PROC_EXIT && rec.v[GW_PEXIT_PID] == 20 &&
		       (int64_t)rec.v[GW_PEXIT_STATUS] == 1;
	CHECK(got == 1 && gw_reader_unknown_records(r) == 1 && !gw_reader_damage(r),
	      "got %d, unknown %llu", got, (unsigned long long)gw_reader_unknown_records(r));
	gw_reader_close(r);
}

/* Ring mode: segments rotate, the oldest go, each kept one decodes alone
 * with its own strings, and together they hold the newest records. */
static void test_ring_segments(void)
{
	struct gw_segments seg;
	struct gw_writer w;
	char path[4200], err[256];
	int fd = gw_seg_open(&seg, dir, "ring", 4096, 3), rotations = 0;
	uint64_t last_seen = 0, first_kept = UINT64_MAX;

	CHECK(fd > 0, "open first segment");
	gw_writer_init(&w, fd, 7, 0, 4096);
	for (int i = 1; i <= 3000; i++) {
		uint64_t v[GW_KERNEL_NF] = { 1000000ull * (uint64_t)i, 1000000ull * (uint64_t)i + 10,
					     gw_intern(&w, i % 2 ? "odd" : "even"), 0, 0, 0, 1, 1, 1, 1, 1, 1,
					     (uint64_t)i, 0, 0, 0 };
		gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
		if (i % 50 == 0) {
			gw_flush(&w);
			rotations += gw_seg_rotate_if_full(&seg, &w) == 1;
		}
	}
	gw_flush(&w);
	gw_writer_free(&w);
	gw_seg_close(&seg);
	CHECK(rotations >= 5 && seg.dropped == seg.seq - 3, "rotations %d, dropped %llu, seq %u", rotations,
	      (unsigned long long)seg.dropped, seg.seq);
	for (unsigned q = 1; q <= seg.seq; q++) {
		struct gw_reader *r;
		struct gw_record rec;
		int names_ok = 1, n = 0;

		snprintf(path, sizeof(path), "%s/ring.%06u.gws", dir, q);
		if (q < seg.first) {
			CHECK(access(path, F_OK) != 0, "segment %u deleted", q);
			continue;
		}
		CHECK(gw_reader_open(&r, path, err, sizeof(err)) == 0, "segment %u: %s", q, err);
		while (gw_reader_next(r, &rec) == 1) {
			if (rec.type != GW_REC_KERNEL)
				continue;
			uint64_t i = rec.v[GW_KERNEL_CORR];

			names_ok &= !strcmp(gw_reader_string(r, 7, rec.v[GW_KERNEL_NAME]), i % 2 ? "odd" : "even");
			if (i < first_kept)
				first_kept = i;
			last_seen = i > last_seen ? i : last_seen;
			n++;
		}
		CHECK(names_ok && (n > 0 || q == seg.seq) && !gw_reader_damage(r), "segment %u: %d records, names ok %d", q, n,
		      names_ok);
		gw_reader_close(r);
	}
	CHECK(last_seen == 3000 && first_kept > 1, "kept records %llu..%llu: the newest",
	      (unsigned long long)first_kept, (unsigned long long)last_seen);
	/* the kept segments merged into one file, as record does at the end:
	 * one stream's chunks, none taken for a repeat of another */
	char merged[4200];
	struct gw_verdict v;
	struct gw_reader *r;
	struct gw_record rec;
	uint64_t kernels = 0;

	path_of(merged, sizeof(merged), "ring-merged.gwr");
	fd = open(merged, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gw_write_file_header(fd);
	for (unsigned q = seg.first; q <= seg.seq; q++) {
		snprintf(path, sizeof(path), "%s/ring.%06u.gws", dir, q);
		gw_copy_chunks(path, fd, 1, NULL, err, sizeof(err));
	}
	close(fd);
	CHECK(gw_reader_open(&r, merged, err, sizeof(err)) == 0, "merged segments: %s", err);
	while (gw_reader_next(r, &rec) == 1)
		kernels += rec.type == GW_REC_KERNEL;
	gw_reader_verdict(r, 0, &v);
	gw_reader_close(r);
	CHECK(v.kind == GW_VERDICT_OK && !v.chunks_repeated && kernels == 3000 - first_kept + 1,
	      "merged segments: verdict %s, %llu repeated, %llu kernels (want %llu)", gw_verdict_name(&v),
	      (unsigned long long)v.chunks_repeated, (unsigned long long)kernels,
	      (unsigned long long)(3000 - first_kept + 1));
}

/* Chunks alike that are not copies: two processes whose chunks hold the same
 * bytes (streams differ), and a chunk of untimed records alone (string
 * definitions, a thread name) written twice in one stream: read, not taken
 * for repeats. */
static void test_alike_chunks(void)
{
	uint8_t raw[256];
	size_t n = 0;
	char path[256], err[256];
	struct gw_reader *r;
	struct gw_record rec;
	struct gw_verdict v;
	unsigned kernels = 0, names = 0;

	raw[n++] = GW_REC_STRING;
	raw[n++] = 2;
	raw[n++] = 1;
	raw[n++] = 'k';
	raw[n++] = GW_REC_THREAD_NAME;
	raw[n++] = 3;
	raw[n++] = 100;
	raw[n++] = 100;
	raw[n++] = 1;
	size_t untimed = n;
	uint8_t kernel[] = { GW_REC_KERNEL, 16, 0x80, 0x94, 0xeb, 0xdc, 0x07, 100, 1, 0, 1, 7, 1, 1, 1, 64, 1, 1 };

	memcpy(raw + n, kernel, sizeof(kernel));
	n += sizeof(kernel);
	path_of(path, sizeof(path), "alike.gwr");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	gw_write_file_header(fd);
	gw_write_chunk(fd, 100, raw, untimed, 0, NULL);
	gw_write_chunk(fd, 100, raw, untimed, 0, NULL);  /* untimed, again */
	gw_write_chunk(fd, 101, raw, n, 1, NULL);        /* two streams, the same bytes */
	gw_write_chunk(fd, 102, raw, n, 1, NULL);
	gw_write_chunk(fd, 100, raw, untimed, 1, NULL);
	gw_write_chunk(fd, 100, raw, untimed, 1, NULL);
	close(fd);
	CHECK(gw_reader_open(&r, path, err, sizeof(err)) == 0, "alike: %s", err);
	while (gw_reader_next(r, &rec) == 1) {
		kernels += rec.type == GW_REC_KERNEL;
		names += rec.type == GW_REC_THREAD_NAME;
	}
	gw_reader_verdict(r, 0, &v);
	gw_reader_close(r);
	CHECK(v.kind == GW_VERDICT_OK && !v.chunks_repeated && kernels == 2 && names == 6,
	      "alike chunks: verdict %s (%s), %llu repeated, %u kernels (want 2), %u thread names (want 6)",
	      gw_verdict_name(&v), v.first, (unsigned long long)v.chunks_repeated, kernels, names);
}

static void test_env_allowlist(void)
{
	CHECK(gw_env_allowed("CUDA_LAUNCH_BLOCKING"), "CUDA_LAUNCH_BLOCKING");
	CHECK(gw_env_allowed("NCCL_DEBUG"), "NCCL_ prefix");
	CHECK(gw_env_allowed("OMP_NUM_THREADS"), "OMP_NUM_THREADS");
	CHECK(!gw_env_allowed("AWS_SECRET_ACCESS_KEY"), "secret");
	CHECK(!gw_env_allowed("NCCL_AUTH_TOKEN"), "secret under an allowed prefix");
	CHECK(!gw_env_allowed("HOME"), "others");
	CHECK(!gw_env_allowed("CUDA_LAUNCH_BLOCKINGX"), "exact names only");
}

/* The bytes (file header stripped) of a synthetic piece of recording:
 * kernels [from, from + n) as write_sample makes them, in one chunk with its
 * own string definitions; end: the end record after them. */
static size_t piece(uint8_t **out, int from, int n, int end)
{
	char path[256];
	struct gw_writer w;
	struct stat st;
	uint8_t *buf;
	int fd;

	path_of(path, sizeof(path), "piece.gwr");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	gw_write_file_header(fd);
	gw_writer_init(&w, fd, 4242, 0, 1 << 16);
	for (int i = from; i < from + n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "kernel_%d", i % 7);
		uint64_t v[GW_KERNEL_NF] = { 1000000000ull + (uint64_t)i * 10000, 1000000000ull + (uint64_t)i * 10000 + 5000,
					     gw_intern(&w, name), 0, 1, 7, 64, 1, 1, 128, 1, 1, (uint64_t)i + 1, 32,
					     0, 0 };
		gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
	}
	if (end)
		gw_emit_meta(&w, GW_END_KEY, "1");
	gw_flush(&w);
	gw_writer_free(&w);
	fstat(fd, &st);
	buf = malloc((size_t)st.st_size);
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		st.st_size = GW_FILE_HEADER_SIZE;
	close(fd);
	memmove(buf, buf + GW_FILE_HEADER_SIZE, (size_t)st.st_size - GW_FILE_HEADER_SIZE);
	*out = buf;
	return (size_t)st.st_size - GW_FILE_HEADER_SIZE;
}

/* The composed files live in memory (a memfd read through /proc/self/fd):
 * thousands of them are made. */
static int mem_fd = -1;

/* Writes a file header and the given byte ranges to the memory file at path. */
static void compose(const char *path, const uint8_t *const *parts, const size_t *lens, int n)
{
	(void)path;
	if (ftruncate(mem_fd, 0) < 0 || lseek(mem_fd, 0, SEEK_SET) < 0)
		printf("cannot reset the memory file\n");
	gw_write_file_header(mem_fd);
	for (int i = 0; i < n; i++)
		if (write(mem_fd, parts[i], lens[i]) != (ssize_t)lens[i])
			printf("short write\n");
}

/* Reads a file through and returns its verdict (main recording). */
static int verdict_of(const char *path, unsigned kernel_fields, int *nkernels, struct gw_verdict *v)
{
	struct gw_reader *r;
	struct gw_record rec;
	char err[256];
	int ret = gw_reader_open(&r, path, err, sizeof(err));

	*nkernels = 0;
	if (ret < 0)
		return ret;
	if (kernel_fields)
		gw_reader_fields(r, GW_REC_KERNEL, kernel_fields);
	while (gw_reader_next(r, &rec) == 1)
		*nkernels += rec.type == GW_REC_KERNEL;
	gw_reader_verdict(r, 1, v);
	gw_reader_close(r);
	return 0;
}

/* A disk that fills and frees leaves a partial chunk before whole ones; a
 * damaged chunk sits between good ones; a file is cut at a chunk boundary:
 * the reader reads on past damage, counts what it skipped, and gives the
 * one verdict every command reports. */
static void test_damage_verdict(void)
{
	char path[256], msg[1024];
	uint8_t *a, *b, *c, *d;
	size_t la = piece(&a, 0, 100, 0), lb = piece(&b, 100, 100, 0), lc = piece(&c, 200, 100, 0),
	       ld = piece(&d, 300, 100, 1);
	struct gw_verdict v;
	int n, ok, dmg;

	mem_fd = memfd_create("verdict.gwr", 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mem_fd);
	{ /* intact */
		const uint8_t *p[] = { a, b, c, d };
		size_t l[] = { la, lb, lc, ld };

		compose(path, p, l, 4);
		CHECK(verdict_of(path, 0, &n, &v) == 0 && n == 400 && v.kind == GW_VERDICT_OK &&
		      gw_verdict_exit(&v) == 0 && v.ended, "intact: %d kernels, verdict %s", n,
		      gw_verdict_name(&v));
	}
	{ /* a partial chunk (half of b) followed by whole ones */
		const uint8_t *p[] = { a, b, c, d };
		size_t l[] = { la, lb / 2, lc, ld };

		compose(path, p, l, 4);
		CHECK(read_all(path, &n, &ok, &dmg) == 0 && n == 300 && ok && dmg,
		      "partial chunk: %d kernels read after it (want 300), fields ok %d", n, ok);
		CHECK(verdict_of(path, 0, &n, &v) == 0 && v.kind == GW_VERDICT_DAMAGED &&
		      v.bytes_skipped == lb / 2 && v.chunks_skipped == 1 && v.ended &&
		      gw_verdict_exit(&v) == GW_EXIT_DAMAGED,
		      "partial chunk: verdict %s, %llu bytes skipped (want %zu), %llu chunks, ended %d",
		      gw_verdict_name(&v), (unsigned long long)v.bytes_skipped, lb / 2,
		      (unsigned long long)v.chunks_skipped, v.ended);
		gw_verdict_describe(&v, msg, sizeof(msg));
		char want[64];

		snprintf(want, sizeof(want), "%zu damaged bytes skipped (1 chunk)", lb / 2);
		CHECK(strstr(msg, want) != NULL, "the message names the bytes skipped: %s", msg);
	}
	{ /* a partial chunk of every length, and a flipped bit at every byte of
	   * a chunk but those the reader does not check (chunk type, reserved,
	   * flag bits 1-15, stream): the chunks around it all read */
		uint8_t *bad = malloc(lb);
		const uint8_t *p[] = { a, bad, c, d };
		size_t l[] = { la, lb, lc, ld };
		int wrong = 0, tried = 0;

		memcpy(bad, b, lb);
		for (size_t k = 1; k < lb; k++, tried++) {
			l[1] = k;
			compose(path, p, l, 4);
			if (verdict_of(path, 0, &n, &v) < 0 || n != 300 || v.kind != GW_VERDICT_DAMAGED ||
			    v.bytes_skipped != k || !v.ended)
				wrong++;
		}
		l[1] = lb;
		for (size_t k = 0; k < lb; k++) {
			if ((k >= 4 && k <= 5) || (k >= 7 && k <= 11))
				continue;
			bad[k] ^= 0x01;
			compose(path, p, l, 4);
			if (verdict_of(path, 0, &n, &v) < 0 || n != 300 || v.kind != GW_VERDICT_DAMAGED ||
			    v.bytes_skipped != lb || !v.ended)
				wrong++;
			bad[k] ^= 0x01;
			tried++;
		}
		CHECK(wrong == 0 && tried > 2000, "%d of %d partial or bit-flipped chunks not passed over exactly",
		      wrong, tried);
		printf("damage: %d partial or bit-flipped chunks passed over\n", tried);
		free(bad);
	}
	{ /* a crafted region of 8,192 false chunk headers, each claiming the
	   * rest of the region: the search for a valid chunk gives up at its
	   * bound (what it may read is a multiple of the file's size) instead
	   * of reading about 800 MB, and says so */
		enum { NFAKE = 8192 };
		uint8_t *fake = calloc(NFAKE, 24);
		const uint8_t *p[] = { a, fake, d };
		size_t l[] = { la, (size_t)NFAKE * 24, ld };

		for (int k = 0; k < NFAKE; k++) {
			uint8_t *h = fake + (size_t)k * 24;
			uint32_t rest = (uint32_t)(NFAKE - k - 1) * 24;

			memcpy(h, "GWC1", 4);
			h[4] = 1;
			h[8] = 1;
			memcpy(h + 12, &rest, 4); /* stored and raw: little endian */
			memcpy(h + 16, &rest, 4);
		}
		compose(path, p, l, 3);
		CHECK(verdict_of(path, 0, &n, &v) == 0 && n == 100 && v.kind == GW_VERDICT_DAMAGED &&
		      strstr(v.first, "search for a valid chunk after it stopped"),
		      "false chunk headers: %d kernels, verdict %s: %s", n, gw_verdict_name(&v), v.first);
		free(fake);
	}
	{ /* a flipped bit in a whole chunk between good ones */
		uint8_t *bad = malloc(lb);
		const uint8_t *p[] = { a, bad, c, d };
		size_t l[] = { la, lb, lc, ld };

		memcpy(bad, b, lb);
		bad[lb / 2] ^= 0x10;
		compose(path, p, l, 4);
		CHECK(verdict_of(path, 0, &n, &v) == 0 && n == 300 && v.kind == GW_VERDICT_DAMAGED &&
		      v.bytes_skipped == lb && v.chunks_skipped == 1 &&
		      strstr(v.first, "checksum") != NULL,
		      "damaged chunk: %d kernels, %llu bytes skipped (want %zu): %s", n,
		      (unsigned long long)v.bytes_skipped, lb, v.first);
		free(bad);
	}
	{ /* cut at a chunk boundary, before the end record: truncated, not ok */
		const uint8_t *p[] = { a, b };
		size_t l[] = { la, lb };

		compose(path, p, l, 2);
		CHECK(verdict_of(path, 0, &n, &v) == 0 && n == 200 && v.kind == GW_VERDICT_TRUNCATED &&
		      !v.cut && !v.ended && gw_verdict_exit(&v) == GW_EXIT_DAMAGED,
		      "cut at a chunk boundary: verdict %s, cut %d", gw_verdict_name(&v), v.cut);
		gw_verdict_describe(&v, msg, sizeof(msg));
		CHECK(strstr(msg, "cut short") && strstr(msg, "without its end record"),
		      "the message says it was cut: %s", msg);
		/* cut inside the last chunk */
		l[1] = lb - 7;
		compose(path, p, l, 2);
		CHECK(verdict_of(path, 0, &n, &v) == 0 && n == 100 && v.kind == GW_VERDICT_TRUNCATED &&
		      v.cut && v.cut_bytes == lb - 7,
		      "cut inside a chunk: verdict %s, cut %d, %llu bytes", gw_verdict_name(&v), v.cut,
		      (unsigned long long)v.cut_bytes);
	}
	{ /* a malformed kernel record: the same verdict whatever fields are read
	   * (dump reads all, the report's first pass the first few) */
		uint8_t raw[64], *q = raw;
		char cpath[256];

		*q++ = GW_REC_KERNEL;
		*q++ = 24;
		for (int i = 0; i < 10; i++)
			*q++ = 1; /* fields 0..9 */
		for (int i = 0; i < 12; i++)
			*q++ = 0x80; /* field 10: a varint that never ends within 10 bytes */
		*q++ = 1;
		*q++ = 1;
		path_of(cpath, sizeof(cpath), "malformed.gwr");
		int fd = open(cpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		gw_write_file_header(fd);
		CHECK(write(fd, a, la) == (ssize_t)la, "write");
		gw_write_chunk(fd, 4242, raw, (size_t)(q - raw), 0, NULL);
		CHECK(write(fd, d, ld) == (ssize_t)ld, "write");
		close(fd);
		struct gw_verdict all, few;
		int nall, nfew;

		CHECK(verdict_of(cpath, 0, &nall, &all) == 0 && verdict_of(cpath, GW_KERNEL_DEVICE + 1, &nfew, &few) == 0,
		      "read");
		CHECK(all.kind == GW_VERDICT_DAMAGED && few.kind == GW_VERDICT_DAMAGED &&
		      all.records_malformed == 1 && few.records_malformed == 1 && nall == 200 && nfew == 200,
		      "malformed record: all fields %s (%llu malformed, %d kernels), first fields %s (%llu, %d)",
		      gw_verdict_name(&all), (unsigned long long)all.records_malformed, nall,
		      gw_verdict_name(&few), (unsigned long long)few.records_malformed, nfew);
	}
	free(a);
	free(b);
	free(c);
	free(d);
	close(mem_fd);
}

/* A FIFO where a side file should be: refused at once, never waited on. */
static void test_fifo_refused(void)
{
	char path[256], err[256];
	struct gw_reader *r;

	path_of(path, sizeof(path), "inject-1.gws");
	CHECK(mkfifo(path, 0600) == 0, "mkfifo");
	CHECK(gw_reader_open_flags(&r, path, GW_OPEN_REGULAR, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "FIFO"), "a FIFO is refused: %s", err);
	unlink(path);
}

int main(void)
{
	char cmd[128];

	if (!mkdtemp(dir))
		return 1;
	test_varint();
	test_schema();
	test_round_trip();
	test_fewer_fields();
	test_pytrie();
	test_truncation();
	test_versions();
	test_unknown_records();
	test_env_allowlist();
	test_ring_segments();
	test_alike_chunks();
	test_damage_verdict();
	test_fifo_refused();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("could not remove %s\n", dir);
	T_DONE();
}
