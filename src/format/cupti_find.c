/* The CUPTI search order (cupti_find.h). No allocation that can fail the
 * caller: fixed buffers, and a candidate that does not fit is skipped. */
#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contract.h"
#include "cupti_find.h"

static const char *const cupti_names[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so" };

struct walk {
	gw_cupti_try_fn fn;
	void *ud;
	unsigned looked;
	int done;
};

/* Tries the CUPTI names in one folder. */
static void try_dir(struct walk *w, const char *dir, const char *source)
{
	char path[PATH_MAX];

	if (w->done || !dir || !*dir)
		return;
	w->looked++;
	for (size_t i = 0; i < sizeof(cupti_names) / sizeof(cupti_names[0]) && !w->done; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, cupti_names[i]) >= (int)sizeof(path))
			continue;
		if (access(path, R_OK) == 0)
			w->done = w->fn(path, source, w->ud);
	}
}

/* Calls add(dir) for each site-packages folder under an installation prefix. */
static void prefix_sites(const char *prefix, void (*add)(const char *, void *), void *arg)
{
	static const char *const pats[] = { "%s/lib/python3*/site-packages",
					    "%s/local/lib/python3*/dist-packages",
					    "%s/lib/python3*/dist-packages", "%s/lib/python3/dist-packages" };
	char pat[PATH_MAX];

	if (!prefix || !*prefix)
		return;
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;

		if (snprintf(pat, sizeof(pat), pats[i], prefix) >= (int)sizeof(pat))
			continue;
		if (glob(pat, GLOB_ONLYDIR, NULL, &g) != 0)
			continue;
		for (size_t k = g.gl_pathc; k-- > 0;) /* newest python3.N first */
			add(g.gl_pathv[k], arg);
		globfree(&g);
	}
}

/* The prefix of a program: /p/bin/python -> /p. */
static int exe_prefix(const char *exe, char *buf, size_t len)
{
	char tmp[PATH_MAX];

	if (!exe || !*exe || snprintf(tmp, sizeof(tmp), "%s", exe) >= (int)sizeof(tmp))
		return -1;
	snprintf(buf, len, "%s", dirname(dirname(tmp)));
	return 0;
}

/* Each prefix of step 3 in order, and its site-packages. */
static void for_each_site(const char *exe, void (*add)(const char *, void *), void *arg)
{
	const char *envs[] = { getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX") };
	char pre[PATH_MAX] = "", self[PATH_MAX], *real;
	const char *home = getenv("HOME");
	ssize_t n;

	for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++)
		prefix_sites(envs[i], add, arg);
	if (exe) { /* as named (a venv's bin/python), then resolved (the base python) */
		if (exe_prefix(exe, pre, sizeof(pre)) == 0)
			prefix_sites(pre, add, arg);
		real = realpath(exe, NULL);
		if (real && strcmp(real, exe) && exe_prefix(real, self, sizeof(self)) == 0 &&
		    strcmp(self, pre))
			prefix_sites(self, add, arg);
		free(real);
	} else if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = 0;
		if (exe_prefix(self, pre, sizeof(pre)) == 0)
			prefix_sites(pre, add, arg);
	}
	if (home && *home && snprintf(pre, sizeof(pre), "%s/.local", home) < (int)sizeof(pre))
		prefix_sites(pre, add, arg);
}

static void site_try(const char *site, void *arg)
{
	struct walk *w = arg;
	char dir[PATH_MAX];

	if (snprintf(dir, sizeof(dir), "%s/nvidia/cu13/lib", site) < (int)sizeof(dir))
		try_dir(w, dir, GW_CUPTI_FROM_SITE);
	if (snprintf(dir, sizeof(dir), "%s/nvidia/cuda_cupti/lib", site) < (int)sizeof(dir))
		try_dir(w, dir, GW_CUPTI_FROM_SITE);
}

struct dirlist {
	char *buf;
	size_t len, used;
};

static void site_list(const char *site, void *arg)
{
	static const char *const subs[] = { "nvidia/cu13/lib", "nvidia/cuda_cupti/lib" };
	struct dirlist *l = arg;
	char dir[PATH_MAX];

	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (snprintf(dir, sizeof(dir), "%s/%s", site, subs[i]) >= (int)sizeof(dir) ||
		    access(dir, X_OK) != 0)
			continue;
		size_t n = strlen(dir);

		if (strstr(l->buf, dir) || l->used + n + 2 > l->len)
			continue; /* listed already, or no room */
		if (l->used)
			l->buf[l->used++] = ':';
		memcpy(l->buf + l->used, dir, n + 1);
		l->used += n;
	}
}

void gw_cupti_site_dirs(const char *exe, char *buf, size_t len)
{
	struct dirlist l = { buf, len, 0 };

	if (!len)
		return;
	buf[0] = 0;
	for_each_site(exe, site_list, &l);
}

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	struct walk *w = arg;

	(void)size;
	if (base && !strncmp(base + 1, "libcupti.so", 11)) {
		w->done = w->fn(info->dlpi_name, GW_CUPTI_FROM_LOADED, w->ud);
		return 1;
	}
	return 0;
}

