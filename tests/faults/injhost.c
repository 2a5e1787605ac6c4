/* A plain host program that loads the injection library the way the CUDA
 * driver does (dlopen, then InitializeInjection) and checks what the library
 * does to its host. No GPU or driver is needed: CUPTI's calls fail and are
 * recorded, the flush thread and the exit path run as in a real job.
 *   injhost LIB signal   prints on which thread a process-directed signal ran
 *   injhost LIB exit     runs 1.5 s, then exit(7)
 *   injhost LIB nvtx     NVTX's first call (before CUDA's), then CUDA's:
 *                        prints "nvtx R" with InitializeInjectionNvtx2's result
 * GPUWHY_PARTS_DIR must name an existing folder. Used by tests/cli/test_cli.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled_on;

static void on_usr1(int sig)
{
	(void)sig;
	handled_on = (sig_atomic_t)syscall(SYS_gettid);
}

int main(int argc, char **argv)
{
	struct timespec nap = { 0, 200 * 1000000L };
	void *h;
	int (*init)(void);

	if (argc != 3)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h || !(init = (int (*)(void))dlsym(h, "InitializeInjection"))) {
		fprintf(stderr, "injhost: %s\n", dlerror());
		return 2;
	}
	if (!strcmp(argv[2], "nvtx")) {
		int (*nvtx)(const void *) = (int (*)(const void *))dlsym(h, "InitializeInjectionNvtx2");

		if (!nvtx) {
			fprintf(stderr, "injhost: %s\n", dlerror());
			return 2;
		}
		printf("nvtx %d\n", nvtx((const void *)0x5eed));
		init();
		return 0;
	}
	init();
	if (!strcmp(argv[2], "signal")) {
		sigset_t usr1;

		/* The main thread blocks SIGUSR1: the kernel hands the signal to any
		 * thread that does not, and the library's threads must not. */
		signal(SIGUSR1, on_usr1);
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		kill(getpid(), SIGUSR1);
		nanosleep(&nap, NULL);
		sigprocmask(SIG_UNBLOCK, &usr1, NULL);
		printf("%s\n", handled_on == getpid() ? "main" : handled_on ? "other" : "none");
		return 0;
	}
	nap.tv_sec = 1;
	nap.tv_nsec = 500 * 1000000L;
	nanosleep(&nap, NULL);
	exit(7);
}
