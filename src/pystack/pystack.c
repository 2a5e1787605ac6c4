/* pystack: the Python stacks of a live CPython 3.10-3.13 process (x86_64
 * Linux), read through process_vm_readv alone, from outside the process or
 * from inside it (pid == getpid()): a bad pointer is an EFAULT, never a
 * crash. libc only. docs/PYSTACK.md describes the method.
 *
 * py_proc_open does file I/O (maps, ELF symbols); py_proc_threads and
 * py_proc_stack only read memory, and allocate on a code-object cache miss. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include "pystack.h"
#include "../procfs/tasks.h"

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_DEPTH 1024       /* frames walked at most (a longer chain is a cycle) */
#define MAX_INTERPS 64
#define MAX_THREADS 4096
#define CODE_SLOTS 4096      /* the code-object cache: 4-way sets, power of two */
#define MAX_LINETABLE (1 << 20)
#define MAX_STR 1024
#define STR_BUDGET (16u << 20) /* interned strings kept at most, bytes */
#define LT_BUDGET (64u << 20) /* line tables cached at most, bytes: beyond, line 0 */
#define CALIB_TRIES 64         /* 3.10: calibrations retried at reads at most */
#define NONE (-1)
#define STR_HDR 96   /* bytes of a str object's header read at once */
#define BYTES_HDR 64 /* of a bytes object's */
#define CODE_HDR 256 /* of a code object's */
#define MAX_ELF_BYTES (4ull << 30) /* a larger "interpreter" file is not read */

/* Offsets into CPython's structures, x86_64. 3.10-3.12: from each version's
 * headers (tests/pystack/pyoffsets.c prints them, verify.sh compares); 3.13:
 * from the _Py_DebugOffsets that _PyRuntime begins with, plus the few
 * fields it does not publish. */
struct py_offsets {
	int minor;
	long runtime_interp_head;     /* _PyRuntimeState.interpreters.head */
	long interp_next;             /* PyInterpreterState.next */
	long interp_threads_head;     /* PyInterpreterState.threads.head (3.10: tstate_head) */
	long tstate_next;             /* PyThreadState.next */
	long tstate_thread_id;        /* PyThreadState.thread_id (pthread_t) */
	long tstate_native_thread_id; /* PyThreadState.native_thread_id; NONE in 3.10 */
	long tstate_frame;            /* 3.10 .frame, 3.11/3.12 .cframe, 3.13 .current_frame */
	long cframe_current_frame;    /* _PyCFrame.current_frame (3.11/3.12); else NONE */
	long frame_code;              /* f_code (3.13: f_executable) */
	long frame_previous;          /* 3.10 PyFrameObject.f_back; 3.11+ _PyInterpreterFrame.previous */
	long frame_instr;             /* 3.10 f_lasti (int); 3.11/3.12 prev_instr; 3.13 instr_ptr */
	long frame_owner;             /* _PyInterpreterFrame.owner (char); NONE in 3.10 */
	long owner_cstack;            /* FRAME_OWNED_BY_CSTACK (3.12+); NONE before */
	long code_filename;           /* PyCodeObject.co_filename */
	long code_name;               /* PyCodeObject.co_name */
	long code_qualname;           /* PyCodeObject.co_qualname; NONE in 3.10 */
	long code_linetable;          /* PyCodeObject.co_linetable (bytes) */
	long code_firstlineno;        /* PyCodeObject.co_firstlineno (int) */
	long code_adaptive;           /* PyCodeObject.co_code_adaptive (3.11+) */
	long bytes_size;              /* PyVarObject.ob_size */
	long bytes_sval;              /* PyBytesObject.ob_sval */
	long unicode_length;          /* PyASCIIObject.length */
	long unicode_state;           /* PyASCIIObject.state */
	long unicode_ascii_size;      /* sizeof(PyASCIIObject): compact ASCII data follows */
	long unicode_compact_size;    /* sizeof(PyCompactUnicodeObject): compact UCS-1 data follows */
};

/* The state bitfield (interned:2, kind:3, compact:1, ascii:1) is the same in 3.10-3.13. */
#define UNI_KIND(s) (((s) >> 2) & 7)
#define UNI_COMPACT(s) (((s) >> 5) & 1)
#define UNI_ASCII(s) (((s) >> 6) & 1)
#define OBJ_TYPE 8 /* PyObject.ob_type */

static const struct py_offsets off310 = {
	.minor = 10,
	.runtime_interp_head = 32, .interp_next = 0, .interp_threads_head = 8,
	.tstate_next = 8, .tstate_thread_id = 176, .tstate_native_thread_id = NONE,
	.tstate_frame = 24, .cframe_current_frame = NONE,
	.frame_code = 32, .frame_previous = 24, .frame_instr = 96,
	.frame_owner = NONE, .owner_cstack = NONE,
	.code_filename = 104, .code_name = 112, .code_qualname = NONE,
	.code_linetable = 120, .code_firstlineno = 40, .code_adaptive = NONE,
	.bytes_size = 16, .bytes_sval = 32,
	.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48, .unicode_compact_size = 72,
};
static const struct py_offsets off311 = {
	.minor = 11,
	.runtime_interp_head = 40, .interp_next = 0, .interp_threads_head = 16,
	.tstate_next = 8, .tstate_thread_id = 152, .tstate_native_thread_id = 160,
	.tstate_frame = 56, .cframe_current_frame = 8,
	.frame_code = 32, .frame_previous = 48, .frame_instr = 56,
	.frame_owner = 69, .owner_cstack = NONE,
	.code_filename = 112, .code_name = 120, .code_qualname = 128,
	.code_linetable = 136, .code_firstlineno = 72, .code_adaptive = 184,
	.bytes_size = 16, .bytes_sval = 32,
	.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 48, .unicode_compact_size = 72,
};
static const struct py_offsets off312 = {
	.minor = 12,
	.runtime_interp_head = 40, .interp_next = 0, .interp_threads_head = 72,
	.tstate_next = 8, .tstate_thread_id = 136, .tstate_native_thread_id = 144,
	.tstate_frame = 56, .cframe_current_frame = 0,
	.frame_code = 0, .frame_previous = 8, .frame_instr = 56,
	.frame_owner = 70, .owner_cstack = 3,
	.code_filename = 112, .code_name = 120, .code_qualname = 128,
	.code_linetable = 136, .code_firstlineno = 68, .code_adaptive = 192,
	.bytes_size = 16, .bytes_sval = 32,
	.unicode_length = 16, .unicode_state = 32, .unicode_ascii_size = 40, .unicode_compact_size = 56,
};

