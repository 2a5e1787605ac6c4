/* used PID: the offsets src/pystack/pystack.c uses for the live Python
 * process PID (its tables, or 3.13's _Py_DebugOffsets), named as
 * pyoffsets.c names them, then the stack of each of its threads as
 * "stack TID func file line" lines. For tests/pystack/verify.sh. */
#include "../../src/pystack/pystack.c"

#define U(name) printf("%-28s %ld\n", #name, p->o.name)

int main(int argc, char **argv)
{
	struct py_frame fr[128];
	struct py_proc *p;
	pid_t tids[64];
	char why[512];
	int n = -EAGAIN;

	if (argc != 2)
		return 2;
	if (py_proc_open(&p, (pid_t)atoi(argv[1]), why, sizeof(why))) {
		fprintf(stderr, "py_proc_open: %s\n", why);
		return 1;
	}
	printf("version %s\n", py_proc_version(p));
	U(runtime_interp_head); U(interp_next); U(interp_threads_head); U(tstate_next);
	U(tstate_thread_id);
	if (p->o.tstate_native_thread_id != NONE)
		U(tstate_native_thread_id);
	U(tstate_frame);
	if (p->o.cframe_current_frame != NONE)
		U(cframe_current_frame);
	U(frame_code); U(frame_previous); U(frame_instr);
	if (p->o.frame_owner != NONE)
		U(frame_owner);
	if (p->o.owner_cstack != NONE)
		printf("%-28s %ld\n", "FRAME_OWNED_BY_CSTACK", p->o.owner_cstack);
	U(code_filename); U(code_name);
	if (p->o.code_qualname != NONE)
		U(code_qualname);
	if (p->o.code_adaptive != NONE)
		U(code_adaptive);
	U(code_linetable); U(code_firstlineno); U(bytes_size); U(bytes_sval);
	U(unicode_length); U(unicode_state); U(unicode_ascii_size); U(unicode_compact_size);
	printf("%-28s %d\n%-28s %d\n%-28s %d\n%-28s %d\n", "unicode_kind_bit", 2, "unicode_compact_bit", 5,
	       "unicode_ascii_bit", 6, "object_type", OBJ_TYPE);
	if (p->o.minor == 10)
		printf("pthread_tid_offset           %ld\n", p->pthread_tid);
	for (int t = 0; t < 100 && (n = py_proc_threads(p, tids, 64)) == -EAGAIN; t++)
		;
	for (int i = 0; i < n; i++) {
		int d = -EAGAIN;
		for (int t = 0; t < 100 && d == -EAGAIN; t++)
			d = py_proc_stack(p, tids[i], fr, 128);
		if (d < 0)
			printf("stack %d error %d\n", (int)tids[i], d);
		for (int k = 0; k < d; k++)
			printf("stack %d %s %s %u\n", (int)tids[i], fr[k].func, fr[k].file, fr[k].line);
	}
	py_proc_close(p);
	return 0;
}
