/* The strict number parser every numeric option uses, and the option
 * parser every command uses (src/util/args.c). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "t.h"
#include "util/args.h"

int main(void)
{
	static const struct {
		const char *s;
		int want; /* 0, -EINVAL or -ERANGE */
		double v;
	} dbl[] = {
		{ "5", 0, 5 }, { "0.5", 0, 0.5 }, { "1e1", 0, 10 }, { "100", 0, 100 },
		{ "nan", -EINVAL, 0 }, { "NaN", -EINVAL, 0 }, { "inf", -EINVAL, 0 },
		{ "-inf", -EINVAL, 0 }, { "infinity", -EINVAL, 0 }, { "5abc", -EINVAL, 0 },
		{ "", -EINVAL, 0 }, { " 5", -EINVAL, 0 }, { "5 ", -EINVAL, 0 }, { "abc", -EINVAL, 0 },
		{ "0", -ERANGE, 0 }, { "-1", -ERANGE, 0 }, { "101", -ERANGE, 0 },
		{ "1e400", -ERANGE, 0 }, { "1e-400", -ERANGE, 0 },
	};
	static const struct {
		const char *s;
		int want;
		long v;
	} lng[] = {
		{ "1", 0, 1 }, { "1000", 0, 1000 }, { "50abc", -EINVAL, 0 }, { "1e2", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 }, { "", -EINVAL, 0 }, { " 5", -EINVAL, 0 },
		{ "0", -ERANGE, 0 }, { "1001", -ERANGE, 0 }, { "4294967297", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 }, { "-5", -ERANGE, 0 },
	};
	static const struct {
		const char *s;
		int want;
		uint64_t v;
	} sz[] = {
		{ "4096", 0, 4096 }, { "500M", 0, 500ull << 20 }, { "2G", 0, 2ull << 30 },
		{ "1.5k", 0, 1536 }, { "10MB", 0, 10ull << 20 }, { "nan", -EINVAL, 0 },
		{ "inf", -EINVAL, 0 }, { "-1G", -EINVAL, 0 }, { "10Q", -EINVAL, 0 },
		{ "5MBx", -EINVAL, 0 }, { "1e30", -ERANGE, 0 }, { "18446744073709551616", -ERANGE, 0 },
	};

	for (size_t i = 0; i < sizeof(dbl) / sizeof(dbl[0]); i++) {
		double v = -7;
		int r = gw_parse_double(dbl[i].s, 0.001, 100, &v);

		CHECK(r == dbl[i].want, "double '%s': %d, want %d", dbl[i].s, r, dbl[i].want);
		CHECK(r < 0 ? v == -7 : v == dbl[i].v, "double '%s': value %g", dbl[i].s, v);
	}
	for (size_t i = 0; i < sizeof(lng) / sizeof(lng[0]); i++) {
		long v = -7;
		int r = gw_parse_long(lng[i].s, 1, 1000, &v);

		CHECK(r == lng[i].want, "long '%s': %d, want %d", lng[i].s, r, lng[i].want);
		CHECK(r < 0 ? v == -7 : v == lng[i].v, "long '%s': value %ld", lng[i].s, v);
	}
	for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
		uint64_t v = 7;
		int r = gw_parse_size(sz[i].s, UINT64_MAX, &v);

		CHECK(r == sz[i].want, "size '%s': %d, want %d", sz[i].s, r, sz[i].want);
		CHECK(r < 0 ? v == 7 : v == sz[i].v, "size '%s': value %llu", sz[i].s,
		      (unsigned long long)v);
	}
	/* gw_getopt: what each command line returns, option by option ('?' is
	 * an error, said on stderr) */
	{
		static const struct option lo[] = {
			{ "html", required_argument, 0, 'H' }, { "json", optional_argument, 0, 'j' },
			{ "color", required_argument, 0, 'c' }, { "colour", required_argument, 0, 'c' },
			{ "force", no_argument, 0, 'O' }, { "fail-on", required_argument, 0, 'f' },
			{ "out", required_argument, 0, 'o' }, { 0, 0, 0, 0 },
		};
		static const struct {
			const char *args[4];
			const char *want; /* the options returned, in order, up to -1 */
		} cases[] = {
			{ { "--html", "-", "x" }, "H" },          /* '-' is standard output */
			{ { "--html", "--", "x" }, "?" },         /* wrote a file named '--' */
			{ { "--html", "-x" }, "?" },
			{ { "--html=" }, "?" },
			{ { "--json=--x" }, "?" },
			{ { "--json", "--force" }, "jO" },        /* optional: the next word is not its value */
			{ { "--html", "./--" }, "H" },
			{ { "--out", "-" }, "?" },               /* after '/': no standard output */
			{ { "-o", "./-" }, "o" },
			{ { "--f" }, "?" },                       /* fail-on or force */
			{ { "--col", "never" }, "c" },            /* color and colour are one option */
			{ { "--force=1" }, "?" },
			{ { "--html" }, "?" },
			{ { "-vz" }, "v?" },
			{ { "--\033[2Jx" }, "?" },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char *argv[6] = { "test" };
			char got[8] = "";
			int argc = 1, c, n = 0;

			for (int k = 0; k < 4 && cases[i].args[k]; k++)
				argv[argc++] = (char *)cases[i].args[k];
			optind = 1;
			while (n < 7 && (c = gw_getopt(argc, argv, "vo:", lo, "Hj/o")) != -1) {
				got[n++] = (char)c;
				if (c == '?')
					break;
			}
			got[n] = 0;
			CHECK(!strcmp(got, cases[i].want), "options '%s %s': got '%s', want '%s'",
			      cases[i].args[0], cases[i].args[1] ? cases[i].args[1] : "", got, cases[i].want);
		}
	}
	T_DONE();
}