/* 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h, v3.13.0): the
 * fields read here, as byte offsets into it (all uint64_t). */
enum {
	DO_COOKIE = 0, DO_VERSION = 8, DO_FREE_THREADED = 16,
	DO_RUNTIME_INTERP_HEAD = 40,                       /* runtime_state.interpreters_head */
	DO_INTERP_NEXT = 64, DO_INTERP_THREADS_HEAD = 72,  /* interpreter_state.{next,threads_head} */
	DO_TSTATE_NEXT = 168, DO_TSTATE_CURRENT_FRAME = 184, /* thread_state.{next,current_frame} */
	DO_TSTATE_THREAD_ID = 192, DO_TSTATE_NATIVE_THREAD_ID = 200,
	DO_FRAME_PREVIOUS = 232, DO_FRAME_EXECUTABLE = 240, /* interpreter_frame.* */
	DO_FRAME_INSTR_PTR = 248, DO_FRAME_OWNER = 264,
	DO_CODE_FILENAME = 280, DO_CODE_NAME = 288, DO_CODE_QUALNAME = 296, /* code_object.* */
	DO_CODE_LINETABLE = 304, DO_CODE_FIRSTLINENO = 312, DO_CODE_ADAPTIVE = 344,
	DO_BYTES_SIZE = 520, DO_BYTES_SVAL = 528,         /* bytes_object.{ob_size,ob_sval} */
	DO_UNICODE_STATE = 544, DO_UNICODE_LENGTH = 552, DO_UNICODE_ASCII_SIZE = 560,
	DO_END = 568,
};

struct code_entry {
	uint64_t addr;                  /* 0: empty */
	uint64_t filename, name, linetable; /* the pointers it was cached under */
	const char *file, *func;
	uint8_t *lt;
	uint32_t ltlen;
	int firstlineno;
};

struct str_node {
	struct str_node *next;
	uint32_t hash;
	size_t len; /* a name may hold NUL bytes (code.replace(co_name=...)) */
	char s[];
};

struct py_proc {
	pid_t pid;
	struct py_offsets o;
	char version[32];
	uint64_t runtime, code_type, unicode_type, bytes_type;
	long pthread_tid; /* 3.10: offset of the tid in glibc's struct pthread; NONE: unknown */
	unsigned calib_tries; /* 3.10: failed calibrations after open (each walks ~500 offsets) */
	atomic_flag busy;
	struct code_entry *codes; /* CODE_SLOTS */
	unsigned victim;          /* the way a full set gives up next */
	struct { pid_t tid; uint64_t ts; } tcache[64]; /* tid -> its thread state, checked at use */
	struct str_node *strs[1024];
	size_t str_bytes;
	size_t lt_bytes; /* line tables held by the code cache */
};

static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* ---- memory ---------------------------------------------------------- */

