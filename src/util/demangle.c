/* The Itanium C++ ABI's name demangling (its "Mangling" chapter) for the
 * subset CUDA kernel names use; demangle.h says what that is. A name is
 * parsed into a tree of nodes, then printed; substitutions (S_, S0_...)
 * point at nodes parsed before, so the tree is a DAG and printing ends. A
 * template parameter (T_, T0_...) is looked up as c++filt does, when
 * printed: among the arguments of the function template being printed, so
 * that one T1_ node can stand for two things in two places. Output follows GNU c++filt's conventions
 * ("float const*", "A<B<int> >", "(anonymous namespace)", "{lambda(int)#1}",
 * "(padding_t)70", "16u"): tests/unit/test_demangle.c holds it to c++filt's
 * output on chosen cases, tests/cli/test_cli.sh on every kernel name of the
 * bundled recordings. */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

#define MAX_DEPTH 200 /* nesting of the parser and the printer */
#define MAX_LIST 256  /* items in one list of arguments or parameters */
#define MAX_STEPS 4000000ul /* printing a DAG can take long where little is printed */

enum kind {
	K_NAME,      /* s, len */
	K_ANON,      /* (anonymous namespace) */
	K_QUAL,      /* a::b */
	K_TMPL,      /* a<b>, b a K_LIST */
	K_BUILTIN,   /* s; code: the mangling letter */
	K_CV,        /* a const / volatile / restrict (code: bits) */
	K_PTR,       /* a* */
	K_REF,       /* a& */
	K_RREF,      /* a&& */
	K_LIT,       /* a literal: s = digits, code = style, a = the type for a cast */
	K_ENC,       /* a function: b ret (-1 none), a name, c params (K_LIST), code = cv */
	K_LOCAL,     /* a::b, a an encoding */
	K_LAMBDA,    /* {lambda(a)#num} */
	K_UNNAMED,   /* {unnamed type#num} */
	K_OP,        /* operator s */
	K_CTOR,      /* a (the class's name) */
	K_DTOR,      /* ~a */
	K_ABI,       /* a[abi:s] */
	K_UNARY,     /* s(a) */
	K_BINARY,    /* (a)s(b) */
	K_LIST,      /* items pool[a .. a+num); code 1: a template argument pack */
	K_TPARAM,    /* template parameter num, looked up when printed */
	K_EXPANSION, /* a... (a pack expansion) */
	K_CLONE,     /* a [clone s] */
};

enum { LIT_PLAIN, LIT_U, LIT_L, LIT_UL, LIT_LL, LIT_ULL, LIT_BOOL, LIT_CAST };

struct node {
	unsigned char kind, code, std; /* std: a standard abbreviation (St, Sa...) */
	unsigned num;
	const char *s;
	size_t len;
	int a, b, c;
};

struct dm {
	const char *p, *end;
	struct node *n;
	int nn, cap;
	int *pool, np, pcap;
	int *subs, ns, scap;
	int last_name; /* the last source name: a constructor's name */
	int depth, bad;
};

