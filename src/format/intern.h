/* String interning: maps a string to a small id (1, 2, ...) within one stream. */
#ifndef GPUWHY_INTERN_H
#define GPUWHY_INTERN_H

#include <stdint.h>

struct gw_intern;

struct gw_intern *gw_intern_new(void);
void gw_intern_free(struct gw_intern *t);
/* Id of s, adding a copy if new (*is_new set). 0 on allocation failure. */
uint64_t gw_intern_get(struct gw_intern *t, const char *s, int *is_new);
/* Forgets every string; ids start again at 1. */
void gw_intern_clear(struct gw_intern *t);

#endif