static int rd(const struct py_proc *p, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (addr < 4096 || addr + len < addr)
		return -EFAULT;
	n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static int rd_ptr(const struct py_proc *p, uint64_t addr, uint64_t *v)
{
	return rd(p, addr, v, sizeof(*v));
}

static uint64_t at64(const uint8_t *b, long off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static uint32_t at32(const uint8_t *b, long off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* ---- ELF symbols ------------------------------------------------------ */

enum { SYM_RUNTIME, SYM_VERSION, SYM_CODE_TYPE, SYM_UNICODE_TYPE, SYM_BYTES_TYPE, NSYM };
static const char *const sym_names[NSYM] = { "_PyRuntime", "Py_Version", "PyCode_Type",
					     "PyUnicode_Type", "PyBytes_Type" };

struct elf_info {
	uint64_t sym[NSYM]; /* st_value of each defined symbol; 0: not found */
	uint64_t load_vaddr; /* p_vaddr of the PT_LOAD at file offset 0, page-aligned */
	int has_symbols;     /* a .dynsym or .symtab with entries */
	char micro[16];      /* 3.10: PY_VERSION's micro part found in .rodata ("13"), or "" */
};

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	return 0;
}

static int scan_symtab(int fd, const Elf64_Shdr *sh, const Elf64_Shdr *strsh, struct elf_info *ei)
{
	char *strtab = NULL;
	Elf64_Sym buf[512];
	size_t nsyms, i = 0;
	int err = 0;

	if (sh->sh_entsize != sizeof(Elf64_Sym) || strsh->sh_size > (64u << 20))
		return -ENOEXEC;
	nsyms = sh->sh_size / sizeof(Elf64_Sym);
	if (nsyms > 1)
		ei->has_symbols = 1;
	strtab = malloc(strsh->sh_size + 1);
	if (!strtab)
		return -ENOMEM;
	err = pread_all(fd, strtab, strsh->sh_size, (off_t)strsh->sh_offset);
	if (err)
		goto out;
	strtab[strsh->sh_size] = 0;
	while (i < nsyms) {
		size_t n = nsyms - i < 512 ? nsyms - i : 512;
		err = pread_all(fd, buf, n * sizeof(Elf64_Sym), (off_t)(sh->sh_offset + i * sizeof(Elf64_Sym)));
		if (err)
			goto out;
		for (size_t k = 0; k < n; k++) {
			const Elf64_Sym *s = &buf[k];
			if (s->st_shndx == SHN_UNDEF || s->st_name >= strsh->sh_size || !s->st_value)
				continue;
			for (int j = 0; j < NSYM; j++)
				if (!ei->sym[j] && !strcmp(strtab + s->st_name, sym_names[j]))
					ei->sym[j] = s->st_value;
		}
		i += n;
	}
out:
	free(strtab);
	return err;
}

/* PY_VERSION ("3.10.13") as a string of its own in .rodata: its micro part. */
static void scan_rodata_version(int fd, const Elf64_Shdr *sh, int minor, struct elf_info *ei)
{
	char pre[16];
	char *d;
	size_t plen;

	if (sh->sh_size > (32u << 20) || !(d = malloc(sh->sh_size + 1)))
		return;
	plen = (size_t)snprintf(pre, sizeof(pre), "3.%d.", minor);
	if (!pread_all(fd, d, sh->sh_size, (off_t)sh->sh_offset)) {
		d[sh->sh_size] = 0;
		/* The linker may merge it into the tail of a longer string (the
		 * build directory "Python-3.10.13"): a string of its own first,
		 * else one that ends with it after a non-digit. */
		for (int pass = 0; pass < 2 && !ei->micro[0]; pass++)
			for (size_t i = 1; i + plen < sh->sh_size; i++) {
				size_t k = i + plen, m = 0;
				char b = d[i - 1];
				if (memcmp(d + i, pre, plen) || (pass == 0 ? b != 0 : (isdigit((unsigned char)b) || b == '.')))
					continue;
				while (isdigit((unsigned char)d[k + m]) && m < 4)
					m++;
				if (m && (!d[k + m] || (pass == 0 && d[k + m] == '+'))) {
					snprintf(ei->micro, sizeof(ei->micro), "%.*s", (int)m, d + k);
					break;
				}
			}
	}
	free(d);
}

/* A section's bytes lie inside the file (a damaged or hostile header would
 * have the reader walk gigabytes of a sparse file). */
static int in_file(const Elf64_Shdr *sh, uint64_t size)
{
	return sh->sh_type == SHT_NOBITS || (sh->sh_offset <= size && sh->sh_size <= size - sh->sh_offset);
}

/* The symbols of the ELF file open at fd (size bytes), closing fd. */
static int elf_read(int fd, uint64_t size, int minor_hint, struct elf_info *ei)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Phdr ph;
	char *shstr = NULL;
	int err;

	memset(ei, 0, sizeof(*ei));
	err = pread_all(fd, &eh, sizeof(eh), 0);
	if (err)
		goto out;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_shnum > 4096 || eh.e_shstrndx >= eh.e_shnum) {
		err = -ENOEXEC;
		goto out;
	}
	for (int i = 0; i < eh.e_phnum; i++) {
		err = pread_all(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph)));
		if (err)
			goto out;
		if (ph.p_type == PT_LOAD) { /* the first PT_LOAD maps file offset 0 */
			ei->load_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
			break;
		}
	}
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh) {
		err = -ENOMEM;
		goto out;
	}
	err = pread_all(fd, sh, eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff);
	if (err)
		goto out;
	if (sh[eh.e_shstrndx].sh_size > (1u << 20) || !in_file(&sh[eh.e_shstrndx], size) || !(shstr = malloc(sh[eh.e_shstrndx].sh_size + 1))) {
		err = -ENOEXEC;
		goto out;
	}
	err = pread_all(fd, shstr, sh[eh.e_shstrndx].sh_size, (off_t)sh[eh.e_shstrndx].sh_offset);
	if (err)
		goto out;
	shstr[sh[eh.e_shstrndx].sh_size] = 0;
	for (int i = 0; i < eh.e_shnum; i++) {
		if ((sh[i].sh_type == SHT_DYNSYM || sh[i].sh_type == SHT_SYMTAB) && sh[i].sh_link < eh.e_shnum &&
		    in_file(&sh[i], size) && in_file(&sh[sh[i].sh_link], size)) {
			err = scan_symtab(fd, &sh[i], &sh[sh[i].sh_link], ei);
			if (err)
				goto out;
		}
		if (minor_hint == 10 && sh[i].sh_type == SHT_PROGBITS && in_file(&sh[i], size) &&
		    sh[i].sh_name < sh[eh.e_shstrndx].sh_size &&
		    !strcmp(shstr + sh[i].sh_name, ".rodata"))
			scan_rodata_version(fd, &sh[i], minor_hint, ei);
	}
out:
	free(shstr);
	free(sh);
	close(fd);
	return err;
}

/* ---- finding the interpreter ------------------------------------------ */

/* "python3.11", "libpython3.10.so.1.0": the minor version in a file name, or -1. */
static int name_minor(const char *path)
{
	const char *b = strrchr(path, '/');
	const char *s;

	b = b ? b + 1 : path;
	s = strstr(b, "python3.");
	if (!s || !isdigit((unsigned char)s[8]))
		return -1;
	return atoi(s + 8);
}

static int is_candidate(const char *path, const char *exe)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	/* extension modules (x.cpython-311-x86_64-linux-gnu.so) never hold the
	 * runtime, and a process maps hundreds: they would fill the list before
	 * libpython3.X.so, which shared builds map early, at the top */
	if (strstr(b, ".cpython-") || strstr(b, ".abi3."))
		return 0;
	return strstr(b, "python") != NULL || (exe[0] && !strcmp(path, exe));
}

struct mapping {
	uint64_t start, end, offset;
	char path[512];
};

/* Each distinct file-backed mapping that may hold the interpreter, with the
 * address where its file offset 0 is mapped. */
static int find_candidates(pid_t pid, struct mapping *out, int max, char *why, size_t whylen)
{
	char path[64], exe[512] = "", line[1024];
	FILE *f;
	int n = 0;
	ssize_t el;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	el = readlink(path, exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		int e = errno;
		say(why, whylen, e == ENOENT ? "no process %d" : "cannot read /proc/%d/maps: %s%s", (int)pid,
		    strerror(e), e == EACCES ? " (run as the process's user or root)" : "");
		return e == ENOENT ? -ESRCH : -e;
	}
	while (fgets(line, sizeof(line), f) && n < max) {
		unsigned long long lo, hi, off;
		char perms[8];
		int pos = 0;
		char *p;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &pos) < 4 || !pos)
			continue;
		p = line + pos;
		p[strcspn(p, "\n")] = 0;
		if (p[0] != '/' || off != 0 || !is_candidate(p, exe))
			continue;
		int dup = 0;
		for (int i = 0; i < n; i++)
			dup |= !strcmp(out[i].path, p);
		if (dup)
			continue;
		out[n].start = lo;
		out[n].end = hi;
		out[n].offset = off;
		snprintf(out[n].path, sizeof(out[n].path), "%s", p);
		n++;
	}
	fclose(f);
	return n;
}