static int peek(const struct dm *d, int k)
{
	return d->p + k < d->end ? (unsigned char)d->p[k] : 0;
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_lower(int c)
{
	return c >= 'a' && c <= 'z';
}

static int is_upper(int c)
{
	return c >= 'A' && c <= 'Z';
}

static int fail(struct dm *d)
{
	d->bad = 1;
	return -1;
}

static int mk(struct dm *d, int kind, int a, int b)
{
	if (d->bad || d->nn == d->cap)
		return fail(d);
	struct node *x = &d->n[d->nn];

	memset(x, 0, sizeof(*x));
	x->kind = (unsigned char)kind;
	x->a = a;
	x->b = b;
	x->c = -1;
	return d->nn++;
}

static int mk_str(struct dm *d, int kind, const char *s, size_t len)
{
	int i = mk(d, kind, -1, -1);

	if (i >= 0) {
		d->n[i].s = s;
		d->n[i].len = len;
	}
	return i;
}

static void add_sub(struct dm *d, int node)
{
	if (node < 0 || d->bad)
		return;
	if (d->ns == d->scap)
		fail(d);
	else
		d->subs[d->ns++] = node;
}

static int mk_list(struct dm *d, const int *items, int n, int pack)
{
	int i = mk(d, K_LIST, d->np, -1);

	if (i < 0 || d->np + n > d->pcap)
		return fail(d);
	memcpy(d->pool + d->np, items, (size_t)n * sizeof(*items));
	d->np += n;
	d->n[i].num = (unsigned)n;
	d->n[i].code = (unsigned char)pack;
	return i;
}

/* A non-negative decimal number; -1 if none. */
static long number(struct dm *d)
{
	long v = 0;

	if (!is_digit(peek(d, 0)))
		return -1;
	while (is_digit(peek(d, 0))) {
		v = v * 10 + (*d->p++ - '0');
		if (v > 100000)
			return -1;
	}
	return v;
}

static int type(struct dm *d);
static int name(struct dm *d, int *cv);
static int encoding(struct dm *d);
static int template_args(struct dm *d);

static int source_name(struct dm *d)
{
	long len = number(d);
	int i;

	if (len <= 0 || len > d->end - d->p)
		return fail(d);
	/* GCC's name for an anonymous namespace: _GLOBAL_ [._$] N ... */
	if (len >= 10 && !memcmp(d->p, "_GLOBAL_", 8) && strchr("._$", d->p[8]) && d->p[9] == 'N')
		i = mk(d, K_ANON, -1, -1);
	else
		i = mk_str(d, K_NAME, d->p, (size_t)len);
	d->p += len;
	d->last_name = i;
	return i;
}

static const struct op {
	char code[3];
	const char *text;
	unsigned char arity; /* in an expression: 1, 2; 0 not read there */
} ops[] = {
	{ "nw", "new", 0 },  { "na", "new[]", 0 }, { "dl", "delete", 0 }, { "da", "delete[]", 0 },
	{ "ps", "+", 1 },    { "ng", "-", 1 },     { "ad", "&", 1 },      { "de", "*", 1 },
	{ "co", "~", 1 },    { "nt", "!", 1 },     { "pl", "+", 2 },      { "mi", "-", 2 },
	{ "ml", "*", 2 },    { "dv", "/", 2 },     { "rm", "%", 2 },      { "an", "&", 2 },
	{ "or", "|", 2 },    { "eo", "^", 2 },     { "ls", "<<", 2 },     { "eq", "==", 2 },
	{ "ne", "!=", 2 },   { "lt", "<", 2 },     { "le", "<=", 2 },     { "ge", ">=", 2 },
	{ "aa", "&&", 2 },   { "oo", "||", 2 },    { "aS", "=", 0 },      { "pL", "+=", 0 },
	{ "mI", "-=", 0 },   { "mL", "*=", 0 },    { "dV", "/=", 0 },     { "rM", "%=", 0 },
	{ "aN", "&=", 0 },   { "oR", "|=", 0 },    { "eO", "^=", 0 },     { "rs", ">>", 0 },
	{ "lS", "<<=", 0 },  { "rS", ">>=", 0 },   { "gt", ">", 0 },      { "ss", "<=>", 0 },
	{ "pp", "++", 0 },   { "mm", "--", 0 },    { "cm", ",", 0 },      { "pm", "->*", 0 },
	{ "pt", "->", 0 },   { "cl", "()", 0 },    { "ix", "[]", 0 },     { "qu", "?", 0 },
};

static const struct op *find_op(struct dm *d)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (peek(d, 0) == ops[i].code[0] && peek(d, 1) == ops[i].code[1])
			return &ops[i];
	return NULL;
}

/* [_ digit | __ number _] after a local entity: not printed */
static void discriminator(struct dm *d)
{
	if (peek(d, 0) != '_')
		return;
	d->p++;
	if (peek(d, 0) == '_') {
		d->p++;
		if (number(d) < 0 || peek(d, 0) != '_')
			fail(d);
		else
			d->p++;
	} else if (is_digit(peek(d, 0))) {
		d->p++;
	} else {
		fail(d);
	}
}

/* The parameter types of a function or lambda, up to E or the end. */
static int params(struct dm *d)
{
	int items[MAX_LIST], n = 0;

	while (!d->bad && d->p < d->end && peek(d, 0) != 'E' && peek(d, 0) != '.') {
		if (n == MAX_LIST)
			return fail(d);
		items[n++] = type(d);
	}
	if (!n)
		return fail(d);
	return mk_list(d, items, n, 0);
}

/* Ut [n] _ and Ul <params> E [n] _ */
static int unnamed(struct dm *d)
{
	int kind = peek(d, 1) == 't' ? K_UNNAMED : K_LAMBDA, list = -1, i;
	long num;

	d->p += 2;
	if (kind == K_LAMBDA) {
		if (peek(d, 0) == 'T' && strchr("yntp", peek(d, 1))) /* a template-head: not read */
			return fail(d);
		list = params(d);
		if (peek(d, 0) != 'E')
			return fail(d);
		d->p++;
	}
	num = number(d);
	if (peek(d, 0) != '_')
		return fail(d);
	d->p++;
	i = mk(d, kind, list, -1);
	if (i >= 0)
		d->n[i].num = num < 0 ? 1u : (unsigned)num + 2;
	if (kind == K_UNNAMED) /* c++filt counts an unnamed type as a candidate of its own */
		add_sub(d, i);
	return i;
}

