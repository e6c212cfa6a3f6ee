/* fuzz_files.h: without libFuzzer, a harness runs over the files named on its command line (the seed tests). */
#ifndef TK_FUZZ_FILES_H
#define TK_FUZZ_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the harness over argv[1..argc): 0, or 1 (said on stderr) when a
 * file cannot be read, so that a seed test never passes on nothing. After
 * each file, done(path) when not NULL. */
static inline int tk_fuzz_files(int argc, char **argv, void (*done)(const char *path))
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		long n = -1;
		if (f && fseek(f, 0, SEEK_END) == 0)
			n = ftell(f);
		uint8_t *p = n >= 0 ? malloc(n > 0 ? (size_t)n : 1) : NULL;
		if (!f || !p || fseek(f, 0, SEEK_SET) != 0 || fread(p, 1, (size_t)n, f) != (size_t)n) {
			perror(argv[i]);
			free(p);
			if (f)
				fclose(f);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(p, (size_t)n);
		free(p);
		if (done)
			done(argv[i]);
	}
	return 0;
}

#endif