static int open_debug_offsets(struct py_proc *p, char *why, size_t whylen)
{
	uint8_t d[DO_END];
	int err = rd(p, p->runtime, d, sizeof(d));
	struct py_offsets *o = &p->o;

	if (err)
		return err;
	if (memcmp(d + DO_COOKIE, "xdebugpy", 8)) {
		say(why, whylen, "Python 3.13: _PyRuntime does not begin with the debug offsets' cookie");
		return -ENOTSUP;
	}
	if ((at64(d, DO_VERSION) >> 16) != 0x030d) {
		say(why, whylen, "Python 3.13: the debug offsets are for version %#llx",
		    (unsigned long long)at64(d, DO_VERSION));
		return -ENOTSUP;
	}
	if (at64(d, DO_FREE_THREADED)) { /* objects start with more than refcount and type */
		say(why, whylen, "Python 3.13: a free-threaded build (3.13t), which the reader does not know");
		return -ENOTSUP;
	}
	o->minor = 13;
	o->runtime_interp_head = (long)at64(d, DO_RUNTIME_INTERP_HEAD);
	o->interp_next = (long)at64(d, DO_INTERP_NEXT);
	o->interp_threads_head = (long)at64(d, DO_INTERP_THREADS_HEAD);
	o->tstate_next = (long)at64(d, DO_TSTATE_NEXT);
	o->tstate_frame = (long)at64(d, DO_TSTATE_CURRENT_FRAME);
	o->tstate_thread_id = (long)at64(d, DO_TSTATE_THREAD_ID);
	o->tstate_native_thread_id = (long)at64(d, DO_TSTATE_NATIVE_THREAD_ID);
	o->cframe_current_frame = NONE;
	o->frame_previous = (long)at64(d, DO_FRAME_PREVIOUS);
	o->frame_code = (long)at64(d, DO_FRAME_EXECUTABLE);
	o->frame_instr = (long)at64(d, DO_FRAME_INSTR_PTR);
	o->frame_owner = (long)at64(d, DO_FRAME_OWNER);
	o->owner_cstack = 3; /* FRAME_OWNED_BY_CSTACK, Include/internal/pycore_frame.h */
	o->code_filename = (long)at64(d, DO_CODE_FILENAME);
	o->code_name = (long)at64(d, DO_CODE_NAME);
	o->code_qualname = (long)at64(d, DO_CODE_QUALNAME);
	o->code_linetable = (long)at64(d, DO_CODE_LINETABLE);
	o->code_firstlineno = (long)at64(d, DO_CODE_FIRSTLINENO);
	o->code_adaptive = (long)at64(d, DO_CODE_ADAPTIVE);
	o->bytes_size = (long)at64(d, DO_BYTES_SIZE);
	o->bytes_sval = (long)at64(d, DO_BYTES_SVAL);
	o->unicode_state = (long)at64(d, DO_UNICODE_STATE);
	o->unicode_length = (long)at64(d, DO_UNICODE_LENGTH);
	o->unicode_ascii_size = (long)at64(d, DO_UNICODE_ASCII_SIZE);
	o->unicode_compact_size = o->unicode_ascii_size + 16; /* + utf8_length, utf8 */
	/* Sanity: every offset small, so that a wrong layout fails here, not later. */
	const long *f = &o->runtime_interp_head;
	for (size_t i = 0; i < sizeof(*o) / sizeof(long) - 1; i++)
		if (f[i] < NONE || f[i] > 65536) {
			say(why, whylen, "Python 3.13: implausible debug offsets");
			return -ENOTSUP;
		}
	return 0;
}

/* Every field read from a fixed-size buffer lies inside it (3.13's offsets
 * come from the process itself: a build with another layout must fail at
 * open, not write past a buffer at a read). Sizes as in read_str,
 * read_bytes, code_get and read_stack. */
static int offsets_fit(const struct py_offsets *o)
{
	return o->unicode_compact_size <= STR_HDR && o->unicode_ascii_size <= o->unicode_compact_size &&
	       o->unicode_length >= 0 && o->unicode_length + 8 <= o->unicode_compact_size &&
	       o->unicode_state >= 0 && o->unicode_state + 4 <= o->unicode_compact_size &&
	       o->bytes_sval >= OBJ_TYPE + 8 && o->bytes_sval <= BYTES_HDR && o->bytes_size >= 0 &&
	       o->bytes_size + 8 <= o->bytes_sval && o->unicode_compact_size >= OBJ_TYPE + 8 &&
	       o->code_filename >= 0 && o->code_filename + 8 <= CODE_HDR && o->code_name >= 0 &&
	       o->code_name + 8 <= CODE_HDR && o->code_linetable >= 0 && o->code_linetable + 8 <= CODE_HDR &&
	       o->code_qualname + 8 <= CODE_HDR && o->code_firstlineno >= 0 &&
	       o->code_firstlineno + 4 <= CODE_HDR && o->code_adaptive >= NONE &&
	       o->frame_code >= 0 && o->frame_previous >= 0 && o->frame_instr >= 0 &&
	       o->frame_owner >= NONE && o->tstate_frame >= 0;
}

/* 3.10 keeps no native thread id: PyThreadState.thread_id is the pthread_t,
 * the address of glibc's struct pthread, which holds the kernel tid. Find
 * its offset as the one where the thread whose tid is the pid (the main
 * thread) has the pid, and every other thread a tid of the process. */
static long tid_value(struct py_proc *p, uint64_t tstate, long off);

/* ---- threads ------------------------------------------------------------ */

static long tid_value(struct py_proc *p, uint64_t tstate, long off)
{
	uint64_t pthread;
	int32_t tid;

	if (rd_ptr(p, tstate + (uint64_t)p->o.tstate_thread_id, &pthread) ||
	    rd(p, pthread + (uint64_t)off, &tid, sizeof(tid)))
		return -1;
	return tid;
}

/* Calls fn for each thread state of each interpreter; stops when fn returns
 * nonzero (and returns that). -EAGAIN when a read fails or the lists look
 * cyclic: the interpreter changed them under us. */
static int each_tstate(struct py_proc *p, int (*fn)(struct py_proc *, uint64_t, void *), void *arg)
{
	uint64_t interp, ts;
	int ni = 0, nt = 0, r;

	if (rd_ptr(p, p->runtime + (uint64_t)p->o.runtime_interp_head, &interp))
		return -EAGAIN;
	for (; interp; ni++) {
		if (ni >= MAX_INTERPS || rd_ptr(p, interp + (uint64_t)p->o.interp_threads_head, &ts))
			return -EAGAIN;
		for (; ts; nt++) {
			if (nt >= MAX_THREADS)
				return -EAGAIN;
			r = fn(p, ts, arg);
			if (r)
				return r;
			if (rd_ptr(p, ts + (uint64_t)p->o.tstate_next, &ts))
				return -EAGAIN;
		}
		if (rd_ptr(p, interp + (uint64_t)p->o.interp_next, &interp))
			return -EAGAIN;
	}
	return 0;
}

