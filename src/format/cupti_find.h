/* Where CUPTI is looked for at run time: shared by the recorder (which picks
 * the injection library of the CUPTI major it will find) and the injection
 * library (which loads it). libc only: it is built into the injection
 * library too. The order (README, "Which CUPTI"):
 *   1. GPUWHY_CUPTI, a file: when set, nothing else is tried
 *   2. a libcupti already loaded in the process (the framework's own)
 *   3. the job's Python environments: the folders in GPUWHY_CUPTI_DIRS (set
 *      by gpuwhy record from the job's command), then those of VIRTUAL_ENV,
 *      CONDA_PREFIX, the running program's prefix and ~/.local:
 *      <site-packages>/nvidia/cu13/lib and <site-packages>/nvidia/cuda_cupti/lib
 *   4. CUDA_HOME: extras/CUPTI/lib64, lib64, targets/x86_64-linux/lib
 *   5. /usr/local/cuda*: the same three folders
 *   6. the loader's path: libcupti.so.13, libcupti.so.12, libcupti.so
 * In each folder the names libcupti.so.13, libcupti.so.12 and libcupti.so are
 * tried in that order. */
#ifndef GPUWHY_CUPTI_FIND_H
#define GPUWHY_CUPTI_FIND_H

#include <stddef.h>
#include <stdint.h>

/* Called for each candidate in order: a path to an existing file, or (for
 * source GW_CUPTI_FROM_LOADER) a bare name for dlopen. Returns 1 to stop. */
typedef int (*gw_cupti_try_fn)(const char *path, const char *source, void *ud);

#define GW_CUPTI_FROM_ENV "GPUWHY_CUPTI"
#define GW_CUPTI_FROM_LOADED "already loaded by the job"
#define GW_CUPTI_FROM_SITE "the job's Python packages"
#define GW_CUPTI_FROM_CUDA_HOME "CUDA_HOME"
#define GW_CUPTI_FROM_TOOLKIT "/usr/local/cuda*"
#define GW_CUPTI_FROM_LOADER "the loader's path"

/* Walks the candidates; exe is the job's program (NULL: this process's
 * own, /proc/self/exe). Returns 1 when fn accepted one, 0 when none, and
 * counts the places looked at in *looked (may be NULL). */
int gw_cupti_search(const char *exe, gw_cupti_try_fn fn, void *ud, unsigned *looked);

/* The folders of step 3 that exist for the program exe (as given, and with
 * its links resolved) and for this environment, ':'-separated into buf
 * (empty when none): what gpuwhy record hands the job in GPUWHY_CUPTI_DIRS. */
void gw_cupti_site_dirs(const char *exe, char *buf, size_t len);

/* CUDA major of a CUPTI API version (cuptiGetVersion): 12, 13, ..., or 0
 * for one older than CUDA 12. */
unsigned gw_cupti_api_major(uint32_t api);

/* CUDA major of a CUPTI file from its name or, failing that, from its ELF
 * SONAME (libcupti.so.N); 0 when neither says. */
unsigned gw_cupti_file_major(const char *path);

#endif
