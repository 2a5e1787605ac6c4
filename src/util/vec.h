/* The one growable array: VEC(T) holds v[0..n) of capacity cap, owned by
 * whoever holds the VEC (free(vec.v); items that own memory are freed by
 * their owner first). A push that fails leaves the array as it was and
 * returns -ENOMEM; ignoring it is a compile-time warning. */
#ifndef GPUWHY_VEC_H
#define GPUWHY_VEC_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#define VEC(T) struct { T *v; size_t n, cap; }

/* Makes room for `need` items of `elem` bytes (doubling): 0, or -ENOMEM. */
int vec_grow_(void **v, size_t *cap, size_t need, size_t elem) __attribute__((warn_unused_result));

static inline __attribute__((warn_unused_result)) int vec_push_(void **v, size_t *n, size_t *cap,
								 const void *item, size_t elem)
{
	if (vec_grow_(v, cap, *n + 1, elem) < 0)
		return -ENOMEM;
	memcpy((char *)*v + *n * elem, item, elem);
	(*n)++;
	return 0;
}

/* Appends item: 0, or -ENOMEM. */
#define VEC_PUSH(vec, item)                                                                  \
	vec_push_((void **)&(vec).v, &(vec).n, &(vec).cap, (__typeof__(*(vec).v)[1]){ item }, \
		  sizeof(*(vec).v))

#endif