static int unqualified_name(struct dm *d)
{
	int c = peek(d, 0), i;

	if (is_digit(c)) {
		i = source_name(d);
	} else if (c == 'L') {
		d->p++;
		i = source_name(d);
		discriminator(d);
	} else if (c == 'U' && (peek(d, 1) == 't' || peek(d, 1) == 'l')) {
		i = unnamed(d);
	} else if (c == 'C' && peek(d, 1) >= '1' && peek(d, 1) <= '5') {
		if (d->last_name < 0)
			return fail(d);
		d->p += 2;
		i = mk(d, K_CTOR, d->last_name, -1);
	} else if (c == 'D' && peek(d, 1) >= '0' && peek(d, 1) <= '5' && peek(d, 1) != '3') {
		if (d->last_name < 0)
			return fail(d);
		d->p += 2;
		i = mk(d, K_DTOR, d->last_name, -1);
	} else if (is_lower(c)) {
		const struct op *op = find_op(d);

		if (!op) /* cv (a conversion), li (a literal operator), v (vendor) */
			return fail(d);
		d->p += 2;
		i = mk_str(d, K_OP, op->text, strlen(op->text));
	} else {
		return fail(d);
	}
	while (!d->bad && peek(d, 0) == 'B') { /* ABI tags */
		int tagged = i, held = d->last_name, tag;

		d->p++;
		tag = source_name(d);
		d->last_name = held;
		if (tag < 0)
			return -1;
		i = mk_str(d, K_ABI, d->n[tag].s, d->n[tag].len);
		if (i >= 0)
			d->n[i].a = tagged;
	}
	return i;
}

/* S_, S<seq>_, St, Sa, Sb, Ss, Si, So, Sd */
static int substitution(struct dm *d)
{
	static const char *const std[] = { "a", "std::allocator", "b", "std::basic_string", "s",
					   "std::string", "i", "std::istream", "o", "std::ostream",
					   "d", "std::iostream", "t", "std", NULL };
	int c = peek(d, 1);
	long seq = 0;

	d->p++;
	if (c == '_') {
		d->p++;
	} else if (is_digit(c) || is_upper(c)) {
		while (is_digit(peek(d, 0)) || is_upper(peek(d, 0))) {
			c = *d->p++;
			seq = seq * 36 + (is_digit(c) ? c - '0' : c - 'A' + 10);
			if (seq > 100000)
				return fail(d);
		}
		if (peek(d, 0) != '_')
			return fail(d);
		d->p++;
		seq++;
	} else {
		for (int k = 0; std[k]; k += 2)
			if (c == std[k][0]) {
				int i = mk_str(d, K_NAME, std[k + 1], strlen(std[k + 1]));

				d->p++;
				if (i >= 0)
					d->n[i].std = 1;
				return i;
			}
		return fail(d);
	}
	if (seq >= d->ns)
		return fail(d);
	return d->subs[seq];
}

/* T_ or T<n>_ */
static int template_param(struct dm *d)
{
	long k = 0;
	int i;

	d->p++;
	if (peek(d, 0) != '_' && (k = number(d) + 1) <= 0)
		return fail(d);
	if (peek(d, 0) != '_')
		return fail(d);
	d->p++;
	i = mk(d, K_TPARAM, -1, -1);
	if (i >= 0)
		d->n[i].num = (unsigned)k;
	return i;
}

/* N [CV] [ref] <prefix> E, as GNU's d_prefix adds its candidates: each
 * prefix that is not the whole name. */
static int nested_name(struct dm *d, int *cv)
{
	int ret = -1;

	d->p++;
	for (int k = 0; k < 3; k++)
		if (peek(d, 0) == "rVK"[k]) {
			*cv |= 4 >> k; /* r 4, V 2, K 1 */
			d->p++;
		}
	if (peek(d, 0) == 'R' || peek(d, 0) == 'O')
		return fail(d);
	while (!d->bad) {
		int c = peek(d, 0), dc, kind = K_QUAL;

		if (c == 'E') {
			d->p++;
			return ret < 0 ? fail(d) : ret;
		}
		if (c == 'M') {
			d->p++;
			continue;
		}
		if (c == 'S') {
			dc = substitution(d);
		} else if (c == 'I') {
			if (ret < 0)
				return fail(d);
			dc = template_args(d);
			kind = K_TMPL;
		} else if (c == 'T') {
			dc = template_param(d);
		} else if (is_digit(c) || is_lower(c) || c == 'C' || c == 'U' || c == 'L' ||
			   (c == 'D' && is_digit(peek(d, 1)))) {
			dc = unqualified_name(d);
		} else {
			return fail(d);
		}
		ret = ret < 0 ? dc : mk(d, kind, ret, dc);
		if (c != 'S' && peek(d, 0) != 'E')
			add_sub(d, ret);
	}
	return -1;
}

