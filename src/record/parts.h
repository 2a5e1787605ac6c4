/* The parts folder (OUTPUT.parts, src/format/contract.h): made by gpuwhy,
 * held open from its creation and worked on only through that descriptor,
 * so that a job (or another user) that renames it or puts a symbolic link
 * in its place never makes gpuwhy read, write or delete anything else. Only
 * the stream files named as the contract names them, regular, owned by
 * gpuwhy's user and with one link, are merged and deleted; anything else
 * is left where it is and counted. */
#ifndef GPUWHY_PARTS_H
#define GPUWHY_PARTS_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "../format/format.h"

struct parts {
	int parent;              /* O_PATH: the folder that holds OUTPUT; -1 */
	int dfd;                 /* the parts folder gpuwhy made; -1 */
	char name[NAME_MAX + 1]; /* its name in parent */
	char path[PATH_MAX + 8]; /* absolute, as the job is given it */
	dev_t dev;
	ino_t ino;
	int made_stop; /* GW_PARTS_STOP made by gpuwhy: dev/ino below */
	dev_t stop_dev;
	ino_t stop_ino;
};

/* What a merge did; names are the first of each kind (for one message). */
struct parts_merge {
	unsigned streams;  /* traced processes' streams merged */
	unsigned files;    /* stream files merged and deleted */
	unsigned lost;     /* stream files that could not be merged: kept */
	unsigned damaged;  /* merged, with damaged bytes left out */
	unsigned foreign;  /* entries gpuwhy did not make: left as they are */
	char lost_name[NAME_MAX + 1], lost_why[256];
	char damaged_name[NAME_MAX + 1], damaged_why[256];
	char foreign_name[NAME_MAX + 1];
};

/* What a name in the folder is (the contract's patterns): 0 none of ours. */
enum {
	PARTS_NOT_OURS = 0,
	PARTS_SAMPLER_SEGMENT, /* sampler.NNNNNN.gws: gpuwhy's ring segments */
	PARTS_INJECT_SEGMENT,  /* inject-PID.NNNNNN.gws: a process's ring segment */
	PARTS_INJECT_STREAM,   /* inject-PID.gws, or inject-PID.head.gws in ring mode */
};
int parts_name_kind(const char *name);

/* Makes OUTPUT.parts (mode 0700) beside output and holds it: 0 or -errno
 * (-EEXIST: something is in the way, left as it is). */
int parts_create(struct parts *p, const char *output);
/* 1 while OUTPUT.parts is still the folder gpuwhy made (not renamed, not
 * replaced by a link or another folder). */
int parts_still_named(const struct parts *p);
/* Tells the injection to stop tracing (GW_PARTS_STOP): 0 or -errno. */
int parts_stop(struct parts *p);
/* Bytes in the stream files so far. */
uint64_t parts_size(const struct parts *p);
/* Appends the stream files of the folder dfd to w's file (w flushed; its
 * fd and bytes_written are used, w->compress recompresses): gpuwhy's ring
 * segments first, then every process's files in order. Each file merged is
 * deleted; one that cannot be (a full disk) is cut back off the output and
 * kept. Entries gpuwhy did not make are neither read nor deleted. 0 or
 * -errno (the folder could not be read). */
int parts_merge(int dfd, struct gw_writer *w, struct parts_merge *m);
/* Deletes gpuwhy's stop file and, with samplers, gpuwhy's own ring
 * segments (a recording that never started), then removes the folder
 * when it is empty and still under its name: 1 removed, 0 the name is no
 * longer the folder (left), -errno it could not be removed (not empty). */
int parts_remove(struct parts *p, int samplers);
void parts_close(struct parts *p);

#endif