/* The kernel tid of a thread state, or -1 (unknown) / -EAGAIN (unreadable). */
static long tstate_tid(struct py_proc *p, uint64_t ts)
{
	uint64_t v;

	if (p->o.tstate_native_thread_id != NONE) {
		if (rd_ptr(p, ts + (uint64_t)p->o.tstate_native_thread_id, &v))
			return -EAGAIN;
		return (long)(int32_t)v;
	}
	if (p->pthread_tid == NONE)
		return -1;
	v = (uint64_t)tid_value(p, ts, p->pthread_tid);
	return (long)v < 0 ? -EAGAIN : (long)v;
}

struct calib {
	pid_t *tids;
	int ntids;
	long off;
	int main_seen, others_ok;
};

static int calib_check(struct py_proc *p, uint64_t ts, void *arg)
{
	struct calib *c = arg;
	long v = tid_value(p, ts, c->off);

	if (v == p->pid)
		c->main_seen = 1;
	int ok = 0;
	for (int i = 0; i < c->ntids; i++)
		ok |= c->tids[i] == v;
	if (!ok)
		c->others_ok = 0;
	return 0;
}

/* with_tasks: also check the other threads against /proc/PID/task (file
 * I/O: at py_proc_open only); without, the main thread's pid alone. */
static void calibrate_pthread_tid(struct py_proc *p, int with_tasks)
{
	pid_t tids[1024];
	struct calib c = { .tids = tids };
	/* glibc's x86_64 struct pthread has had its tid at 0x2d0 since 2.26: try it first. */
	static const long first = 0x2d0;

	/* Without a thread state yet (3.10 opened early) it is tried again at
	 * reads, a bounded number of times: each try is ~2000 reads, too many
	 * to pay at every synchronizing call of a process it never fits. */
	if (!with_tasks && p->calib_tries >= CALIB_TRIES)
		return;
	p->calib_tries += !with_tasks;
	c.ntids = with_tasks ? procfs_list_threads(p->pid, tids, 1024) : 0;
	if (with_tasks && c.ntids <= 0)
		return;
	for (long i = -1; i < 2048 / 4; i++) {
		c.off = i < 0 ? first : i * 4;
		c.main_seen = 0;
		c.others_ok = 1;
		if (each_tstate(p, calib_check, &c) == 0 && c.main_seen && (c.others_ok || !with_tasks)) {
			p->pthread_tid = c.off;
			return;
		}
	}
}

/* ---- strings and code objects ----------------------------------------- */

static const char *intern(struct py_proc *p, const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	struct str_node *n;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	for (n = p->strs[h & 1023]; n; n = n->next)
		if (n->hash == h && n->len == len && !memcmp(n->s, s, len))
			return n->s;
	if (p->str_bytes + len > STR_BUDGET || !(n = malloc(sizeof(*n) + len + 1)))
		return "?";
	n->hash = h;
	n->len = len;
	memcpy(n->s, s, len);
	n->s[len] = 0;
	n->next = p->strs[h & 1023];
	p->strs[h & 1023] = n;
	p->str_bytes += len + 1;
	return n->s;
}

/* A str object as UTF-8: compact ASCII and compact UCS-1 (Latin-1) strings;
 * others "?". -EAGAIN when the object is not a str or unreadable. */
static int read_str(struct py_proc *p, uint64_t addr, const char **out)
{
	const struct py_offsets *o = &p->o;
	uint8_t h[STR_HDR], raw[MAX_STR];
	char utf8[2 * MAX_STR];
	uint64_t len;
	uint32_t st;
	size_t n = 0;
	long data;

	if (rd(p, addr, h, (size_t)o->unicode_compact_size) || at64(h, OBJ_TYPE) != p->unicode_type)
		return -EAGAIN;
	len = at64(h, o->unicode_length);
	st = at32(h, o->unicode_state);
	if (!UNI_COMPACT(st) || UNI_KIND(st) != 1) {
		*out = "?";
		return 0;
	}
	data = UNI_ASCII(st) ? o->unicode_ascii_size : o->unicode_compact_size;
	if (len > MAX_STR)
		len = MAX_STR;
	if (rd(p, addr + (uint64_t)data, raw, len))
		return -EAGAIN;
	for (size_t i = 0; i < len; i++) {
		if (raw[i] < 0x80) {
			utf8[n++] = (char)raw[i];
		} else {
			utf8[n++] = (char)(0xc0 | raw[i] >> 6);
			utf8[n++] = (char)(0x80 | (raw[i] & 0x3f));
		}
	}
	*out = intern(p, utf8, n);
	return 0;
}

static int read_bytes(struct py_proc *p, uint64_t addr, uint8_t **out, uint32_t *outlen)
{
	uint8_t h[BYTES_HDR];
	uint64_t len;
	uint8_t *b;

	if (rd(p, addr, h, (size_t)p->o.bytes_sval) || at64(h, OBJ_TYPE) != p->bytes_type)
		return -EAGAIN;
	len = at64(h, p->o.bytes_size);
	if (len > MAX_LINETABLE)
		return -EAGAIN;
	b = malloc(len ? len : 1);
	if (!b)
		return -ENOMEM;
	if (rd(p, addr + (uint64_t)p->o.bytes_sval, b, len)) {
		free(b);
		return -EAGAIN;
	}
	*out = b;
	*outlen = (uint32_t)len;
	return 0;
}

/* The cached strings and line table of the code object at addr, checked
 * against the object as it is now (an address may be reused by another). */