/* Z <encoding> E <entity> [discriminator] */
static int local_name(struct dm *d, int *cv)
{
	int enc, ent;

	d->p++;
	enc = encoding(d);
	if (d->bad || peek(d, 0) != 'E')
		return fail(d);
	d->p++;
	if (peek(d, 0) == 's') {
		d->p++;
		ent = mk_str(d, K_NAME, "string literal", 14);
	} else if (peek(d, 0) == 'd') {
		return fail(d); /* a default argument's scope */
	} else {
		ent = name(d, cv);
	}
	discriminator(d);
	return mk(d, K_LOCAL, enc, ent);
}

static int name(struct dm *d, int *cv)
{
	int dc, sub = 0;

	switch (peek(d, 0)) {
	case 'N':
		return nested_name(d, cv);
	case 'Z':
		return local_name(d, cv);
	case 'S':
		if (peek(d, 1) == 't') {
			d->p += 2;
			int s = mk_str(d, K_NAME, "std", 3);

			dc = mk(d, K_QUAL, s, unqualified_name(d));
		} else {
			dc = substitution(d);
			sub = 1;
		}
		break;
	default:
		dc = unqualified_name(d);
		break;
	}
	if (!d->bad && peek(d, 0) == 'I') {
		if (!sub)
			add_sub(d, dc); /* an unscoped template name */
		dc = mk(d, K_TMPL, dc, template_args(d));
	}
	return dc;
}

/* L <type> <value> E, or L _Z <encoding> E */
static int expr_primary(struct dm *d)
{
	int t, i, style = LIT_CAST;
	const char *v;

	d->p++;
	if (peek(d, 0) == '_' && peek(d, 1) == 'Z') {
		d->p += 2;
		i = encoding(d);
	} else {
		t = type(d);
		if (d->bad)
			return -1;
		if (d->n[t].kind == K_BUILTIN) {
			static const char codes[] = "ijlmxyb";

			const char *k = strchr(codes, d->n[t].code);

			if (strchr("fdeg", d->n[t].code) || d->n[t].code == 'n' || d->n[t].code == 'o')
				return fail(d); /* floating point, 128-bit: not read */
			if (k && d->n[t].code)
				style = (int)(k - codes);
		}
		v = d->p;
		if (peek(d, 0) == 'n')
			d->p++;
		if (!is_digit(peek(d, 0)))
			return fail(d);
		while (is_digit(peek(d, 0)))
			d->p++;
		i = mk_str(d, K_LIT, v, (size_t)(d->p - v));
		if (i >= 0) {
			d->n[i].code = (unsigned char)style;
			d->n[i].a = t;
		}
	}
	if (peek(d, 0) != 'E')
		return fail(d);
	d->p++;
	return i;
}

static int expression(struct dm *d)
{
	int c = peek(d, 0), i;
	const struct op *op;

	if (++d->depth > MAX_DEPTH)
		return fail(d);
	if (c == 'L') {
		i = expr_primary(d);
	} else if (c == 'T') {
		i = template_param(d);
	} else if (is_digit(c)) {
		i = source_name(d);
		if (!d->bad && peek(d, 0) == 'I')
			i = mk(d, K_TMPL, i, template_args(d));
	} else if ((op = find_op(d)) && op->arity) {
		d->p += 2;
		i = mk_str(d, op->arity == 1 ? K_UNARY : K_BINARY, op->text, strlen(op->text));
		int x = expression(d), y = op->arity == 2 ? expression(d) : -1;

		if (i >= 0) {
			d->n[i].a = x;
			d->n[i].b = y;
		}
	} else {
		i = fail(d);
	}
	d->depth--;
	return i;
}

static int arg_list(struct dm *d, int pack);

static int template_arg(struct dm *d)
{
	int c = peek(d, 0), i;

	if (c == 'X') {
		d->p++;
		i = expression(d);
		if (peek(d, 0) != 'E')
			return fail(d);
		d->p++;
		return i;
	}
	if (c == 'L')
		return expr_primary(d);
	if (c == 'J')
		return arg_list(d, 1);
	return type(d);
}

