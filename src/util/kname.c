/* Kernel names as people read them (kname.h). The demangling is our own
 * (demangle.c, in every build: it writes what c++filt writes for kernel
 * names), with libiberty's (GNU's, where libiberty-dev was installed at
 * build time) for a name outside its subset; the shortening works on the
 * demangled text and is driven by the tables below. A name neither can
 * demangle goes through rough_demangle: enough of the mangling grammar to
 * name the kernel and its template arguments, stopping at the first thing
 * it does not know. */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "kname.h"

#ifdef GW_HAVE_LIBIBERTY
#include <libiberty/demangle.h>
#endif

/* ---- small text helpers --------------------------------------------------- */

static int is_id(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static size_t put(char *out, size_t len, size_t at, const char *s, size_t n)
{
	if (!len)
		return 0;
	if (at >= len)
		at = len - 1;
	if (n > len - 1 - at)
		n = len - 1 - at;
	memcpy(out + at, s, n);
	out[at + n] = 0;
	return at + n;
}

static int eq(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && !memcmp(s, w, n);
}

static int has_prefix(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);

	return n >= k && !memcmp(s, w, k);
}

static int has_suffix(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);

	return n >= k && !memcmp(s + n - k, w, k);
}

static int in_list(const char *s, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (eq(s, n, *list))
			return 1;
	return 0;
}

static const char ANON[] = "(anonymous namespace)";

static int is_anon(const char *p, const char *end)
{
	return (size_t)(end - p) >= sizeof(ANON) - 1 && !memcmp(p, ANON, sizeof(ANON) - 1);
}

/* p at an opening bracket: the position after its match (all four kinds
 * count, as they nest properly in demangled names), or end. */
static const char *skip_group(const char *p, const char *end)
{
	int depth = 0;

	for (; p < end; p++) {
		if (*p == '<' || *p == '(' || *p == '[' || *p == '{')
			depth++;
		else if ((*p == '>' || *p == ')' || *p == ']' || *p == '}') && --depth <= 0)
			return p + 1;
	}
	return end;
}

/* ---- the tables ----------------------------------------------------------- */

/* Template arguments that wrap the operation rather than name it. */
static const char *const wrappers[] = { "ReduceOp", "func_wrapper_t", "gpu_kernel_impl",
					"gpu_kernel_impl_nocast", "gpu_kernel_with_scalars", NULL };
/* ... and functor families that do (BinaryFunctor<float, float, float, MulFunctor<float>>). */
static const char *const wrapper_prefixes[] = { "Unary", "Binary", "Ternary", "Pointwise", "AUnary",
						"BUnary", NULL };
/* Names that name the operation: prefix or suffix dropped. */
static const char *const op_prefixes[] = { "CUDAFunctorOnSelf_", "CUDAFunctor_", NULL };
static const char *const op_suffixes[] = { "MathFunctor", "Functor", "_functor", "Ops", "Epilogue", NULL };
/* A function whose lambda is the operation: its name without these. */
static const char *const fn_prefixes[] = { "launch_", NULL };
static const char *const fn_suffixes[] = { "CUDAKernelImpl", "_kernel_cuda", "_kernel_impl",
					   "_and_transform", "_kernel", "_impl", "_cuda", NULL };
/* Class templates after a wrapper that are data, not the operation. */
static const char *const not_ops[] = { "array", "Array", "TensorInfo", "OpaqueType", "complex", NULL };
static const char *const not_op_suffixes[] = { "Metadata", "Calculator", "Params", "params", "Storage",
					       "Iterator", "IteratorBase", NULL };
/* Words that are never the operation. */
static const char *const skip_words[] = { "lambda", "operator", "anonymous", "namespace", "const",
					  "volatile", "unsigned", "signed", "long", "short", "int", "char",
					  "float", "double", "bool", "void", "std", "false", "true", NULL };
/* Base names too generic to show alone: the enclosing namespace goes first. */
static const char *const generic_bases[] = { "kernel", "Kernel", "Kernel2", "device_kernel", NULL };
/* Base names of CUTLASS's kernel wrappers: the template argument is the kernel. */
static const char *const cutlass_wrappers[] = { "Kernel", "Kernel2", "device_kernel", NULL };

static int ends_in_any(const char *s, size_t n, const char *const *list)
{
	for (; *list; list++)
		if (has_suffix(s, n, *list))
			return 1;
	return 0;
}

static int is_wrapper(const char *s, size_t n)
{
	if (in_list(s, n, wrappers))
		return 1;
	if (!has_suffix(s, n, "Functor"))
		return 0;
	for (const char *const *w = wrapper_prefixes; *w; w++)
		if (has_prefix(s, n, *w))
			return 1;
	return 0;
}

