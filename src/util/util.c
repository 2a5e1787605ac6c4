#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <strings.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "util.h"

int gw_quiet;

uint64_t gw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
	char line[2048];

	vsnprintf(line, sizeof(line), fmt, ap);
	/* messages quote paths and names from recordings: escaped, newlines
	 * and tabs too (a message is one line) */
	fprintf(stderr, "gpuwhy: %s", kind);
	fput_escaped(stderr, line, strlen(line), 0);
	fputc('\n', stderr);
}

void gw_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
}

void gw_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void gw_note(const char *fmt, ...)
{
	va_list ap;

	if (gw_quiet)
		return;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

int gw_meminfo(uint64_t *total, uint64_t *avail)
{
	char buf[4096];
	ssize_t n = gw_read_file("/proc/meminfo", buf, sizeof(buf));
	char *p, *q;

	if (n < 0)
		return (int)n;
	p = strstr(buf, "MemTotal:");
	q = strstr(buf, "MemAvailable:");
	if (!p || !q)
		return -ENOENT;
	*total = strtoull(p + 9, NULL, 10) * 1024;
	*avail = strtoull(q + 13, NULL, 10) * 1024;
	return 0;
}

ssize_t gw_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (len == 0)
		return -EINVAL;
	if (fd < 0)
		return -errno;
	while (got < len - 1) {
		ssize_t r = read(fd, buf + got, len - 1 - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;

			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = 0;
	return (ssize_t)got;
}

int gw_read_u64(const char *path, uint64_t *out)
{
	char buf[64], *end;
	ssize_t n = gw_read_file(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	errno = 0;
	*out = strtoull(buf, &end, 10);
	if (end == buf || errno)
		return -EINVAL;
	return 0;
}

static int sb_grow(struct strbuf *sb, size_t add)
{
	if (sb->len + add + 1 <= sb->cap)
		return 0;
	size_t ncap = sb->cap ? sb->cap : 256;

	while (ncap < sb->len + add + 1)
		ncap *= 2;
	char *n = realloc(sb->s, ncap);

	if (!n)
		return -ENOMEM;
	sb->s = n;
	sb->cap = ncap;
	return 0;
}

int sb_addn(struct strbuf *sb, const char *s, size_t n)
{
	if (sb_grow(sb, n) < 0)
		return -ENOMEM;
	memcpy(sb->s + sb->len, s, n);
	sb->len += n;
	sb->s[sb->len] = 0;
	return 0;
}

int sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || sb_grow(sb, (size_t)n) < 0)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(sb->s + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

void sb_free(struct strbuf *sb)
{
	free(sb->s);
	sb->s = NULL;
	sb->len = sb->cap = 0;
}

const char *fmt_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
	return buf;
}

const char *fmt_bytes(char *buf, size_t len, double b)
{
	if (b < 1024)
		snprintf(buf, len, "%.0f B", b);
	else if (b < 1024.0 * 1024)
		snprintf(buf, len, "%.1f KiB", b / 1024);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", b / 1024 / 1024);
	else
		snprintf(buf, len, "%.2f GiB", b / 1024 / 1024 / 1024);
	return buf;
}

int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int gw_utf8_locale(void)
{
	/* a locale object of its own: setlocale would change the number format
	 * (a decimal comma in JSON) for the whole process */
	const char *v = getenv("LC_ALL"), *cs;
	locale_t l;
	int utf8;

	if (!v || !*v)
		v = getenv("LC_CTYPE");
	if (!v || !*v)
		v = getenv("LANG");
	if (!v || !*v || !strcmp(v, "C") || !strcmp(v, "POSIX"))
		return 0;
	if ((l = newlocale(LC_CTYPE_MASK, "", (locale_t)0)) == (locale_t)0)
		/* not installed, or no memory to load it: its name says */
		return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
	cs = nl_langinfo_l(CODESET, l);
	utf8 = cs && (!strcasecmp(cs, "UTF-8") || !strcasecmp(cs, "utf8"));
	freelocale(l);
	return utf8;
}

static int is_alnum(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* The micro sign put in as the text streams through: a digit, " us", then
 * no letter or digit ("3.6 us", not "3 users"). held: " ", " u" or " us"
 * after a digit, kept until the next byte decides. */
struct units {
	FILE *out;
	char held[4];
	size_t nheld;
	int digit; /* the last byte passed on was a digit */
};

static void units_byte(struct units *u, char c)
{
	static const char pat[] = " us";

	for (;;) {
		if (u->nheld == 3 && !is_alnum((unsigned char)c)) {
			fputs(" \xc2\xb5s", u->out); /* U+00B5 MICRO SIGN: one column, as the 'u' */
			u->nheld = 0;
			u->digit = 0;
		} else if (u->nheld && (u->nheld == 3 || c != pat[u->nheld])) {
			fwrite(u->held, 1, u->nheld, u->out); /* no match: as it was, c again */
			u->digit = 0;
			u->nheld = 0;
			continue;
		} else if (u->nheld || (c == ' ' && u->digit)) {
			u->held[u->nheld++] = c;
			return;
		}
		fputc(c, u->out);
		u->digit = c >= '0' && c <= '9';
		return;
	}
}

static ssize_t units_write(void *cookie, const char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		units_byte(cookie, buf[i]);
	return (ssize_t)n;
}

static int units_close(void *cookie)
{
	struct units *u = cookie;

	if (u->nheld == 3)
		fputs(" \xc2\xb5s", u->out); /* " us" at the end */
	else
		fwrite(u->held, 1, u->nheld, u->out);
	return 0;
}

int gw_with_units(FILE *f, int micro, void (*write)(FILE *out, const void *ctx), const void *ctx)
{
	struct units u = { f, "", 0, 0 };
	cookie_io_functions_t io = { NULL, units_write, NULL, units_close };
	FILE *m;

	if (micro <= 0) { /* < 0: the locale could not be read for want of memory */
		write(f, ctx);
		return micro < 0 ? -ENOMEM : 0;
	}
	if (!(m = fopencookie(&u, "w", io))) {
		write(f, ctx);
		return -ENOMEM;
	}
	write(m, ctx);
	fclose(m); /* f's own errors stay on f, for its caller */
	return 0;
}

void fprint_wrapped(FILE *f, const char *text, int indent, int col)
{
	const char *p = text;

	while (*p) {
		int room = 78 - col;
		size_t len = strlen(p), cut;

		if (room < 20)
			room = 20;
		if ((int)len <= room) {
			fputs(p, f);
			break;
		}
		cut = (size_t)room;
		while (cut > 0 && p[cut] != ' ')
			cut--;
		if (cut == 0)
			cut = (size_t)room;
		fwrite(p, 1, cut, f);
		fprintf(f, "\n%*s", indent, "");
		col = indent;
		p += cut;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

int cpulist_contains(const char *list, long cpu)
{
	const char *p = list;

	while (p && *p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;

		if (end == p)
			return 0;
		hi = lo;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (cpu >= lo && cpu <= hi)
			return 1;
		p = *end == ',' ? end + 1 : NULL;
	}
	return 0;
}

int cpulist_subset(const char *inner, const char *outer)
{
	const char *p = inner;

	while (p && *p) {
		char *end;
		long lo = strtol(p, &end, 10), hi;

		if (end == p)
			break;
		hi = lo;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (long c = lo; c <= hi && c < 65536; c++)
			if (!cpulist_contains(outer, c))
				return 0;
		p = *end == ',' ? end + 1 : NULL;
	}
	return 1;
}

double pcie_practical_gbs(unsigned gen, unsigned width)
{
	static const double lane[] = { 0, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4 };

	return gen < sizeof(lane) / sizeof(lane[0]) ? lane[gen] * width : 0;
}

int gw_color_auto(int fd)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	/* a terminal without escape sequences: TERM=dumb (Emacs shells, some
	 * CI logs) or none at all, as git decides */
	if (!term || !*term || !strcmp(term, "dumb"))
		return 0;
	return isatty(fd) && !(nc && *nc);
}

int gw_is_python_name(const char *base)
{
	if (strncmp(base, "python", 6) != 0)
		return 0;
	for (const char *p = base + 6; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return 0;
	return 1;
}
