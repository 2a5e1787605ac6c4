#include <stdlib.h>
#include <string.h>

#include "escape.h"

size_t utf8_valid_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], need, cp, min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (n < need + 1)
		return 0;
	for (unsigned i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need + 1;
}

/* The escape for the byte or sequence at s, or 0 bytes written when it
 * prints as it is; *len: how many bytes it covers. keep_nl: newline and
 * tab pass. */
static int escape_at(char *out, const unsigned char *s, size_t n, size_t *len, int keep_nl)
{
	size_t k = utf8_valid_len(s, n);

	*len = k ? k : 1;
	if (!k)
		return sprintf(out, "\\x%02x", s[0]);
	if (k == 2 && s[0] == 0xc2 && s[1] < 0xa0) /* C1 controls, U+0080-U+009F */
		return sprintf(out, "\\u%04x", s[1]);
	if (k > 1 || (s[0] >= 0x20 && s[0] != 0x7f))
		return 0;
	if (keep_nl && (s[0] == '\n' || s[0] == '\t'))
		return 0;
	switch (s[0]) {
	case '\n': return sprintf(out, "\\n");
	case '\t': return sprintf(out, "\\t");
	case '\r': return sprintf(out, "\\r");
	default: return sprintf(out, "\\x%02x", s[0]);
	}
}

void fput_escaped(FILE *f, const char *s, size_t n, int keep_lines)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, start = 0, len;
	char esc[16];

	while (i < n) {
		int e = escape_at(esc, p + i, n - i, &len, keep_lines);

		if (e) {
			fwrite(p + start, 1, i - start, f);
			fwrite(esc, 1, (size_t)e, f);
			start = i + len;
		}
		i += len;
	}
	fwrite(p + start, 1, n - start, f);
}

const char *escape_line(char *buf, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0, l;
	char esc[16];

	if (!len)
		return buf;
	while (i < n) {
		int e = escape_at(esc, p + i, n - i, &l, 0);
		size_t m = e ? (size_t)e : l;

		if (o + m >= len) /* cut before a character or an escape, never inside */
			break;
		memcpy(buf + o, e ? esc : s + i, m);
		o += m;
		i += l;
	}
	buf[o] = 0;
	return buf;
}

/* The filter: bytes held back while a sequence may still be completing
 * (a UTF-8 character or a colour sequence cut by the stream's buffer). */
struct term_filter {
	FILE *out;
	int allow_sgr;
	unsigned char held[32];
	size_t nheld;
};

/* Length of a colour sequence ESC [ [0-9;]* m at s, 0 if it is not one,
 * -1 if it may still become one with more bytes. */
static long sgr_len(const unsigned char *s, size_t n)
{
	size_t i = 1;

	if (n < 2)
		return -1;
	if (s[1] != '[')
		return 0;
	for (i = 2; i < n && i < 24; i++) {
		if (s[i] == 'm')
			return (long)i + 1;
		if (!(s[i] == ';' || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	}
	return i >= 24 ? 0 : -1;
}

/* Writes what is decided of buf; returns the bytes consumed (the rest may
 * be an incomplete sequence, unless final). */
static size_t filter_run(struct term_filter *tf, const unsigned char *buf, size_t n, int final)
{
	size_t i = 0, start = 0, len;
	char esc[16];

	while (i < n) {
		if (buf[i] == 0x1b && tf->allow_sgr) {
			long l = sgr_len(buf + i, n - i);

			if (l < 0 && !final)
				break;
			if (l > 0) {
				i += (size_t)l;
				continue;
			}
		}
		if (buf[i] >= 0xc2 && buf[i] <= 0xf4 && !final && n - i < 4 &&
		    !utf8_valid_len(buf + i, n - i)) {
			/* maybe a character cut by the buffer: wait for its end */
			unsigned need = buf[i] >= 0xf0 ? 4 : buf[i] >= 0xe0 ? 3 : 2;
			size_t j;

			for (j = 1; j < n - i && (buf[i + j] & 0xc0) == 0x80; j++)
				;
			if (j == n - i && j < need)
				break;
		}
		int e = escape_at(esc, buf + i, n - i, &len, 1);

		if (e) {
			fwrite(buf + start, 1, i - start, tf->out);
			fwrite(esc, 1, (size_t)e, tf->out);
			start = i + len;
		}
		i += len;
	}
	fwrite(buf + start, 1, i - start, tf->out);
	return i;
}

static ssize_t filter_write(void *cookie, const char *buf, size_t size)
{
	struct term_filter *tf = cookie;
	size_t done = 0;

	/* first complete what was held back, a byte at a time */
	while (tf->nheld && done < size) {
		size_t used;

		tf->held[tf->nheld++] = (unsigned char)buf[done++];
		used = filter_run(tf, tf->held, tf->nheld, tf->nheld == sizeof(tf->held));
		memmove(tf->held, tf->held + used, tf->nheld - used);
		tf->nheld -= used;
	}
	if (done < size) {
		size_t used = filter_run(tf, (const unsigned char *)buf + done, size - done, 0);

		memcpy(tf->held, buf + done + used, size - done - used);
		tf->nheld = size - done - used;
	}
	return ferror(tf->out) ? -1 : (ssize_t)size;
}

static int filter_close(void *cookie)
{
	struct term_filter *tf = cookie;
	int ret;

	filter_run(tf, tf->held, tf->nheld, 1);
	ret = fflush(tf->out) || ferror(tf->out) ? -1 : 0;
	free(tf);
	return ret;
}

FILE *term_filter_open(FILE *out, int allow_sgr)
{
	struct term_filter *tf = calloc(1, sizeof(*tf));
	cookie_io_functions_t io = { .write = filter_write, .close = filter_close };
	FILE *f;

	if (!tf)
		return NULL;
	tf->out = out;
	tf->allow_sgr = allow_sgr;
	f = fopencookie(tf, "w", io);
	if (!f)
		free(tf);
	return f;
}
