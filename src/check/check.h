/* gpuwhy check: the machine doctor. Checks are data (struct check); the
 * verdict functions are pure so tests can feed them named synthetic values. */
#ifndef GPUWHY_CHECK_H
#define GPUWHY_CHECK_H

#include <stddef.h>
#include <stdint.h>

enum check_status { CK_PASS, CK_WARN, CK_FAIL, CK_NA };

struct check {
	char scope[32];     /* "host", "gpu0", "data", "pid 1234" */
	char name[48];      /* stable id, e.g. "pcie.link" */
	enum check_status status;
	char measured[160];
	char expected[160];
	char why[320];      /* why it matters for GPU utilization */
	char fix[320];
};

struct check_list {
	struct check *v;
	size_t n, cap;
	int err;             /* -ENOMEM once an add failed: the list is incomplete */
	struct check spare;  /* what a failed add hands out, so callers need no test */
};

/* Never NULL: when memory runs out it returns l->spare and sets l->err, and
 * check_run stops with an error instead of printing a shorter list. */
struct check *check_add(struct check_list *l, const char *scope, const char *name);
const char *check_status_name(enum check_status s);

/* Verdicts (verdicts.c). */
enum check_status verdict_pcie(unsigned gen, unsigned gen_max, unsigned width, unsigned width_max);
enum check_status verdict_power_limit(double limit_w, double default_w);
enum check_status verdict_bandwidth(double measured_gbs, double expected_gbs);
enum check_status verdict_temperature(unsigned temp_c, unsigned slowdown_c);
enum check_status verdict_throttle(uint64_t reasons);
enum check_status verdict_governor(const char *governor);
enum check_status verdict_thp(const char *thp);
enum check_status verdict_threads(unsigned threads_runnable, unsigned cores);
/* GPU pair link by NVML topology level (see gpu_topology). */
enum check_status verdict_topology(int level);
const char *topology_name(int level);
enum check_status verdict_row_remap(unsigned pending, unsigned failure);

struct check_opts {
	int json;
	const char *data_dir;
	int pid;
	int no_bandwidth;
};

int check_run(const struct check_opts *o);

/* The read throughput of the data under dir (data.c): dir is opened, shown is
 * how its name is printed, fs_type its statfs f_type. */
void data_read_check(struct check_list *l, const char *dir, const char *shown, long fs_type);

#endif
