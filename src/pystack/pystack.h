/* pystack: read the Python stacks of a live CPython 3.10-3.13 process
 * (x86_64 Linux), from outside it or from inside it, through
 * process_vm_readv alone: a bad pointer gives an error, never a crash.
 * libc only; no locks, no blocking, no printing, no Python C-API calls.
 * docs/PYSTACK.md says how stacks are read and what fails how. */
#ifndef GPUWHY_PYSTACK_H
#define GPUWHY_PYSTACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct py_frame {
	const char *file, *func; /* func: co_qualname where it exists (3.11+), else co_name */
	uint32_t line;           /* 0: unknown */
};

struct py_proc; /* opaque */

/* Finds the interpreter in pid: -ENOENT not a Python process (no _PyRuntime),
 * -ENOTSUP unknown version, -EPERM/-EACCES memory not readable, -ENOEXEC a
 * static or stripped interpreter; why[] says it in words. */
int py_proc_open(struct py_proc **pp, pid_t pid, char *why, size_t whylen);
void py_proc_close(struct py_proc *p);
const char *py_proc_version(const struct py_proc *p); /* "3.12.3" */
/* Native thread ids of the interpreter's threads (all interpreters); count or -errno. */
int py_proc_threads(struct py_proc *p, pid_t *tids, int max);
/* The stack of thread tid, innermost frame first; depth (0: no Python frame
 * now: the thread is idle or in native code without a frame) or -errno
 * (-ESRCH: no such Python thread; -EAGAIN: the read raced with the
 * interpreter: drop the sample). Strings stay valid until py_proc_close
 * (cached by code object). */
int py_proc_stack(struct py_proc *p, pid_t tid, struct py_frame *frames, int max);
/* Every thread's stack in one walk of the thread list (py_proc_stack per
 * thread walks it again for each: reads grow with the square of the
 * threads): fn(arg, tid, frames, depth or -EAGAIN) for each thread; frames
 * is the caller's buffer of max. 0, or -errno (-EAGAIN: the list changed
 * under the walk; the threads before it were reported). */
typedef void (*py_stack_fn)(void *arg, pid_t tid, const struct py_frame *frames, int depth);
int py_proc_each_stack(struct py_proc *p, struct py_frame *frames, int max, py_stack_fn fn, void *arg);


/* Added: the line of byte offset addr in a code object's co_linetable
 * (minor 10: the 3.10 format; 11+: the location table), firstlineno for
 * addr < 0, -1 for none. Exposed for tests. */
int py_linetable_line(int minor, const uint8_t *table, size_t len, int firstlineno, int addr);

#endif
