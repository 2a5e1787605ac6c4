/* A demangler for the Itanium C++ names CUDA kernels have (demangle.c):
 * functions and function templates in namespaces, classes and local scopes,
 * template arguments (types, integer and enum literals, packs, simple
 * expressions), lambdas and unnamed types, substitutions. It writes what
 * GNU's c++filt writes for those names; where a name uses something outside
 * that subset (function or array types, decltype, most expressions) it says
 * so and writes nothing, and the caller falls back. Part of every build, so
 * that kernel names read the same whether or not libiberty was there. */
#ifndef GPUWHY_DEMANGLE_H
#define GPUWHY_DEMANGLE_H

#include <stddef.h>

/* The demangled form of `mangled` (_Z...) into out (len > 0, always
 * terminated): its length, or 0 when this demangler does not read it (out
 * is then ""). No global state; the tree is allocated and freed here. */
size_t gw_demangle(const char *mangled, char *out, size_t len);

#endif
