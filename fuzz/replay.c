/*
 * replay.c — runs a fuzz target's LLVMFuzzerTestOneInput over files given on the command line, without
 * libFuzzer, so `make check` replays every committed corpus (and every former crash) as a plain test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	int n = 0;
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			fprintf(stderr, "replay: cannot open %s\n", argv[i]);
			return 1;
		}
		uint8_t *buf = NULL;
		size_t len = 0, cap = 0;
		for (;;) {
			if (len == cap) {
				cap = cap ? cap * 2 : 65536;
				uint8_t *p = realloc(buf, cap);
				if (!p) {
					fclose(f);
					free(buf);
					return 1;
				}
				buf = p;
			}
			size_t got = fread(buf + len, 1, cap - len, f);
			if (!got)
				break;
			len += got;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, len);
		free(buf);
		n++;
	}
	printf("replayed %d inputs\n", n);
	return 0;
}
