/* The job's signals. gpuwhy must never die of a signal meant for the job,
 * nor keep one from it: every signal whose default would end gpuwhy is
 * caught and passed on, except
 *   - those of gpuwhy's own faults (SEGV, BUS, FPE, ILL, TRAP, SYS, ABRT):
 *     a crash of gpuwhy must stay one, and the job runs on after it;
 *   - the job-control stops TSTP, TTIN, TTOU: in a terminal's foreground
 *     the kernel stops the whole group, gpuwhy with the job, and the shell
 *     sees the stop and resumes both with SIGCONT; caught, gpuwhy would run
 *     on and the shell would wait for a job it cannot see stopped;
 *   - CHLD, which tells gpuwhy of its own child (the job's children tell
 *     the job).
 * WINCH, URG and CONT (ignored by default) are passed on too, a job may
 * handle them; CONT only to a job in a group of its own (in a terminal's
 * foreground the shell's SIGCONT reaches the job itself).
 *
 * Which signals are meant for the job: one a process sent (kill, sigqueue,
 * tgkill) other than gpuwhy and the job, and one the kernel sends a
 * terminal's process group (INT, QUIT, HUP, WINCH, CONT). What the kernel
 * sends about gpuwhy itself is not: SIGPIPE and SIGXFSZ of its own writes
 * (the kernel sends them as from gpuwhy: si_pid is gpuwhy's), SIGXCPU of its
 * own CPU limit, signals of its own timers. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "jobsig.h"

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t job_own_group;
static sigset_t caller_ign, caller_mask, caught;

static int forwarded(int sig)
{
	switch (sig) {
	case SIGHUP: case SIGINT: case SIGQUIT: case SIGUSR1: case SIGUSR2: case SIGPIPE:
	case SIGALRM: case SIGTERM: case SIGSTKFLT: case SIGCONT: case SIGURG: case SIGXCPU:
	case SIGXFSZ: case SIGVTALRM: case SIGPROF: case SIGWINCH: case SIGIO: case SIGPWR:
		return 1;
	default:
		return sig >= SIGRTMIN && sig <= SIGRTMAX;
	}
}

static int from_terminal(int sig)
{
	return sig == SIGINT || sig == SIGQUIT || sig == SIGHUP || sig == SIGWINCH || sig == SIGCONT;
}

/* With the job in a group of its own, every signal meant for it is passed
 * on (one the kernel sent a terminal's group to the job's group, as it
 * would have reached the job and its children; one a process sent to the
 * job alone); with the job in gpuwhy's group, only one a process sent: the
 * kernel's reached the job already. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
	pid_t job = child_pid;
	int saved = errno;
	int by_process = si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL;

	(void)uc;
	if (by_process ? si->si_pid == getpid() : !from_terminal(sig))
		goto out; /* about gpuwhy itself */
	if (sig != SIGWINCH && sig != SIGCONT && sig != SIGURG)
		got_signal = sig;
	if (job <= 0 || (by_process && si->si_pid == job))
		goto out; /* a signal from the job is not sent back */
	if (job_own_group) {
		if (by_process || kill(-job, sig) < 0)
			kill(job, sig);
	} else if (by_process && sig != SIGCONT) {
		kill(job, sig);
	}
out:
	errno = saved;
}

void jobsig_save_caller(void)
{
	struct sigaction cur;

	sigemptyset(&caller_ign);
	sigemptyset(&caught);
	for (int sig = 1; sig < NSIG; sig++)
		if (sigaction(sig, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_handler == SIG_IGN)
			sigaddset(&caller_ign, sig);
	sigprocmask(SIG_SETMASK, NULL, &caller_mask);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
}

void jobsig_catch(int own_group)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct sigaction cur;

	job_own_group = own_group;
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++) {
		/* An ignored signal stays ignored (nohup, a job started with '&' in a
		 * script): a handler here would reset it to the default in the job
		 * at exec, and a hangup would then kill it. Not caught, it is not
		 * forwarded either. One a library gpuwhy loaded handles is its. */
		if (!forwarded(sig) || sigismember(&caller_ign, sig) || sigaction(sig, NULL, &cur) < 0)
			continue;
		if ((cur.sa_flags & SA_SIGINFO) ||
		    (cur.sa_handler != SIG_DFL && !(cur.sa_handler == SIG_IGN &&
						    (sig == SIGPIPE || sig == SIGXFSZ))))
			continue;
		if (sigaction(sig, &sa, NULL) == 0)
			sigaddset(&caught, sig);
	}
}

void jobsig_block(sigset_t *old)
{
	sigprocmask(SIG_BLOCK, &caught, old);
}

void jobsig_job_started(pid_t pid, const sigset_t *old)
{
	child_pid = pid; /* before the signals are let through */
	sigprocmask(SIG_SETMASK, old, NULL);
}

void jobsig_job_gone(void)
{
	child_pid = 0;
}

/* Each disposition back to the caller's (a caught one to its default before
 * the mask lets it through, so that one sent before exec acts as it would
 * on the job), then the caller's mask. */
void jobsig_child_reset(void)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, sigismember(&caller_ign, sig) ? SIG_IGN : SIG_DFL);
	sigprocmask(SIG_SETMASK, &caller_mask, NULL);
}

void jobsig_restore(void)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&caught, sig))
			signal(sig, sig == SIGPIPE || sig == SIGXFSZ ? SIG_IGN : SIG_DFL);
	sigemptyset(&caught);
	child_pid = 0;
}

int jobsig_last(void)
{
	return got_signal;
}
