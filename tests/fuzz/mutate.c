/* A mutation driver for fuzz targets where libFuzzer is not available (gcc):
 * reads the seed inputs given as files or folders, then until the time limit
 * feeds LLVMFuzzerTestOneInput random mutations of them (bit flips, byte
 * sets, cuts, deleted, repeated and spliced ranges, small integers). It has
 * no coverage feedback, so it finds less than libFuzzer; it exists to run
 * the same target under gcc's sanitizers, with every finding fatal. Before
 * each input it writes it to OUTDIR/current, so the input of a crash stays.
 *   mutate SECONDS SEED OUTDIR INPUT...   prints "mutate: N executions in S s" */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LEN 65536
#define MAX_SEEDS 4096

static uint8_t *seeds[MAX_SEEDS];
static size_t seed_len[MAX_SEEDS], nseeds;

static void add_seed(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	size_t n;

	if (!f || nseeds == MAX_SEEDS)
		goto out;
	buf = malloc(MAX_LEN);
	if (!buf)
		goto out;
	n = fread(buf, 1, MAX_LEN, f);
	if (n == 0) {
		free(buf);
		goto out;
	}
	seeds[nseeds] = buf;
	seed_len[nseeds++] = n;
out:
	if (f)
		fclose(f);
}

static void add_path(const char *path)
{
	struct stat st;
	struct dirent *de;
	char file[4096];
	DIR *d;

	if (stat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		add_seed(path);
		return;
	}
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
			add_seed(file);
		}
	closedir(d);
}

static uint64_t rng_state;

static uint64_t rnd(void) /* xorshift64* */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

/* One mutation of buf[0..*len) in place (capacity MAX_LEN). */
static void mutate_once(uint8_t *buf, size_t *len)
{
	static const uint64_t interesting[] = { 0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0xffffffff,
						0x80000000, (uint64_t)-1, 4u << 20, 24, 16 };
	size_t n = *len, a, b, k;

	switch (below(8)) {
	case 0: /* flip a bit */
		if (n)
			buf[below(n)] ^= (uint8_t)(1u << below(8));
		break;
	case 1: /* set a byte */
		if (n)
			buf[below(n)] = (uint8_t)rnd();
		break;
	case 2: /* cut the end */
		*len = below(n + 1);
		break;
	case 3: /* delete a range */
		a = below(n + 1);
		k = below(n - a + 1) % 256;
		memmove(buf + a, buf + a + k, n - a - k);
		*len = n - k;
		break;
	case 4: /* repeat a range */
		a = below(n + 1);
		k = below(n - a + 1) % 512;
		if (n + k <= MAX_LEN) {
			memmove(buf + a + k, buf + a, n - a);
			*len = n + k;
		}
		break;
	case 5: /* a small integer, little endian, 1 to 8 bytes */
		k = 1 + below(8);
		if (n >= k) {
			uint64_t v = interesting[below(sizeof(interesting) / sizeof(*interesting))];

			a = below(n - k + 1);
			for (size_t i = 0; i < k; i++)
				buf[a + i] = (uint8_t)(v >> (8 * i));
		}
		break;
	case 6: /* splice: a range of another seed over this one */
		if (nseeds) {
			size_t s = below(nseeds);

			a = below(seed_len[s]);
			k = below(seed_len[s] - a + 1) % 4096;
			b = below(n + 1);
			if (b + k > MAX_LEN)
				k = MAX_LEN - b;
			memcpy(buf + b, seeds[s] + a, k);
			if (b + k > n)
				*len = b + k;
		}
		break;
	default: /* copy a range within the input */
		if (n) {
			a = below(n);
			b = below(n);
			k = below(n - (a > b ? a : b) + 1) % 1024;
			memmove(buf + b, buf + a, k);
		}
	}
}

#define PER_INPUT_S 10 /* as libFuzzer's -timeout in run.sh: longer is a hang */

static void on_alarm(int sig)
{
	static const char msg[] = "mutate: an input ran past 10 s (a hang, or a path far from "
				  "linear): it is OUTDIR/current\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(4);
	_exit(3);
}

int main(int argc, char **argv)
{
	uint8_t *buf = malloc(MAX_LEN);
	char cur[4200];
	time_t t0 = time(NULL), limit;
	unsigned long long execs = 0;

	if (argc < 5 || !buf) {
		fprintf(stderr, "usage: mutate SECONDS SEED OUTDIR INPUT...\n");
		free(buf);
		return 2;
	}
	limit = (time_t)atol(argv[1]);
	rng_state = (uint64_t)strtoull(argv[2], NULL, 0) * 2654435761u + 1;
	snprintf(cur, sizeof(cur), "%s/current", argv[3]);
	for (int i = 4; i < argc; i++)
		add_path(argv[i]);
	if (!nseeds) {
		fprintf(stderr, "mutate: no seed inputs\n");
		free(buf);
		return 2;
	}
	signal(SIGALRM, on_alarm);
	while (time(NULL) - t0 < limit) {
		size_t s = below(nseeds), len = seed_len[s];
		FILE *f;

		memcpy(buf, seeds[s], len);
		for (size_t m = 1 + below(8); m; m--)
			mutate_once(buf, &len);
		f = fopen(cur, "wb");
		if (f) {
			fwrite(buf, 1, len, f);
			fclose(f);
		}
		alarm(PER_INPUT_S);
		LLVMFuzzerTestOneInput(buf, len);
		alarm(0);
		execs++;
	}
	printf("mutate: %llu executions in %ld s\n", execs, (long)(time(NULL) - t0));
	for (size_t i = 0; i < nseeds; i++)
		free(seeds[i]);
	free(buf);
	return 0;
}
