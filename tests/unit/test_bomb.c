/* SYNTHETIC compression bombs (tests/unit/bomb.h): chunks of about 5 KB
 * that inflate to 4 MiB each. The reader stops at the chunk that would take
 * what the file inflates to past GW_INFLATE_LIMIT (16x its size + 8 MiB)
 * and says so; a chunk repeated byte for byte is skipped as a bad copy.
 * Asserted on the bytes inflated and the memory held, never on time
 * (bench/bomb.sh times them). */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "t.h"
#include "bomb.h"

static char path[] = "/tmp/gw-test-bomb-XXXXXX";

static size_t held(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

struct read {
	uint64_t kernels, inflated, file;
	struct gw_verdict v;
	char msg[1024];
};

/* Reads the file at path through, as every command does. */
static int read_through(struct read *o)
{
	struct gw_reader *r;
	struct gw_record rec;
	struct stat st;
	char err[256];
	int ret = gw_reader_open(&r, path, err, sizeof(err));

	memset(o, 0, sizeof(*o));
	if (ret < 0)
		return ret;
	while (gw_reader_next(r, &rec) == 1)
		o->kernels += rec.type == GW_REC_KERNEL;
	o->inflated = gw_reader_inflated(r);
	gw_reader_verdict(r, 1, &o->v);
	gw_verdict_describe(&o->v, o->msg, sizeof(o->msg));
	gw_reader_close(r);
	stat(path, &st);
	o->file = (uint64_t)st.st_size;
	return 0;
}

/* 10, 40 and 160 chunks (the sizes): what is inflated stays under
 * the bound, a linear function of the file's size (before: every chunk,
 * 4 MiB each, 640 MiB for 160), and the rest is refused with a warning that
 * says where and how much. */
static void test_bound(void)
{
	static const unsigned sizes[] = { 10, 40, 160 };

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		unsigned n = sizes[i];
		size_t per = bomb_write(path, n, 0);
		struct read o;
		int rd = read_through(&o);

		CHECK(per > 150000 && rd == 0, "bomb of %u chunks: written (%zu kernels each), read %d", n, per, rd);
		if (!per || rd < 0)
			continue;
		uint64_t limit = GW_INFLATE_LIMIT(o.file), read = o.kernels / per;

		CHECK(o.inflated <= limit && o.inflated + GW_CHUNK_MAX_RAW > limit,
		      "%u chunks: %.1f MiB inflated from a %.0f kB file (bound %.1f MiB)", n,
		      o.inflated / 1048576.0, o.file / 1000.0, limit / 1048576.0);
		CHECK(o.kernels % per == 0 && read >= 2 && read < n,
		      "%u chunks: %llu kernels read (%llu whole chunks of %zu)", n,
		      (unsigned long long)o.kernels, (unsigned long long)read, per);
		CHECK(o.v.kind == GW_VERDICT_DAMAGED && o.v.refused && gw_verdict_exit(&o.v) == GW_EXIT_DAMAGED &&
		      o.v.bytes_refused > 0 && o.v.refused_at + o.v.bytes_refused == o.file &&
		      o.v.bytes_skipped == 0 && o.v.chunks_repeated == 0,
		      "%u chunks: verdict %s, refused %d at byte %llu, %llu bytes refused of %llu", n,
		      gw_verdict_name(&o.v), o.v.refused, (unsigned long long)o.v.refused_at,
		      (unsigned long long)o.v.bytes_refused, (unsigned long long)o.file);
		char want[96];

		snprintf(want, sizeof(want), "the remaining %llu bytes were refused",
			 (unsigned long long)o.v.bytes_refused);
		CHECK(strstr(o.msg, "compression bomb") && strstr(o.msg, want) &&
		      strstr(o.msg, "What precedes was read"), "%u chunks: the warning says so: %s", n, o.msg);
		printf("bomb: %u chunks, %.0f kB: %.1f MiB inflated, %llu of %u chunks read\n", n,
		       o.file / 1000.0, o.inflated / 1048576.0, (unsigned long long)read, n);
	}
}

/* The whole analysis of the 160-chunk bomb (test_bound's file): what it holds and its peak
 * stay within a bound linear in the file's size (before: 1.78 GB), and the
 * report's warning says the rest was refused. */
static void test_analysis(void)
{
	struct trace t;
	struct analysis a;
	struct rusage ru;
	struct stat st;
	char err[256];
	size_t before = held();
	int found = 0;

	stat(path, &st); /* test_bound's last: 160 chunks */
	int ret = trace_load(&t, path, err, sizeof(err));

	if (ret == 0)
		ret = analyze(&t, &a, 0);
	size_t now = held() - before, file = (size_t)st.st_size;

	getrusage(RUSAGE_SELF, &ru);
	CHECK(ret == 0, "analysis of the bomb: %d (%s)", ret, err);
	for (size_t i = 0; ret == 0 && i < a.warnings.n; i++)
		found |= strstr(a.warnings.v[i], "bytes were refused") != NULL;
	CHECK(found && t.verdict.refused, "the report warns that the rest was refused");
	/* bytes held: 64x the file + 64 MiB, and the replay's graph: 40 bytes
	 * an operation of what was read (three times: its array's doubling,
	 * and what the allocator keeps of the arrays it outgrew); peak
	 * resident, sanitizer builds included: 1 GiB */
	size_t graph = 3 * (size_t)t.nops * 40;

	CHECK(now <= 64 * file + (64u << 20) + graph && ru.ru_maxrss <= (1L << 20),
	      "bomb: %.1f MiB held, peak %.0f MiB, for a %.1f MiB file (bounds %.1f MiB, 1024 MiB)",
	      now / 1048576.0, ru.ru_maxrss / 1024.0, file / 1048576.0,
	      (64.0 * file + (64u << 20) + (double)graph) / 1048576.0);
	printf("bomb: analysis of 160 chunks (%.0f kB): %.1f MiB held, peak resident %.0f MiB\n",
	       file / 1000.0, now / 1048576.0, ru.ru_maxrss / 1024.0);
	if (ret == 0)
		analysis_free(&a);
	trace_free(&t);
}

/* One chunk copied 40 times (a file made by repeating a chunk, or a bad
 * copy): the copies are skipped and said, the kernels count once, and a
 * copy is not inflated once it is known to be one. */
static void test_repeated(void)
{
	size_t per = bomb_write(path, 40, 1);
	struct read o;

	CHECK(read_through(&o) == 0 && o.kernels == per,
	      "repeated chunk: %llu kernels read (want one chunk's %zu)", (unsigned long long)o.kernels, per);
	CHECK(o.v.kind == GW_VERDICT_DAMAGED && o.v.chunks_repeated == 39 && !o.v.refused &&
	      o.v.bytes_skipped == 0 && strstr(o.v.first, "repeats the one at byte"),
	      "repeated chunk: verdict %s, %llu repeated, refused %d: %s", gw_verdict_name(&o.v),
	      (unsigned long long)o.v.chunks_repeated, o.v.refused, o.v.first);
	CHECK(o.inflated <= 2ull * GW_CHUNK_MAX_RAW + 4096,
	      "repeated chunk: %.1f MiB inflated (the chunk and its first copy)", o.inflated / 1048576.0);
	CHECK(strstr(o.msg, "39 repeated chunks skipped"), "the warning counts them: %s", o.msg);
}

int main(void)
{
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	test_repeated();
	test_bound();
	test_analysis();
	unlink(path);
	T_DONE();
}
