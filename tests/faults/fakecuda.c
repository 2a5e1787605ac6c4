/* A stand-in libcuda.so.1 (put its folder on LD_LIBRARY_PATH) for the CLI
 * tests: gpuwhy's driver check passes, so the job is started with the
 * injection's environment, yet nothing can initialize CUDA. Like a real
 * driver library, loading it leaves a descriptor open (here /dev/zero,
 * without close-on-exec) that must not reach the job. */
#include <fcntl.h>

__attribute__((constructor)) static void fake_driver_open(void)
{
	static int fd = -1;

	if (fd < 0)
		fd = open("/dev/zero", O_RDONLY);
}
