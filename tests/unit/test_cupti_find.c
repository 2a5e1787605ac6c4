/* The CUPTI search order (src/format/cupti_find.h) on a synthetic tree of
 * empty files standing in for a venv, a conda env and a toolkit: which
 * candidates are offered, in which order, and the majors read from names,
 * SONAMEs and API versions. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "format/cupti_find.h"

#define MAXC 64
struct seen {
	int n;
	char path[MAXC][PATH_MAX];
	const char *source[MAXC];
	int accept_at; /* stop at this candidate (-1: never) */
};

static int record(const char *path, const char *source, void *ud)
{
	struct seen *s = ud;

	if (s->n < MAXC) {
		snprintf(s->path[s->n], PATH_MAX, "%s", path);
		s->source[s->n] = source;
	}
	return s->n++ == s->accept_at;
}

static void touch(const char *root, const char *rel)
{
	char path[PATH_MAX], cmd[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	if (system(cmd) != 0)
		return;
	f = fopen(path, "w");
	if (f)
		fclose(f);
}

static int index_of(const struct seen *s, const char *root, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (int i = 0; i < s->n && i < MAXC; i++)
		if (!strcmp(s->path[i], path))
			return i;
	return -1;
}

int main(void)
{
	char root[] = "/tmp/gw-cupti-XXXXXX", env[PATH_MAX], exe[PATH_MAX], dirs[4096];
	struct seen s = { .accept_at = -1 };
	unsigned looked = 0;

	if (!mkdtemp(root)) {
		printf("cannot make a temporary folder\n");
		return 1;
	}
	touch(root, "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
	touch(root, "venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
	touch(root, "venv/bin/python");
	touch(root, "conda/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
	touch(root, "base/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcupti.so.13");
	touch(root, "base/bin/python3.12");
	touch(root, "cuda/extras/CUPTI/lib64/libcupti.so");
	touch(root, "cuda/lib64/libcupti.so.13");
	unsetenv("GPUWHY_CUPTI");
	unsetenv("GPUWHY_CUPTI_DIRS");
	snprintf(env, sizeof(env), "%s/venv", root);
	setenv("VIRTUAL_ENV", env, 1);
	snprintf(env, sizeof(env), "%s/conda", root);
	setenv("CONDA_PREFIX", env, 1);
	snprintf(env, sizeof(env), "%s/cuda", root);
	setenv("CUDA_HOME", env, 1);
	setenv("HOME", root, 1);

	/* every candidate, in order: the venv (cu13 before cuda_cupti), the
	 * conda env, the program's prefix, CUDA_HOME, then the loader's names */
	snprintf(exe, sizeof(exe), "%s/base/bin/python3.12", root);
	CHECK(gw_cupti_search(exe, record, &s, &looked) == 0, "nothing accepted");
	int v13 = index_of(&s, root, "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
	int v12 = index_of(&s, root, "venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
	int c12 = index_of(&s, root, "conda/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
	int b13 = index_of(&s, root, "base/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcupti.so.13");
	int h1 = index_of(&s, root, "cuda/extras/CUPTI/lib64/libcupti.so");
	int h2 = index_of(&s, root, "cuda/lib64/libcupti.so.13");

	CHECK(v13 == 0, "the venv's nvidia/cu13 first: at %d", v13);
	CHECK(v12 == 1, "then the venv's nvidia/cuda_cupti: at %d", v12);
	CHECK(c12 == 2, "then CONDA_PREFIX's: at %d", c12);
	CHECK(b13 == 3, "then the program's prefix (local/lib/.../dist-packages): at %d", b13);
	CHECK(h1 == 4 && h2 == 5, "then CUDA_HOME's extras/CUPTI/lib64, lib64: at %d, %d", h1, h2);
	CHECK(s.n >= 9 && !strcmp(s.path[s.n - 3], "libcupti.so.13") &&
		      !strcmp(s.path[s.n - 2], "libcupti.so.12") && !strcmp(s.path[s.n - 1], "libcupti.so"),
	      "the loader's names last (%d candidates)", s.n);
	CHECK(s.n > 0 && !strcmp(s.source[0], GW_CUPTI_FROM_SITE) && h1 >= 0 &&
		      !strcmp(s.source[h1], GW_CUPTI_FROM_CUDA_HOME) &&
		      !strcmp(s.source[s.n - 1], GW_CUPTI_FROM_LOADER),
	      "sources named");
	CHECK(looked >= 8, "places looked at counted: %u", looked);

	/* the first accepted ends the search */
	memset(&s, 0, sizeof(s));
	s.accept_at = 1;
	CHECK(gw_cupti_search(exe, record, &s, NULL) == 1 && s.n == 2, "stops at the accepted one: %d", s.n);

	/* GPUWHY_CUPTI: only it, or nothing */
	memset(&s, 0, sizeof(s));
	s.accept_at = -1;
	snprintf(env, sizeof(env), "%s/cuda/lib64/libcupti.so.13", root);
	setenv("GPUWHY_CUPTI", env, 1);
	gw_cupti_search(exe, record, &s, NULL);
	CHECK(s.n == 1 && !strcmp(s.path[0], env) && !strcmp(s.source[0], GW_CUPTI_FROM_ENV),
	      "GPUWHY_CUPTI alone is tried: %d candidates", s.n);
	memset(&s, 0, sizeof(s));
	s.accept_at = -1;
	setenv("GPUWHY_CUPTI", "/nonexistent/libcupti.so.13", 1);
	CHECK(gw_cupti_search(exe, record, &s, NULL) == 0 && s.n == 0,
	      "a GPUWHY_CUPTI that does not exist: nothing else is tried (%d)", s.n);
	unsetenv("GPUWHY_CUPTI");

	/* what gpuwhy record hands the job: a venv's python as named */
	unsetenv("VIRTUAL_ENV");
	unsetenv("CONDA_PREFIX");
	snprintf(exe, sizeof(exe), "%s/venv/bin/python", root);
	gw_cupti_site_dirs(exe, dirs, sizeof(dirs));
	snprintf(env, sizeof(env), "%s/venv/lib/python3.12/site-packages/nvidia/cu13/lib:%s/venv/lib/"
		 "python3.12/site-packages/nvidia/cuda_cupti/lib", root, root);
	CHECK(!strcmp(dirs, env), "site dirs of a venv's python: %s", dirs);
	/* and GPUWHY_CUPTI_DIRS comes before the environment's own */
	memset(&s, 0, sizeof(s));
	s.accept_at = -1;
	snprintf(env, sizeof(env), "%s/conda/lib/python3.11/site-packages/nvidia/cuda_cupti/lib", root);
	setenv("GPUWHY_CUPTI_DIRS", env, 1);
	gw_cupti_search(NULL, record, &s, NULL);
	CHECK(index_of(&s, root, "conda/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12") == 0,
	      "GPUWHY_CUPTI_DIRS first among the site folders");
	unsetenv("GPUWHY_CUPTI_DIRS");

	/* majors */
	CHECK(gw_cupti_api_major(130001) == 13, "13.0 Update 1");
	CHECK(gw_cupti_api_major(28) == 12 && gw_cupti_api_major(19) == 12, "12.x");
	CHECK(gw_cupti_api_major(18) == 0, "11.8 is not supported");
	CHECK(gw_cupti_file_major("libcupti.so.12") == 12 && gw_cupti_file_major("/x/libcupti.so.13") == 13,
	      "majors from names");
	CHECK(gw_cupti_file_major("/x/libcupti.so.2025.3.1") == 0, "a release number is not a major");
	snprintf(env, sizeof(env), "%s/cuda/extras/CUPTI/lib64/libcupti.so", root);
	CHECK(gw_cupti_file_major(env) == 0, "an empty file: no SONAME");
	/* a real CUPTI where the toolkit is installed: the major from its SONAME */
	if (access("/usr/local/cuda/lib64/libcupti.so", R_OK) == 0) {
		unsigned m = gw_cupti_file_major("/usr/local/cuda/lib64/libcupti.so");

		CHECK(m >= 12, "the toolkit's libcupti.so: major %u from its SONAME", m);
	}

	snprintf(env, sizeof(env), "rm -rf '%s'", root);
	if (system(env) != 0)
		printf("could not remove %s\n", root);
	T_DONE();
}
