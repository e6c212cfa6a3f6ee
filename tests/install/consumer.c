/* consumer.c: a program built against an installed libtracekit; counts events, names the first. */
#include <stdio.h>
#include <tracekit/tracekit.h>

int main(int argc, char **argv)
{
	tk_reader *r = NULL;
	if (argc < 2 || tk_reader_open_path(&r, argv[1], NULL)) {
		fprintf(stderr, "%s\n", r ? tk_reader_error(r) : "usage: consumer TRACE");
		tk_reader_free(r);
		return 1;
	}
	const tk_event *ev;
	unsigned long n = 0;
	char first[64] = "";
	while (tk_reader_next(r, &ev) == TK_OK)
		if (!n++ && ev->name.ptr)
			snprintf(first, sizeof first, "%s", ev->name.ptr);
	tk_reader_free(r);
	printf("events=%lu first=%s\n", n, first);
	return 0;
}
