/* Rewrites a recording with uncompressed chunks (fuzz seeds: the fuzzer's
 * mutations then hit record decoding rather than zlib). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "format/format.h"

int main(int argc, char **argv)
{
	char err[256];
	int fd;

	if (argc != 3)
		return 2;
	fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || gw_write_file_header(fd) < 0)
		return 1;
	if (gw_copy_chunks(argv[1], fd, 0, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	close(fd);
	return 0;
}