/* The operation a name gives, by prefix or suffix: 1 and *os, *on set. */
static int op_by_affix(const char *s, size_t n, const char *const *pre, const char *const *suf,
		       const char **os, size_t *on)
{
	for (const char *const *w = pre; *w; w++)
		if (has_prefix(s, n, *w) && n > strlen(*w)) {
			*os = s + strlen(*w);
			*on = n - strlen(*w);
			return 1;
		}
	for (const char *const *w = suf; *w; w++)
		if (has_suffix(s, n, *w) && n > strlen(*w)) {
			*os = s;
			*on = n - strlen(*w);
			return 1;
		}
	return 0;
}

/* The operation named in template arguments [p, end): 1 and *os, *on set. */
static int find_op(const char *p, const char *end, const char **os, size_t *on)
{
	int after_wrapper = 0;
	const char *start = p;

	while (p < end) {
		if (!is_id(*p) || is_digit(*p) || (p > start && is_id(p[-1]))) {
			p++;
			continue;
		}
		const char *s = p;

		while (p < end && is_id(*p))
			p++;
		size_t n = (size_t)(p - s);

		if (in_list(s, n, skip_words))
			continue;
		if (is_wrapper(s, n)) {
			after_wrapper = 1;
			continue;
		}
		if (op_by_affix(s, n, op_prefixes, op_suffixes, os, on))
			return 1;
		/* a function enclosing a lambda: f<T>(args)::{lambda...} */
		const char *q = p;

		if (q < end && *q == '<')
			q = skip_group(q, end);
		if (q < end && *q == '(') {
			q = skip_group(q, end);
			if ((size_t)(end - q) >= 6 && !memcmp(q, " const", 6))
				q += 6;
			if (end - q >= 2 && q[0] == ':' && q[1] == ':') {
				if (!op_by_affix(s, n, fn_prefixes, fn_suffixes, os, on)) {
					*os = s;
					*on = n;
				}
				return 1;
			}
		}
		if (end - p >= 2 && p[0] == ':' && p[1] == ':')
			continue; /* a namespace or class qualifier */
		/* the class template after a wrapper: Sqrt<float>, std::plus<float> */
		if (after_wrapper && p < end && *p == '<' && !in_list(s, n, not_ops) &&
		    !ends_in_any(s, n, not_op_suffixes)) {
			*os = s;
			*on = n;
			return 1;
		}
	}
	return 0;
}

/* The last "::"-separated component of [p, end) at bracket depth 0, with
 * its template arguments; *prev: the one before it (NULL if none). */
static const char *last_component(const char *p, const char *end, const char **prev, const char **prev_end)
{
	const char *last = p;
	int depth = 0;

	*prev = NULL;
	*prev_end = NULL;
	for (const char *c = p; c < end; c++) {
		if (depth == 0 && is_anon(c, end)) {
			c += sizeof(ANON) - 2;
			continue;
		}
		if (*c == '<' || *c == '(' || *c == '[' || *c == '{')
			depth++;
		else if ((*c == '>' || *c == ')' || *c == ']' || *c == '}') && depth)
			depth--;
		else if (depth == 0 && *c == ':' && c + 1 < end && c[1] == ':') {
			if (!is_anon(last, end)) {
				*prev = last;
				*prev_end = c;
			}
			last = c + 2;
			c++;
		}
	}
	return last;
}

/* sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_... ->
 * "sm80_xmma_gemm_f32f32 128x64x8": the family up to the first data type
 * pair, and the tile. 0 when the name is not of that kind. */
static int is_dtype(const char *s, size_t n)
{
	size_t i = 0;

	for (int part = 0; part < 4; part++) {
		size_t k = i;

		while (i < n && (part % 2 ? is_digit(s[i]) : (s[i] >= 'a' && s[i] <= 'z')))
			i++;
		if (i == k)
			return 0;
	}
	return i == n;
}

static size_t xmma_short(const char *s, char *out, size_t len)
{
	const char *p = s, *cut = NULL, *tile;

	if (strncmp(s, "sm", 2) || !is_digit(s[2]) || !strstr(s, "_xmma_"))
		return 0;
	while (*p && !cut) {
		const char *e = strchr(p, '_');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (is_dtype(p, n))
			cut = p + n;
		p += n + (e != NULL);
		if (!e)
			break;
	}
	if (!cut)
		return 0;
	size_t at = put(out, len, 0, s, (size_t)(cut - s));

	if ((tile = strstr(s, "_tilesize")) && is_digit(tile[9])) {
		size_t n = 0;

		tile += 9;
		while (is_digit(tile[n]) || tile[n] == 'x')
			n++;
		at = put(out, len, at, " ", 1);
		at = put(out, len, at, tile, n);
	}
	return at;
}