int gw_cupti_search(const char *exe, gw_cupti_try_fn fn, void *ud, unsigned *looked)
{
	static const char *const subs[] = { "extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib" };
	struct walk w = { fn, ud, 0, 0 };
	const char *env = getenv(GW_ENV_CUPTI), *cuda_home = getenv("CUDA_HOME");
	char dir[PATH_MAX];

	if (env && *env) { /* the user's choice: nothing else is tried */
		if (looked)
			*looked = 1;
		return access(env, R_OK) == 0 && fn(env, GW_CUPTI_FROM_ENV, ud);
	}
	if (!w.done) {
		w.looked++;
		dl_iterate_phdr(find_loaded, &w);
	}
	const char *dirs = getenv(GW_ENV_CUPTI_DIRS);

	for (const char *p = dirs; p && *p && !w.done;) {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (n && n < sizeof(dir)) {
			memcpy(dir, p, n);
			dir[n] = 0;
			try_dir(&w, dir, GW_CUPTI_FROM_SITE);
		}
		p += n + (e != NULL);
	}
	if (!w.done)
		for_each_site(exe, site_try, &w);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]) && !w.done && cuda_home && *cuda_home; i++)
		if (snprintf(dir, sizeof(dir), "%s/%s", cuda_home, subs[i]) < (int)sizeof(dir))
			try_dir(&w, dir, GW_CUPTI_FROM_CUDA_HOME);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]) && !w.done; i++) {
		glob_t g;

		snprintf(dir, sizeof(dir), "/usr/local/cuda*/%s", subs[i]);
		if (glob(dir, GLOB_ONLYDIR, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc && !w.done; k++)
			try_dir(&w, g.gl_pathv[k], GW_CUPTI_FROM_TOOLKIT);
		globfree(&g);
	}
	for (size_t i = 0; i < sizeof(cupti_names) / sizeof(cupti_names[0]) && !w.done; i++) {
		w.looked++;
		w.done = fn(cupti_names[i], GW_CUPTI_FROM_LOADER, ud);
	}
	if (looked)
		*looked = w.looked;
	return w.done;
}

unsigned gw_cupti_api_major(uint32_t api)
{
	if (api >= 10000)
		return api / 10000; /* CUDA 13 on: xxyyzz */
	return api >= 19 ? 12 : 0; /* v19 (12.0) to v28 (12.9 Update 1) */
}

static unsigned name_major(const char *name)
{
	const char *b = strrchr(name, '/');
	char *end;
	unsigned long v;

	b = b ? b + 1 : name;
	if (strncmp(b, "libcupti.so.", 12))
		return 0;
	v = strtoul(b + 12, &end, 10);
	/* libcupti.so.2025.3.1 is a release number, not a CUDA major */
	return (*end == 0 && v >= 12 && v < 100) ? (unsigned)v : 0;
}

/* The SONAME of a 64-bit ELF shared object into buf; -1 when none. */
static int elf_soname(const char *path, char *buf, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	Elf64_Dyn dyn;
	uint64_t dyn_off = 0, dyn_size = 0, strtab = 0, soname = (uint64_t)-1, str_off = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph))
		goto out;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			goto out;
		if (ph.p_type == PT_DYNAMIC) {
			dyn_off = ph.p_offset;
			dyn_size = ph.p_filesz;
		}
	}
	for (uint64_t o = 0; dyn_size && o + sizeof(dyn) <= dyn_size && o < (1u << 20); o += sizeof(dyn)) {
		if (pread(fd, &dyn, sizeof(dyn), (off_t)(dyn_off + o)) != (ssize_t)sizeof(dyn) ||
		    dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_STRTAB)
			strtab = dyn.d_un.d_ptr;
		else if (dyn.d_tag == DT_SONAME)
			soname = dyn.d_un.d_val;
	}
	if (!strtab || soname == (uint64_t)-1)
		goto out;
	/* the string table's address to its file offset, through its PT_LOAD */
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			goto out;
		if (ph.p_type == PT_LOAD && strtab >= ph.p_vaddr && strtab < ph.p_vaddr + ph.p_filesz) {
			str_off = strtab - ph.p_vaddr + ph.p_offset;
			break;
		}
	}
	if (!str_off)
		goto out;
	ssize_t n = pread(fd, buf, len - 1, (off_t)(str_off + soname));

	if (n <= 0)
		goto out;
	buf[n] = 0;
	ret = 0;
out:
	close(fd);
	return ret;
}

unsigned gw_cupti_file_major(const char *path)
{
	char soname[64];
	unsigned m = name_major(path);

	if (m || !strchr(path, '/'))
		return m;
	return elf_soname(path, soname, sizeof(soname)) == 0 ? name_major(soname) : 0;
}