static int code_get(struct py_proc *p, uint64_t addr, struct code_entry **out)
{
	const struct py_offsets *o = &p->o;
	uint8_t c[CODE_HDR];
	size_t clen = (size_t)o->code_firstlineno + 4;
	/* 4-way sets, so that two hot code objects whose addresses collide do
	 * not evict each other at every sample. */
	struct code_entry *set = &p->codes[((addr * 0x9e3779b97f4a7c15ull) >> 54) & (CODE_SLOTS / 4 - 1)],
			  *e = NULL, n = { 0 };
	uint64_t fname;
	int err;

	const long ptrs[] = { o->code_filename, o->code_name, o->code_qualname, o->code_linetable };

	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
		if (ptrs[i] != NONE && clen < (size_t)ptrs[i] + 8)
			clen = (size_t)ptrs[i] + 8;
	if (clen > sizeof(c) || rd(p, addr, c, clen) || at64(c, OBJ_TYPE) != p->code_type)
		return -EAGAIN;
	n.addr = addr;
	n.filename = at64(c, o->code_filename);
	n.name = at64(c, o->code_qualname != NONE ? o->code_qualname : o->code_name);
	n.linetable = at64(c, o->code_linetable);
	n.firstlineno = (int)at32(c, o->code_firstlineno);
	for (int w = 0; w < 4 && !e; w++)
		if (set[w].addr == addr)
			e = &set[w];
	if (e && e->filename == n.filename && e->name == n.name && e->linetable == n.linetable &&
	    e->firstlineno == n.firstlineno) {
		*out = e;
		return 0;
	}
	for (int w = 0; w < 4 && !e; w++)
		if (!set[w].addr)
			e = &set[w];
	if (!e)
		e = &set[p->victim++ & 3];
	fname = n.filename;
	if ((err = read_str(p, fname, &n.file)) || (err = read_str(p, n.name, &n.func)) ||
	    (err = read_bytes(p, n.linetable, &n.lt, &n.ltlen)))
		return err;
	if (p->lt_bytes + n.ltlen > LT_BUDGET) { /* a cache of huge tables: no line */
		free(n.lt);
		n.lt = NULL;
		n.ltlen = 0;
	}
	p->lt_bytes += n.ltlen;
	p->lt_bytes -= e->ltlen;
	free(e->lt);
	*e = n;
	*out = e;
	return 0;
}

/* ---- line numbers --------------------------------------------------------- */

/* 3.10 (Objects/lnotab_notes.txt): pairs (bytecode delta: unsigned byte,
 * line delta: signed byte, -128 = no line); addr in bytes. */
static int line_310(const uint8_t *t, uint32_t n, int first, int addr)
{
	int end = 0, line = first, cur;

	if (addr < 0)
		return first;
	for (uint32_t i = 0; i + 1 < n; i += 2) {
		int start = end;
		int8_t d = (int8_t)t[i + 1];
		end += t[i];
		if (d == -128) {
			cur = -1;
		} else {
			line += d;
			cur = line;
		}
		if (start <= addr && addr < end)
			return cur;
	}
	return -1;
}

static int varint(const uint8_t *t, uint32_t n, uint32_t *i, uint32_t *v)
{
	uint32_t r, shift = 0;

	if (*i >= n)
		return -1;
	r = t[(*i)++];
	*v = r & 63;
	while (r & 64) {
		if (*i >= n || shift > 24)
			return -1;
		r = t[(*i)++];
		shift += 6;
		*v |= (r & 63) << shift;
	}
	return 0;
}

/* 3.11+ location table (Objects/locations.md): entries of a header byte
 * (bit 7 set, code in bits 3-6, length-1 code units in bits 0-2) and
 * continuation bytes; the line delta depends on the code. addr in bytes. */
