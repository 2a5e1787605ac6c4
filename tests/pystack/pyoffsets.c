/* pyoffsets: prints, from a Python's own headers, the struct offsets that
 * src/pystack/pystack.c hard-codes for 3.10-3.12 (and the few it assumes for
 * 3.13 beside _Py_DebugOffsets). Built by tests/pystack/verify.sh:
 *   cc -I$(python3-config --includes) -DPy_BUILD_CORE pyoffsets.c
 * Output: one "name value" line per offset, names as in pystack.c's tables. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#endif

#define P(name, v) printf("%-28s %zu\n", name, (size_t)(v))

/* Bit position of the lowest bit a bitfield of the unicode state occupies. */
static unsigned state_bit(void (*set)(PyASCIIObject *))
{
	PyASCIIObject o;
	unsigned v = 0;

	memset(&o, 0, sizeof(o));
	set(&o);
	memcpy(&v, (char *)&o + offsetof(PyASCIIObject, state), sizeof(v));
	return v ? (unsigned)__builtin_ctz(v) : 99;
}
static void set_kind(PyASCIIObject *o) { o->state.kind = 1; }
static void set_compact(PyASCIIObject *o) { o->state.compact = 1; }
static void set_ascii(PyASCIIObject *o) { o->state.ascii = 1; }

int main(void)
{
	printf("version %d.%d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION, PY_MICRO_VERSION);
	P("runtime_interp_head", offsetof(_PyRuntimeState, interpreters.head));
	P("interp_next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030b0000
	P("interp_threads_head", offsetof(PyInterpreterState, threads.head));
#else
	P("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
	P("tstate_next", offsetof(PyThreadState, next));
	P("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030b0000
	P("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX >= 0x030d0000
	P("tstate_frame", offsetof(PyThreadState, current_frame));
#elif PY_VERSION_HEX >= 0x030b0000
	P("tstate_frame", offsetof(PyThreadState, cframe));
	P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
#else
	P("tstate_frame", offsetof(PyThreadState, frame));
#endif
#if PY_VERSION_HEX >= 0x030d0000
	P("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
	P("FRAME_OWNED_BY_CSTACK", FRAME_OWNED_BY_CSTACK);
#elif PY_VERSION_HEX >= 0x030b0000
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_previous", offsetof(_PyInterpreterFrame, previous));
	P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030c0000
	P("FRAME_OWNED_BY_CSTACK", FRAME_OWNED_BY_CSTACK);
#endif
#else
	P("frame_code", offsetof(PyFrameObject, f_code));
	P("frame_previous", offsetof(PyFrameObject, f_back));
	P("frame_instr", offsetof(PyFrameObject, f_lasti));
#endif
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030b0000
	P("code_qualname", offsetof(PyCodeObject, co_qualname));
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	P("bytes_size", offsetof(PyVarObject, ob_size));
	P("bytes_sval", offsetof(PyBytesObject, ob_sval));
	P("unicode_length", offsetof(PyASCIIObject, length));
	P("unicode_state", offsetof(PyASCIIObject, state));
	P("unicode_ascii_size", sizeof(PyASCIIObject));
	P("unicode_compact_size", sizeof(PyCompactUnicodeObject));
	P("unicode_kind_bit", state_bit(set_kind));
	P("unicode_compact_bit", state_bit(set_compact));
	P("unicode_ascii_bit", state_bit(set_ascii));
	P("object_type", offsetof(PyObject, ob_type));
	return 0;
}