/* The short form of a demangled (or plain) name. */
static size_t shorten(const char *text, char *out, size_t len)
{
	const char *end = text + strlen(text), *q = text, *params = end;
	int depth = 0;

	if (!strpbrk(text, ":<(")) {
		size_t n = xmma_short(text, out, len);

		return n ? n : put(out, len, 0, text, strlen(text));
	}
	/* drop the return type (before the last space at depth 0) and the arguments */
	for (const char *p = text; p < end; p++) {
		if (depth == 0 && is_anon(p, end)) {
			p += sizeof(ANON) - 2;
			continue;
		}
		if (depth == 0 && *p == '(') {
			params = p;
			break;
		}
		if (*p == '<' || *p == '(' || *p == '[' || *p == '{')
			depth++;
		else if ((*p == '>' || *p == ')' || *p == ']' || *p == '}') && depth)
			depth--;
		else if (depth == 0 && *p == ' ')
			q = p + 1;
	}
	while (params > q && params[-1] == ' ')
		params--;
	const char *prev, *prev_end, *base = last_component(q, params, &prev, &prev_end);
	const char *base_end = base, *args = NULL, *args_end = NULL;

	while (base_end < params && *base_end != '<')
		base_end++;
	if (base_end < params) {
		args = base_end + 1;
		args_end = skip_group(base_end, params) - 1;
		if (args_end < args)
			args_end = args;
	}
	size_t bn = (size_t)(base_end - base), at = 0;

	if (!bn)
		return put(out, len, 0, text, strlen(text));
	/* CUTLASS's wrappers: the kernel is the first template argument */
	if (args && in_list(base, bn, cutlass_wrappers) && memmem(q, (size_t)(base - q), "cutlass", 7)) {
		const char *ae = args;
		int d = 0;

		while (ae < args_end && (d || (*ae != ',' && *ae != '<'))) {
			d += *ae == '(' ? 1 : *ae == ')' ? -1 : 0;
			ae++;
		}
		const char *ap, *ape, *a = last_component(args, ae, &ap, &ape);

		while (a < ae && !is_id(*a))
			a++;
		if (a < ae) {
			if (!has_prefix(a, (size_t)(ae - a), "cutlass"))
				at = put(out, len, at, "cutlass ", 8);
			return put(out, len, at, a, (size_t)(ae - a));
		}
	}
	if (in_list(base, bn, generic_bases) && prev) {
		at = put(out, len, at, prev, (size_t)(prev_end - prev));
		at = put(out, len, at, "::", 2);
	}
	at = put(out, len, at, base, bn);

	const char *os;
	size_t on;

	if (args && find_op(args, args_end, &os, &on) && !(on == bn && !memcmp(os, base, bn))) {
		at = put(out, len, at, " (", 2);
		at = put(out, len, at, os, on);
		at = put(out, len, at, ")", 1);
	}
	return at;
}

/* ---- rough demangling: names and template arguments only ----------------- */

struct rough {
	const char *p, *end;
	char *o;
	size_t n, cap;
	int bad, depth;
};

static void r_put(struct rough *r, const char *s, size_t k)
{
	r->n = put(r->o, r->cap, r->n, s, k);
}

static void r_source_name(struct rough *r)
{
	size_t k = 0;

	while (r->p < r->end && is_digit(*r->p)) {
		k = k * 10 + (size_t)(*r->p++ - '0');
		if (k > 4096)
			break;
	}
	if (!k || k > (size_t)(r->end - r->p)) {
		r->bad = 1;
		return;
	}
	r_put(r, r->p, k);
	r->p += k;
}

static void r_type(struct rough *r);

/* I...E (or a pack J...E, written without brackets) */
static void r_args(struct rough *r, int brackets)
{
	int first = 1;

	r->p++;
	if (brackets)
		r_put(r, "<", 1);
	while (!r->bad && r->p < r->end && *r->p != 'E') {
		if (!first)
			r_put(r, ", ", 2);
		first = 0;
		r_type(r);
	}
	if (r->p < r->end && *r->p == 'E')
		r->p++;
	else
		r->bad = 1;
	if (brackets)
		r_put(r, ">", 1);
}

