/* Kernel names as people read them. Recordings keep the names CUPTI gives
 * (mangled C++ such as _ZN2at6native29vectorized_elementwise_kernel...);
 * these turn them into the full C++ name (kname_demangle) and into the short
 * form a report shows (kname_short): the kernel's base name and, when a
 * template argument names the operation, that operation in parentheses:
 *   vectorized_elementwise_kernel (add)
 *   multi_tensor_apply_kernel (FusedAdam)
 *   sm90_xmma_gemm_bf16bf16 128x128x64
 * Both are pure functions of the name; the analysis and the renderers call
 * them through kname_cached, once per interned name. */
#ifndef GPUWHY_KNAME_H
#define GPUWHY_KNAME_H

#include <stddef.h>
#include <stdint.h>

/* Longest short name kname_cached keeps (the rest is cut). */
#define KNAME_SHORT_MAX 160

/* The demangled name (return type, namespaces, arguments), or the name as
 * recorded when it is not mangled C++ or this build has no demangler.
 * Writes at most len bytes, always terminated (len > 0); returns the length
 * written. */
size_t kname_demangle(const char *name, char *out, size_t len);
/* The short form described above; plain C names, Triton and cuBLAS-style
 * names come back unchanged. Same conventions as kname_demangle. */
size_t kname_short(const char *name, char *out, size_t len);
/* 1: this build demangles with its own demangler (src/util/demangle.c);
 * 2: and with libiberty (found at build time) for the names outside it. */
int kname_demangler(void);

/* A cache of both forms by a caller's key (an interned name's id): each name
 * is demangled once, when first shown. With no cache (NULL) or no memory the
 * name comes back as given. The strings live until kname_cache_free. */
struct kname_cache;
enum { KNAME_SHORT, KNAME_FULL };
struct kname_cache *kname_cache_new(void);
const char *kname_cached(struct kname_cache *c, uint64_t key, const char *name, int form);
/* Forgets what key stood for (its name was redefined). */
void kname_cache_drop(struct kname_cache *c, uint64_t key);
void kname_cache_free(struct kname_cache *c);
/* 1 if running out of memory made kname_cached give a name back as given. */
int kname_cache_failed(const struct kname_cache *c);

#endif
