/* libFuzzer target: the recording reader and the whole report on top of it
 * (load, analyze with its second reading of the file, JSON, terminal and trace
 * rendering: fuzz_common.h). Built with -DGW_FUZZING,
 * which skips chunk CRCs so that mutations reach the decoders. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("gwfuzz", 0);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size)
		fuzz_report_fd(fd, size);
	close(fd);
	return 0;
}