static int line_311(const uint8_t *t, uint32_t n, int first, int addr)
{
	int end = 0, line = first;
	uint32_t i = 0, v;

	if (addr < 0)
		return first;
	while (i < n) {
		uint8_t h = t[i];
		int code = (h >> 3) & 15, delta = 0;
		uint32_t j = i + 1;

		if (!(h & 0x80))
			return -1;
		end += ((h & 7) + 1) * 2;
		if (code == 13 || code == 14) { /* no columns, long form: signed varint */
			if (varint(t, n, &j, &v))
				return -1;
			delta = (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
		} else if (code >= 10 && code <= 12) { /* one-line forms */
			delta = code - 10;
		}
		line += delta;
		for (i++; i < n && !(t[i] & 0x80); i++)
			;
		if (addr < end)
			return code == 15 ? -1 : line;
	}
	return -1;
}

int py_linetable_line(int minor, const uint8_t *t, size_t n, int firstlineno, int addr)
{
	if (n > MAX_LINETABLE)
		return -1;
	return minor == 10 ? line_310(t, (uint32_t)n, firstlineno, addr)
			   : line_311(t, (uint32_t)n, firstlineno, addr);
}

/* ---- stacks ---------------------------------------------------------------- */

struct find_tid {
	pid_t tid;
	uint64_t ts;
	int err;
};

static int find_tid_cb(struct py_proc *p, uint64_t ts, void *arg)
{
	struct find_tid *f = arg;
	long t = tstate_tid(p, ts);

	if (t == -EAGAIN)
		return -EAGAIN;
	if (t == f->tid) {
		f->ts = ts;
		return 1;
	}
	return 0;
}

static int read_stack(struct py_proc *p, uint64_t ts, struct py_frame *frames, int max)
{
	const struct py_offsets *o = &p->o;
	uint64_t frame, code, instr;
	uint8_t f[128];
	size_t flen = (size_t)o->frame_instr + 8;
	int depth = 0, walked = 0;

	if ((size_t)o->frame_code + 8 > flen)
		flen = (size_t)o->frame_code + 8;
	if ((size_t)o->frame_previous + 8 > flen)
		flen = (size_t)o->frame_previous + 8;
	if (o->frame_owner != NONE && (size_t)o->frame_owner + 1 > flen)
		flen = (size_t)o->frame_owner + 1;
	if (flen > sizeof(f))
		return -EAGAIN;
	if (rd_ptr(p, ts + (uint64_t)o->tstate_frame, &frame))
		return -EAGAIN;
	if (o->cframe_current_frame != NONE && frame &&
	    rd_ptr(p, frame + (uint64_t)o->cframe_current_frame, &frame))
		return -EAGAIN;
	for (; frame && depth < max; walked++) {
		struct code_entry *e;
		int addr, line, err;

		if (walked >= MAX_DEPTH || rd(p, frame, f, flen))
			return -EAGAIN;
		code = at64(f, o->frame_code);
		if (o->owner_cstack != NONE && f[o->frame_owner] == o->owner_cstack) {
			frame = at64(f, o->frame_previous);
			continue; /* a shim frame of the C stack, no Python code of its own */
		}
		err = code_get(p, code, &e);
		if (err)
			return err;
		if (o->minor == 10) {
			int32_t lasti = (int32_t)at32(f, o->frame_instr); /* counts code units */
			if (lasti > (1 << 29))
				return -EAGAIN;
			addr = lasti * 2;
		} else {
			instr = at64(f, o->frame_instr);
			int64_t d = (int64_t)(instr - (code + (uint64_t)o->code_adaptive));
			if (d < -2 || d > (int64_t)1 << 30)
				return -EAGAIN;
			addr = (int)d;
		}
		line = py_linetable_line(o->minor, e->lt, e->ltlen, e->firstlineno, addr);
		frames[depth].file = e->file;
		frames[depth].func = e->func;
		frames[depth].line = line > 0 ? (uint32_t)line : 0;
		depth++;
		frame = at64(f, o->frame_previous);
	}
	return depth;
}

int py_proc_stack(struct py_proc *p, pid_t tid, struct py_frame *frames, int max)
{
	struct find_tid ft = { .tid = tid };
	int r, spins = 0;

	if (!p || !frames || max < 0)
		return -EINVAL;
	/* The cache is the only shared state: whoever holds it reads, the
	 * others retry briefly, then drop their sample rather than wait. */
	while (atomic_flag_test_and_set_explicit(&p->busy, memory_order_acquire))
		if (++spins > 20000)
			return -EAGAIN;
	/* 3.10 opened before its main thread had a thread state: try again. */
	if (p->o.tstate_native_thread_id == NONE && p->pthread_tid == NONE)
		calibrate_pthread_tid(p, 0);
	if (p->o.tstate_native_thread_id == NONE && p->pthread_tid == NONE) {
		atomic_flag_clear_explicit(&p->busy, memory_order_release);
		return -ESRCH;
	}
	/* the thread state found last time for tid, if it still holds tid (a
	 * walk of the thread list costs two reads per thread) */
	unsigned slot = (unsigned)tid % (sizeof(p->tcache) / sizeof(p->tcache[0]));

	if (p->tcache[slot].tid == tid && tstate_tid(p, p->tcache[slot].ts) == tid) {
		ft.ts = p->tcache[slot].ts;
		r = 1;
	} else {
		r = each_tstate(p, find_tid_cb, &ft);
	}
	if (r == 1) {
		p->tcache[slot].tid = tid;
		p->tcache[slot].ts = ft.ts;
		r = read_stack(p, ft.ts, frames, max);
	} else if (r == 0) {
		r = -ESRCH;
	}
	atomic_flag_clear_explicit(&p->busy, memory_order_release);
	return r;
}

struct each_stack {
	struct py_frame *frames;
	int max;
	py_stack_fn fn;
	void *arg;
};

static int each_stack_cb(struct py_proc *p, uint64_t ts, void *arg)
{
	struct each_stack *e = arg;
	long t = tstate_tid(p, ts);

	if (t == -EAGAIN)
		return -EAGAIN;
	if (t > 0)
		e->fn(e->arg, (pid_t)t, e->frames, read_stack(p, ts, e->frames, e->max));
	return 0;
}

int py_proc_each_stack(struct py_proc *p, struct py_frame *frames, int max, py_stack_fn fn, void *arg)
{
	struct each_stack e = { frames, max, fn, arg };
	int r;

	if (!p || !frames || max < 0 || !fn)
		return -EINVAL;
	if (atomic_flag_test_and_set_explicit(&p->busy, memory_order_acquire))
		return -EAGAIN; /* another thread reads: drop rather than wait */
	if (p->o.tstate_native_thread_id == NONE && p->pthread_tid == NONE)
		calibrate_pthread_tid(p, 0);
	r = p->o.tstate_native_thread_id == NONE && p->pthread_tid == NONE ? 0 : each_tstate(p, each_stack_cb, &e);
	atomic_flag_clear_explicit(&p->busy, memory_order_release);
	return r < 0 ? r : 0;
}

struct list_tids {
	pid_t *tids;
	int n, max;
};

static int list_cb(struct py_proc *p, uint64_t ts, void *arg)
{
	struct list_tids *l = arg;
	long t = tstate_tid(p, ts);

	if (t == -EAGAIN)
		return -EAGAIN;
	if (t > 0 && l->n < l->max)
		l->tids[l->n++] = (pid_t)t;
	return 0;
}

int py_proc_threads(struct py_proc *p, pid_t *tids, int max)
{
	struct list_tids l = { tids, 0, max };
	int r;

	if (!p || (!tids && max > 0) || max < 0)
		return -EINVAL;
	if (p->o.tstate_native_thread_id == NONE && p->pthread_tid == NONE &&
	    !atomic_flag_test_and_set_explicit(&p->busy, memory_order_acquire)) {
		calibrate_pthread_tid(p, 0); /* as in py_proc_stack */
		atomic_flag_clear_explicit(&p->busy, memory_order_release);
	}
	r = each_tstate(p, list_cb, &l);
	return r < 0 ? r : l.n;
}

const char *py_proc_version(const struct py_proc *p)
{
	return p ? p->version : "?";
}

void py_proc_close(struct py_proc *p)
{
	if (!p)
		return;
	if (p->codes)
		for (int i = 0; i < CODE_SLOTS; i++)
			free(p->codes[i].lt);
	free(p->codes);
	for (int i = 0; i < 1024; i++)
		for (struct str_node *n = p->strs[i], *next; n; n = next) {
			next = n->next;
			free(n);
		}
	free(p);
}

/* Opens a file that another process names (its maps: any text it likes)
 * for reading, only where it is a regular file of a plausible size: a path
 * descriptor is checked first and only then reopened, so that a FIFO, a
 * device or a socket put under the name is never opened (an open that
 * blocks, or one with a device's side effects). nofollow: a symbolic link
 * at the end of the name is refused (a mapped file's name never is one). */
static int open_regular(const char *path, int nofollow, uint64_t *size)
{
	char self[64];
	struct stat st;
	int pfd = open(path, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0)), fd;

	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0)
		fd = -errno;
	else if (!S_ISREG(st.st_mode))
		fd = -EINVAL;
	else if (st.st_size < (off_t)sizeof(Elf64_Ehdr) || (uint64_t)st.st_size > MAX_ELF_BYTES)
		fd = -ENOEXEC;
	else {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		*size = (uint64_t)st.st_size;
	}
	close(pfd);
	return fd;
}