/* Template arguments up to their 'E' (the opening letter at d->p), as one
 * list: `pack` for an argument pack (J...E) */
static int arg_list(struct dm *d, int pack)
{
	int items[MAX_LIST], n = 0;

	d->p++;
	while (!d->bad && peek(d, 0) != 'E') {
		if (n == MAX_LIST || !peek(d, 0))
			return fail(d);
		items[n++] = template_arg(d);
	}
	d->p++;
	return mk_list(d, items, n, pack);
}

static int template_args(struct dm *d)
{
	int held = d->last_name, list;

	if (++d->depth > MAX_DEPTH)
		return fail(d);
	list = arg_list(d, 0);
	d->last_name = held;
	d->depth--;
	return list;
}

static int builtin(struct dm *d, int c)
{
	static const char *const words[26] = {
		"signed char", "bool", "char", "double", "long double", "float", "__float128",
		"unsigned char", "int", "unsigned int", NULL, "long", "unsigned long", "__int128",
		"unsigned __int128", NULL, NULL, NULL, "short", "unsigned short", NULL, "void",
		"wchar_t", "long long", "unsigned long long", "...",
	};
	const char *w = is_lower(c) ? words[c - 'a'] : NULL;
	int i;

	if (!w)
		return fail(d);
	d->p++;
	i = mk_str(d, K_BUILTIN, w, strlen(w));
	if (i >= 0)
		d->n[i].code = (unsigned char)c;
	return i;
}

/* D-types: the builtins among them, and pack expansions */
static int dtype(struct dm *d)
{
	static const char *const dw[] = { "n", "decltype(nullptr)", "h", "half", "i", "char32_t",
					  "s", "char16_t", "u", "char8_t", "a", "auto", "c",
					  "decltype(auto)", NULL };
	int c = peek(d, 1), i;

	if (c == 'p') {
		d->p += 2;
		i = mk(d, K_EXPANSION, type(d), -1);
		add_sub(d, i);
		return i;
	}
	for (int k = 0; dw[k]; k += 2)
		if (c == dw[k][0]) {
			d->p += 2;
			return mk_str(d, K_BUILTIN, dw[k + 1], strlen(dw[k + 1]));
		}
	return fail(d); /* decltype, _FloatN, vector types */
}

static int type(struct dm *d)
{
	int c = peek(d, 0), i = -1;

	if (++d->depth > MAX_DEPTH)
		return fail(d);
	if (c == 'r' || c == 'V' || c == 'K') {
		int cv = 0;

		for (int k = 0; k < 3; k++)
			if (peek(d, 0) == "rVK"[k]) {
				cv |= 4 >> k;
				d->p++;
			}
		i = mk(d, K_CV, type(d), -1);
		if (i >= 0)
			d->n[i].code = (unsigned char)cv;
		add_sub(d, i);
	} else if (c == 'P' || c == 'R' || c == 'O') {
		d->p++;
		i = mk(d, c == 'P' ? K_PTR : c == 'R' ? K_REF : K_RREF, type(d), -1);
		add_sub(d, i);
	} else if (c == 'T') {
		i = template_param(d);
		if (!d->bad && peek(d, 0) == 'I') {
			add_sub(d, i);
			i = mk(d, K_TMPL, i, template_args(d));
		}
		add_sub(d, i);
	} else if (c == 'S' && (is_digit(peek(d, 1)) || peek(d, 1) == '_' || is_upper(peek(d, 1)))) {
		i = substitution(d);
		if (!d->bad && peek(d, 0) == 'I') {
			i = mk(d, K_TMPL, i, template_args(d));
			add_sub(d, i);
		}
	} else if (c == 'S' || c == 'N' || c == 'Z' || is_digit(c)) {
		int cv = 0;

		i = name(d, &cv);
		if (cv)
			return fail(d);
		if (!d->bad && !d->n[i].std)
			add_sub(d, i);
	} else if (c == 'D') {
		i = dtype(d);
	} else if (is_lower(c) && c != 'u') {
		i = builtin(d, c);
	} else {
		i = fail(d); /* function, array, member pointer, vendor types */
	}
	d->depth--;
	return i;
}

/* A function's name says whether its mangling gives its return type: a
 * template's does (not a constructor's), a local name's entity decides. */
static int has_return_type(const struct dm *d, int i)
{
	const struct node *x = &d->n[i];

	if (x->kind == K_LOCAL)
		return has_return_type(d, x->b);
	if (x->kind != K_TMPL)
		return 0;
	const struct node *nm = &d->n[x->a];

	if (nm->kind == K_QUAL)
		nm = &d->n[nm->b];
	return nm->kind != K_CTOR && nm->kind != K_DTOR;
}

