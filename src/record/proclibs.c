/* Framework detection from /proc/PID/maps. A process imports its framework
 * in its first seconds (and may first be a launcher that execs it: a pyenv
 * shim, a shell), so its maps are read when it is first seen, then 0.25,
 * 0.5 and 1 s later and every 2 s after that, until a framework (or, without
 * Python, the CUDA driver: a native program) shows up, at most
 * PROC_LIBS_READS times: a few reads of a file of a few hundred KB per
 * process, never a steady cost. */
#include <string.h>

#include "../format/format.h"
#include "../procfs/procfs.h"
#include "proclibs.h"

#define PROC_LIBS_READS 30  /* 1 minute of looking, then it is what it is */
#define PROC_LIBS_EVERY_S 2

/* Nothing more to learn: a framework is mapped, or the driver is mapped
 * into a process without Python (CUDA C, C++: it will not import one). */
static int classified(unsigned f)
{
	return (f & GW_LIB_FRAMEWORKS) || ((f & GW_LIB_CUDA) && !(f & GW_LIB_PYTHON));
}

void proc_libs_poll(struct recorder *r, struct proc_libs_state *s, pid_t pid, uint64_t tick,
		    unsigned ticks_per_s, uint64_t now)
{
	char pyver[16] = "";
	int f;

	if (s->reads >= PROC_LIBS_READS || classified(s->flags) || (s->next && tick < s->next))
		return;
	uint64_t hz = ticks_per_s ? ticks_per_s : 50;
	uint64_t wait = s->reads < 3 ? (hz << s->reads) / 4 : hz * PROC_LIBS_EVERY_S;

	s->reads++;
	s->next = tick + (wait ? wait : 1);
	f = procfs_read_libs(pid, pyver, sizeof(pyver));
	/* gone, not ours to read, nothing known mapped (yet), or no change: no
	 * record, so that a record always names what the process runs */
	if (f <= 0 || ((unsigned)f == s->flags && !strcmp(pyver, s->pyver)))
		return;
	s->flags = (unsigned)f;
	memcpy(s->pyver, pyver, sizeof(s->pyver));
	uint64_t v[GW_PLIBS_NF] = { now, (uint64_t)pid, (uint64_t)f,
				    pyver[0] ? rec_intern(r, pyver) : 0 };

	rec_emit(r, GW_REC_PROC_LIBS, v, GW_PLIBS_NF);
}