/* S_, S0_, St, Sa...: what a substitution stands for is not tracked */
static void r_subst(struct rough *r)
{
	r->p++;
	if (r->p < r->end && *r->p == 't') {
		r->p++;
		r_put(r, "std::", 5);
		if (r->p < r->end && is_digit(*r->p))
			r_source_name(r);
		return;
	}
	if (r->p < r->end && strchr("absiod", *r->p)) {
		r->p++;
		r_put(r, "std::?", 6);
		return;
	}
	while (r->p < r->end && (is_digit(*r->p) || (*r->p >= 'A' && *r->p <= 'Z')))
		r->p++;
	if (r->p < r->end && *r->p == '_')
		r->p++;
	else
		r->bad = 1;
	r_put(r, "?", 1);
}

static const char *const builtin[26] = {
	['a' - 'a'] = "signed char", ['b' - 'a'] = "bool", ['c' - 'a'] = "char", ['d' - 'a'] = "double",
	['e' - 'a'] = "long double", ['f' - 'a'] = "float", ['g' - 'a'] = "__float128",
	['h' - 'a'] = "unsigned char", ['i' - 'a'] = "int", ['j' - 'a'] = "unsigned int",
	['l' - 'a'] = "long", ['m' - 'a'] = "unsigned long", ['n' - 'a'] = "__int128",
	['o' - 'a'] = "unsigned __int128", ['s' - 'a'] = "short", ['t' - 'a'] = "unsigned short",
	['v' - 'a'] = "void", ['w' - 'a'] = "wchar_t", ['x' - 'a'] = "long long",
	['y' - 'a'] = "unsigned long long", ['z' - 'a'] = "...",
};

static void r_type(struct rough *r)
{
	if (++r->depth > 64) {
		r->bad = 1;
		return;
	}
	while (r->p < r->end && strchr("rVKPRO", *r->p))
		r->p++;
	if (r->p >= r->end) {
		r->bad = 1;
	} else if (*r->p == 'N') {
		int first = 1;

		r->p++;
		while (r->p < r->end && strchr("rVKRO", *r->p))
			r->p++;
		while (!r->bad && r->p < r->end && *r->p != 'E') {
			if (*r->p == 'I') {
				r_args(r, 1);
				continue;
			}
			if (!first)
				r_put(r, "::", 2);
			first = 0;
			if (*r->p == 'L')
				r->p++;
			if (r->p < r->end && is_digit(*r->p))
				r_source_name(r);
			else if (r->p < r->end && *r->p == 'S')
				r_subst(r);
			else
				r->bad = 1; /* constructors, local and unnamed types */
		}
		if (r->p < r->end && *r->p == 'E')
			r->p++;
		else
			r->bad = 1;
	} else if (is_digit(*r->p) || *r->p == 'S' || *r->p == 'T') {
		if (*r->p == 'S') {
			r_subst(r);
		} else if (*r->p == 'T') {
			r->p++;
			while (r->p < r->end && *r->p != '_')
				r->p++;
			r->p += r->p < r->end;
			r_put(r, "T", 1);
		} else {
			r_source_name(r);
		}
		if (!r->bad && r->p < r->end && *r->p == 'I')
			r_args(r, 1);
	} else if (*r->p == 'L') {
		/* a literal: its digits ("Li256E" -> 256) */
		r->p++;
		if (r->p < r->end && *r->p == '_')
			r->bad = 1;
		while (!r->bad && r->p < r->end && *r->p != 'E') {
			if (is_digit(*r->p) || *r->p == 'n')
				r_put(r, *r->p == 'n' ? "-" : r->p, 1);
			r->p++;
		}
		r->p += r->p < r->end;
	} else if (*r->p == 'J') {
		r_args(r, 0);
	} else if (*r->p == 'D' && r->p + 1 < r->end) {
		r->p += 2;
		if (r->p[-1] == 'p')
			r_type(r);
		else
			r_put(r, "?", 1);
	} else if (*r->p >= 'a' && *r->p <= 'z' && builtin[*r->p - 'a']) {
		r_put(r, builtin[*r->p - 'a'], strlen(builtin[*r->p - 'a']));
		r->p++;
	} else {
		r->bad = 1;
	}
	r->depth--;
}

/* The name part of a mangled function name as C++-like text; 0 when not
 * even the kernel's whole name could be read. */
static size_t rough_demangle(const char *m, char *out, size_t len)
{
	struct rough r = { m + 2, m + strlen(m), out, 0, len, 0, 0 };

	if (len)
		out[0] = 0;
	if (r.p < r.end && *r.p == 'L')
		r.p++;
	r_type(&r);
	/* a prefix is enough when it holds the whole name: its template
	 * arguments began ("_ZN2at" alone is not read as "at") */
	return r.n && (!r.bad || strchr(out, '<')) ? r.n : 0;
}