/* The interpreter's symbols from the file mapped at m. The mapping itself
 * first (/proc/PID/map_files: the file as mapped, whatever its name now;
 * it takes CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else its name through
 * the process's root (another mount namespace), else the name as is. */
static int open_elf(pid_t pid, const struct mapping *m, struct elf_info *ei)
{
	char path[600];
	int minor = name_minor(m->path), fd;
	uint64_t size = 0;

	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = open_regular(path, 0, &size);
	if (fd == -EPERM || fd == -EACCES || fd == -ENOENT) {
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, m->path);
		fd = open_regular(path, 1, &size);
		if (fd == -ENOENT || fd == -EACCES)
			fd = open_regular(m->path, 1, &size);
	}
	if (fd < 0)
		return fd;
	return elf_read(fd, size, minor, ei);
}

int py_proc_open(struct py_proc **pp, pid_t pid, char *why, size_t whylen)
{
	struct mapping maps[16];
	struct elf_info ei;
	struct py_proc *p;
	const struct mapping *m = NULL, *odd = NULL; /* odd: a name that is no regular file now */
	int n, err, minor = -1, stripped = 0;
	uint64_t bias = 0;

	if (!pp)
		return -EINVAL;
	*pp = NULL;
	say(why, whylen, "ok");
	n = find_candidates(pid, maps, 16, why, whylen);
	if (n < 0)
		return n;
	/* python3.X files first: a name like libtorch_python.so is a candidate
	 * too, and its symbol tables are large to read */
	for (int k = 0; k < 2 * n && !m; k++) {
		int i = k % n;

		if ((k < n) != (name_minor(maps[i].path) >= 0))
			continue;
		err = open_elf(pid, &maps[i], &ei);
		if (err == -EINVAL && !odd)
			odd = &maps[i];
		if (err)
			continue;
		if (ei.sym[SYM_RUNTIME]) {
			m = &maps[i];
			bias = m->start - ei.load_vaddr;
			break;
		}
		/* A python3.X executable or library without _PyRuntime among its
		 * symbols: stripped, or static without exported symbols. */
		if (name_minor(maps[i].path) >= 0)
			stripped = 1;
	}
	if (!m) {
		if (stripped) {
			say(why, whylen, "process %d runs a Python interpreter without symbols (stripped or static): "
				    "_PyRuntime cannot be found; use a Python built with its symbols",
			    (int)pid);
			return -ENOEXEC;
		}
		say(why, whylen, "process %d is not a Python process (no _PyRuntime in its executable or libraries)%s%s%s",
		    (int)pid, odd ? "; skipped " : "", odd ? odd->path : "", odd ? ", which is no regular file now" : "");
		return -ENOENT;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->codes = calloc(CODE_SLOTS, sizeof(*p->codes)))) {
		free(p);
		say(why, whylen, "out of memory");
		return -ENOMEM;
	}
	atomic_flag_clear(&p->busy);
	p->pid = pid;
	p->pthread_tid = NONE;
	p->runtime = ei.sym[SYM_RUNTIME] + bias;
	p->code_type = ei.sym[SYM_CODE_TYPE] ? ei.sym[SYM_CODE_TYPE] + bias : 0;
	p->unicode_type = ei.sym[SYM_UNICODE_TYPE] ? ei.sym[SYM_UNICODE_TYPE] + bias : 0;
	p->bytes_type = ei.sym[SYM_BYTES_TYPE] ? ei.sym[SYM_BYTES_TYPE] + bias : 0;
	if (!p->code_type || !p->unicode_type || !p->bytes_type) {
		say(why, whylen, "%s: PyCode_Type, PyUnicode_Type or PyBytes_Type not among its symbols", m->path);
		err = -ENOEXEC;
		goto fail;
	}
	{
		uint64_t probe;
		err = rd_ptr(p, p->runtime, &probe);
		if (err) {
			say(why, whylen, "cannot read the memory of process %d: %s (%s)", (int)pid, strerror(-err),
			    err == -EPERM ? "run as root, or as its user with kernel.yama.ptrace_scope=0"
					  : "is it still running?");
			goto fail;
		}
	}
	if (ei.sym[SYM_VERSION]) {
		uint64_t hex;
		err = rd_ptr(p, ei.sym[SYM_VERSION] + bias, &hex);
		if (err) {
			say(why, whylen, "cannot read Py_Version in process %d: %s", (int)pid, strerror(-err));
			goto fail;
		}
		minor = (int)((hex >> 16) & 0xff);
		if ((hex >> 24) != 3)
			minor = -1;
		snprintf(p->version, sizeof(p->version), "%d.%d.%d", (int)(hex >> 24) & 0xff, minor,
			 (int)(hex >> 8) & 0xff);
	} else {
		minor = name_minor(m->path);
		if (minor == 10)
			snprintf(p->version, sizeof(p->version), "3.10%s%s", ei.micro[0] ? "." : "", ei.micro);
		else
			snprintf(p->version, sizeof(p->version), "3.%d", minor);
	}
	switch (minor) {
	case 10: p->o = off310; break;
	case 11: p->o = off311; break;
	case 12: p->o = off312; break;
	case 13:
		err = open_debug_offsets(p, why, whylen);
		if (err) {
			if (err != -ENOTSUP)
				say(why, whylen, "cannot read the debug offsets of process %d: %s", (int)pid,
				    strerror(-err));
			goto fail;
		}
		break;
	default:
		say(why, whylen, "process %d runs Python %s: only 3.10 to 3.13 are supported", (int)pid,
		    minor < 0 ? "of an unknown version" : p->version);
		err = -ENOTSUP;
		goto fail;
	}
	if (!offsets_fit(&p->o)) {
		say(why, whylen, "process %d runs Python %s with a layout the reader's buffers do not hold",
		    (int)pid, p->version);
		err = -ENOTSUP;
		goto fail;
	}
	if (minor == 10)
		calibrate_pthread_tid(p, 1);
	*pp = p;
	return 0;
fail:
	py_proc_close(p);
	return err;
}
