/* test_collector_load.c: libtkcollect loads and InitializeInjection returns, GPU and driver or not. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* argv[1]: the library. Exit 0 when the host program runs on after
 * initialisation, whatever the machine has; a hang is caught by alarm. */
int main(int argc, char **argv)
{
	char dir[] = "/tmp/tkc_load_XXXXXX";
	if (argc < 2 || !mkdtemp(dir))
		return 2;
	setenv("TK_OUTPUT_DIR", dir, 1);
	alarm(60);
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init || dlsym(h, "tkc_start") || dlsym(h, "tk_reader_open_path")) {
		fprintf(stderr, "exports: InitializeInjection only\n");
		return 1;
	}
	if (init() != 1 || init() != 1) {
		fprintf(stderr, "InitializeInjection did not return 1\n");
		return 1;
	}
	/* with no driver nothing is traced and no file is left; on a GPU
	 * machine the file exists and is finished at exit */
	printf("InitializeInjection returned; %d file(s) in %s\n", count_files(dir), dir);
	return 0;
}