static int encoding(struct dm *d)
{
	int cv = 0, nm, ret = -1, i;

	if (++d->depth > MAX_DEPTH || peek(d, 0) == 'T' || peek(d, 0) == 'G')
		return fail(d); /* special names: vtables, guards */
	nm = name(d, &cv);
	if (d->bad)
		return -1;
	if (d->p >= d->end || peek(d, 0) == 'E' || peek(d, 0) == '.') {
		d->depth--;
		return cv ? fail(d) : nm; /* a variable */
	}
	if (has_return_type(d, nm))
		ret = type(d);
	i = mk(d, K_ENC, nm, ret);
	if (i >= 0) {
		d->n[i].c = params(d);
		d->n[i].code = (unsigned char)cv;
	}
	d->depth--;
	return i;
}

/* ---- printing ------------------------------------------------------------ */

/* The function templates being printed, innermost first: what a template
 * parameter refers to. */
struct scope {
	int tmpl; /* a K_TMPL */
	const struct scope *next;
};

struct out {
	char *o;
	size_t n, cap;
	const struct scope *templates;
	unsigned pack; /* the element of a pack a parameter prints: as c++filt,
			* the last expansion's last one outside expansions */
	int lambda;    /* in a lambda's parameters: T_ is "auto:1" */
	int depth, bad;
	unsigned long steps;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->n + n >= o->cap) {
		o->bad = 1;
		return;
	}
	memcpy(o->o + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void print(struct out *o, const struct dm *d, int i);
static void print_enc(struct out *o, const struct dm *d, const struct node *x, int ret);
static void print_num(struct out *o, unsigned v);

/* GNU's lists: ", " before the rest, taken back when the rest printed
 * nothing (an empty pack) */
static void print_items(struct out *o, const struct dm *d, const struct node *l, unsigned from)
{
	print(o, d, d->pool[l->a + from]);
	if (from + 1 < l->num) {
		put(o, ", ", 2);
		size_t at = o->n;

		print_items(o, d, l, from + 1);
		if (o->n == at && !o->bad)
			o->n -= 2;
	}
}

static void print_list(struct out *o, const struct dm *d, int i)
{
	if (i >= 0 && d->n[i].num)
		print_items(o, d, &d->n[i], 0);
}

/* A function's or lambda's parameters: "()" for (void). */
static void print_params(struct out *o, const struct dm *d, int list)
{
	const struct node *l = &d->n[list];

	put(o, "(", 1);
	if (!(l->num == 1 && d->n[d->pool[l->a]].kind == K_BUILTIN && d->n[d->pool[l->a]].code == 'v'))
		print_list(o, d, list);
	put(o, ")", 1);
}

/* An operand: in parentheses unless a name. */
static void print_sub(struct out *o, const struct dm *d, int i)
{
	int plain = d->n[i].kind == K_NAME || d->n[i].kind == K_QUAL;

	if (!plain)
		put(o, "(", 1);
	print(o, d, i);
	if (!plain)
		put(o, ")", 1);
}

/* The argument template parameter x stands for where it is printed, or -1. */
static int lookup(struct out *o, const struct dm *d, const struct node *x)
{
	const struct node *args;

	if (!o->templates) {
		o->bad = 1;
		return -1;
	}
	args = &d->n[d->n[o->templates->tmpl].b];
	if (x->num >= args->num) {
		o->bad = 1;
		return -1;
	}
	return d->pool[args->a + x->num];
}

/* The pack a pack expansion's pattern refers to, or -1. */
static int find_pack(struct out *o, const struct dm *d, int i, int depth)
{
	const struct node *x;
	int p;

	if (i < 0 || depth > MAX_DEPTH || o->bad || ++o->steps > MAX_STEPS) {
		o->bad |= i >= 0;
		return -1;
	}
	x = &d->n[i];
	switch (x->kind) {
	case K_TPARAM:
		p = lookup(o, d, x);
		return p >= 0 && d->n[p].kind == K_LIST && d->n[p].code ? p : -1;
	case K_LIST:
		for (unsigned k = 0; k < x->num; k++)
			if ((p = find_pack(o, d, d->pool[x->a + k], depth + 1)) >= 0)
				return p;
		return -1;
	case K_EXPANSION: case K_NAME: case K_BUILTIN: case K_ANON: case K_OP: case K_LAMBDA:
	case K_UNNAMED: case K_ABI: case K_CTOR: case K_DTOR:
		return -1;
	case K_ENC:
		if ((p = find_pack(o, d, x->a, depth + 1)) >= 0 || (p = find_pack(o, d, x->b, depth + 1)) >= 0)
			return p;
		return find_pack(o, d, x->c, depth + 1);
	default:
		if ((p = find_pack(o, d, x->a, depth + 1)) >= 0)
			return p;
		return find_pack(o, d, x->b, depth + 1);
	}
}

static void print_expansion(struct out *o, const struct dm *d, const struct node *x)
{
	int pack = find_pack(o, d, x->a, 0);

	if (pack < 0) { /* not a pack where it is printed: "(int)..." */
		put(o, "(", 1);
		print(o, d, x->a);
		put(o, ")...", 4);
		return;
	}
	for (unsigned k = 0; k < d->n[pack].num; k++) {
		o->pack = k;
		print(o, d, x->a);
		if (k + 1 < d->n[pack].num)
			put(o, ", ", 2);
	}
}

/* A template parameter: the argument it stands for, printed where that
 * argument was written (one template out). */
static void print_tparam(struct out *o, const struct dm *d, const struct node *x)
{
	int a;

	if (o->lambda) {
		puts_(o, "auto:");
		print_num(o, x->num + 1);
		return;
	}
	if ((a = lookup(o, d, x)) < 0)
		return;
	if (d->n[a].kind == K_LIST && d->n[a].code) {
		if (o->pack >= d->n[a].num) {
			o->bad = 1;
			return;
		}
		a = d->pool[d->n[a].a + o->pack];
	}
	const struct scope *held = o->templates;

	o->templates = held->next;
	print(o, d, a);
	o->templates = held;
}

static void print_lit(struct out *o, const struct dm *d, const struct node *x)
{
	static const char *const suffix[] = { "", "u", "l", "ul", "ll", "ull" };
	const char *v = x->s;
	size_t n = x->len;

	if (x->code == LIT_BOOL && n == 1 && (*v == '0' || *v == '1')) {
		puts_(o, *v == '1' ? "true" : "false");
		return;
	}
	if (x->code == LIT_BOOL || x->code == LIT_CAST) {
		put(o, "(", 1);
		print(o, d, x->a);
		put(o, ")", 1);
	}
	if (n && *v == 'n') {
		put(o, "-", 1);
		v++;
		n--;
	}
	put(o, v, n);
	if (x->code < LIT_BOOL)
		puts_(o, suffix[x->code]);
}

static void print_num(struct out *o, unsigned v)
{
	char b[16];
	int k = 0;

	do
		b[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < 15);
	while (k)
		put(o, &b[--k], 1);
}

/* A function: while it prints, its template parameters are its own (or,
 * local to another function, those of the entity if it is a template). */
static void print_enc(struct out *o, const struct dm *d, const struct node *x, int ret)
{
	int t = x->a;
	struct scope sc = { -1, o->templates };

	if (d->n[t].kind == K_LOCAL)
		t = d->n[t].b;
	if (d->n[t].kind == K_TMPL) {
		sc.tmpl = t;
		o->templates = &sc;
	}
	if (ret && x->b >= 0) {
		print(o, d, x->b);
		put(o, " ", 1);
	}
	print(o, d, x->a);
	print_params(o, d, x->c);
	puts_(o, x->code & 1 ? " const" : "");
	puts_(o, x->code & 2 ? " volatile" : "");
	puts_(o, x->code & 4 ? " restrict" : "");
	o->templates = sc.next;
}

static void print(struct out *o, const struct dm *d, int i)
{
	const struct node *x;

	if (i < 0 || o->bad || ++o->depth > MAX_DEPTH || ++o->steps > MAX_STEPS) {
		o->bad = 1;
		return;
	}
	x = &d->n[i];
	switch (x->kind) {
	case K_NAME:
	case K_BUILTIN:
		put(o, x->s, x->len);
		break;
	case K_ANON:
		puts_(o, "(anonymous namespace)");
		break;
	case K_QUAL:
		print(o, d, x->a);
		put(o, "::", 2);
		print(o, d, x->b);
		break;
	case K_TMPL:
		print(o, d, x->a);
		if (o->n && o->o[o->n - 1] == '<')
			put(o, " ", 1); /* operator< <int> */
		put(o, "<", 1);
		print_list(o, d, x->b);
		if (o->n && o->o[o->n - 1] == '>')
			put(o, " ", 1);
		put(o, ">", 1);
		break;
	case K_CV:
		print(o, d, x->a);
		puts_(o, x->code & 1 ? " const" : "");
		puts_(o, x->code & 2 ? " volatile" : "");
		puts_(o, x->code & 4 ? " restrict" : "");
		break;
	case K_PTR:
	case K_REF:
	case K_RREF:
		print(o, d, x->a);
		puts_(o, x->kind == K_PTR ? "*" : x->kind == K_REF ? "&" : "&&");
		break;
	case K_LIT:
		print_lit(o, d, x);
		break;
	case K_ENC:
		print_enc(o, d, x, 1);
		break;
	case K_LOCAL: /* the function it is local to without its return type */
		if (d->n[x->a].kind == K_ENC)
			print_enc(o, d, &d->n[x->a], 0);
		else
			print(o, d, x->a);
		put(o, "::", 2);
		print(o, d, x->b);
		break;
	case K_LAMBDA:
		puts_(o, "{lambda");
		o->lambda++;
		print_params(o, d, x->a);
		o->lambda--;
		put(o, "#", 1);
		print_num(o, x->num);
		put(o, "}", 1);
		break;
	case K_UNNAMED:
		puts_(o, "{unnamed type#");
		print_num(o, x->num);
		put(o, "}", 1);
		break;
	case K_OP:
		puts_(o, "operator");
		if (is_lower((unsigned char)x->s[0]))
			put(o, " ", 1);
		put(o, x->s, x->len);
		break;
	case K_CTOR:
		print(o, d, x->a);
		break;
	case K_DTOR:
		put(o, "~", 1);
		print(o, d, x->a);
		break;
	case K_ABI:
		print(o, d, x->a);
		puts_(o, "[abi:");
		put(o, x->s, x->len);
		put(o, "]", 1);
		break;
	case K_UNARY:
		put(o, x->s, x->len);
		/* the address of a qualified function: its name, without its
		 * parameters (c++filt's &a::f; an unqualified or templated one
		 * keeps them: &(g())) */
		print_sub(o, d,
			  x->len == 1 && x->s[0] == '&' && x->a >= 0 && d->n[x->a].kind == K_ENC &&
					  d->n[d->n[x->a].a].kind == K_QUAL
				  ? d->n[x->a].a
				  : x->a);
		break;
	case K_BINARY:
		print_sub(o, d, x->a);
		put(o, x->s, x->len);
		print_sub(o, d, x->b);
		break;
	case K_LIST:
		print_list(o, d, i);
		break;
	case K_TPARAM:
		print_tparam(o, d, x);
		break;
	case K_EXPANSION:
		print_expansion(o, d, x);
		break;
	case K_CLONE:
		print(o, d, x->a);
		puts_(o, " [clone ");
		put(o, x->s, x->len);
		put(o, "]", 1);
		break;
	default:
		o->bad = 1;
	}
	o->depth--;
}

/* .part.0, .constprop.1.isra.2: " [clone .part.0]" each */
static int clones(struct dm *d, int i)
{
	while (!d->bad && peek(d, 0) == '.' && (is_lower(peek(d, 1)) || peek(d, 1) == '_')) {
		const char *s = d->p++;

		while (is_lower(peek(d, 0)) || peek(d, 0) == '_')
			d->p++;
		while (peek(d, 0) == '.' && is_digit(peek(d, 1))) {
			d->p++;
			while (is_digit(peek(d, 0)))
				d->p++;
		}
		int c = mk_str(d, K_CLONE, s, (size_t)(d->p - s));

		if (c >= 0)
			d->n[c].a = i;
		i = c;
	}
	return i;
}

size_t gw_demangle(const char *m, char *out, size_t len)
{
	size_t n = m ? strlen(m) : 0;
	struct dm d = { 0 };
	struct out o = { out, 0, len, NULL, 0, 0, 0, 0, 0 };
	int root;

	if (!len)
		return 0;
	out[0] = 0;
	if (n < 3 || m[0] != '_' || m[1] != 'Z' || n > 65536)
		return 0;
	/* every node takes a character of the name, but a few; lists likewise */
	d.cap = d.pcap = d.scap = 2 * (int)n + 16;
	d.n = malloc((size_t)d.cap * sizeof(*d.n));
	d.pool = malloc((size_t)d.pcap * sizeof(*d.pool));
	d.subs = malloc((size_t)d.scap * sizeof(*d.subs));
	d.p = m + 2;
	d.end = m + n;
	d.last_name = -1;
	if (!d.n || !d.pool || !d.subs)
		d.bad = 1;
	root = d.bad ? -1 : encoding(&d);
	root = d.bad ? -1 : clones(&d, root);
	if (!d.bad && d.p == d.end && root >= 0) {
		print(&o, &d, root);
		if (o.bad)
			o.n = 0;
	}
	out[o.n] = 0;
	free(d.n);
	free(d.pool);
	free(d.subs);
	return o.n;
}