/* ---- the interface -------------------------------------------------------- */

int kname_demangler(void)
{
#ifdef GW_HAVE_LIBIBERTY
	return 2;
#else
	return 1;
#endif
}

static int is_mangled(const char *name)
{
	return name[0] == '_' && name[1] == 'Z';
}

/* The full demangling (malloc'd), or NULL: ours, else libiberty's. */
static char *demangle_alloc(const char *name)
{
	size_t n = strlen(name), cap = 32 * n + 4096; /* CUTLASS's 1.7k names: 10k */
	char *d;

	if (!is_mangled(name))
		return NULL;
	if ((d = malloc(cap)) && gw_demangle(name, d, cap))
		return d;
	free(d);
#ifdef GW_HAVE_LIBIBERTY
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
#else
	return NULL;
#endif
}

size_t kname_demangle(const char *name, char *out, size_t len)
{
	char *d;
	size_t n;

	if (!name)
		name = "";
	d = demangle_alloc(name);
	n = put(out, len, 0, d ? d : name, strlen(d ? d : name));
	free(d);
	return n;
}

size_t kname_short(const char *name, char *out, size_t len)
{
	char *d, *rough;
	size_t n;

	if (!name)
		name = "";
	if (!is_mangled(name))
		return shorten(name, out, len);
	if ((d = demangle_alloc(name))) {
		n = shorten(d, out, len);
		free(d);
		return n;
	}
	size_t cap = strlen(name) * 2 + 64;

	if ((rough = malloc(cap)) && rough_demangle(name, rough, cap))
		n = shorten(rough, out, len);
	else
		n = put(out, len, 0, name, strlen(name));
	free(rough);
	return n;
}

struct kname_ent {
	uint64_t key;
	int used;
	char *s[2];
};

struct kname_cache {
	struct kname_ent *v;
	size_t cap, n;
	int failed; /* out of memory: a name was given back as given */
};

int kname_cache_failed(const struct kname_cache *c)
{
	return c && c->failed;
}

struct kname_cache *kname_cache_new(void)
{
	return calloc(1, sizeof(struct kname_cache));
}

static size_t slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static int cache_grow(struct kname_cache *c)
{
	size_t cap = c->cap ? c->cap * 2 : 64;
	struct kname_ent *v = calloc(cap, sizeof(*v));

	if (!v)
		return -1;
	for (size_t i = 0; i < c->cap; i++) {
		if (!c->v[i].used)
			continue;
		size_t j = slot(c->v[i].key, cap);

		while (v[j].used)
			j = (j + 1) & (cap - 1);
		v[j] = c->v[i];
	}
	free(c->v);
	c->v = v;
	c->cap = cap;
	return 0;
}

const char *kname_cached(struct kname_cache *c, uint64_t key, const char *name, int form)
{
	struct kname_ent *e;
	size_t i;

	if (!name)
		return "";
	if (!c)
		return name;
	if ((c->n + 1) * 2 > c->cap && cache_grow(c) < 0) {
		c->failed = 1;
		return name;
	}
	for (i = slot(key, c->cap); c->v[i].used && c->v[i].key != key; i = (i + 1) & (c->cap - 1))
		;
	e = &c->v[i];
	if (!e->used) {
		e->used = 1;
		e->key = key;
		c->n++;
	}
	form = form == KNAME_FULL;
	if (!e->s[form]) {
		if (form) {
			e->s[1] = demangle_alloc(name);
			if (!e->s[1] && !(e->s[1] = strdup(name)))
				c->failed = 1;
		} else {
			char buf[KNAME_SHORT_MAX];

			kname_short(name, buf, sizeof(buf));
			if (!(e->s[0] = strdup(buf)))
				c->failed = 1;
		}
	}
	return e->s[form] ? e->s[form] : name;
}

void kname_cache_drop(struct kname_cache *c, uint64_t key)
{
	if (!c || !c->cap)
		return;
	for (size_t i = slot(key, c->cap); c->v[i].used; i = (i + 1) & (c->cap - 1))
		if (c->v[i].key == key) {
			free(c->v[i].s[0]);
			free(c->v[i].s[1]);
			c->v[i].s[0] = c->v[i].s[1] = NULL;
			return;
		}
}

void kname_cache_free(struct kname_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++) {
		free(c->v[i].s[0]);
		free(c->v[i].s[1]);
	}
	free(c->v);
	free(c);
}
