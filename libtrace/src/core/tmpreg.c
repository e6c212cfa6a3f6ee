/* tmpreg.c: the temporary files and directories the library holds at this moment (a sink's
 * OUT.tmp-XXXXXX, trace-split's private part directory, the sorter's spill directory), so that
 * tk_cleanup_temporaries() can remove them from a signal handler.
 *
 * A fixed table of slots, each an atomic pointer to a path that begins with 'f' (a file) or 'd'
 * (a directory whose files are removed, then the directory). Taking a slot is one compare-and-
 * swap; giving it back is an exchange, and the string is freed only when no cleanup has begun,
 * so a handler that runs on any thread, at any point, reads only live strings. The cleanup uses
 * async-signal-safe calls alone (open, getdents64, unlinkat, rmdir). */
#define _GNU_SOURCE
#include "tmpreg.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracekit/tracekit.h"

#define SLOTS 1024

static _Atomic(char *) slots[SLOTS];
static atomic_int cleaning; /* cleanups under way (a second signal may interrupt the first) */

const char *tk__tmp_base(const char *dir)
{
	if (!dir || !*dir)
		dir = getenv("TMPDIR");
	return dir && *dir ? dir : "/tmp";
}

int tk__tmp_hold(const char *path, int dir)
{
	size_t n = strlen(path);
	char *p = malloc(n + 2);
	if (!p)
		return 0; /* not cleaned on a signal; everything else works */
	p[0] = dir ? 'd' : 'f';
	memcpy(p + 1, path, n + 1);
	for (int i = 0; i < SLOTS; i++) {
		char *expect = NULL;
		if (!atomic_load(&slots[i]) && atomic_compare_exchange_strong(&slots[i], &expect, p))
			return i + 1;
	}
	free(p);
	return 0;
}

void tk__tmp_release(int hold)
{
	if (hold <= 0 || hold > SLOTS)
		return;
	char *p = atomic_exchange(&slots[hold - 1], NULL);
	if (!atomic_load(&cleaning)) /* a handler may be reading it: then it stays */
		free(p);
}

/* The files of directory d (one level: the library's temporary directories hold files). */
static void empty_dir(const char *d)
{
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096] __attribute__((aligned(8)));
	for (int rounds = 0; rounds < 1 << 16; rounds++) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (n <= 0)
			break;
		int removed = 0;
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			const char *name = buf + off + 19;
			if (!(name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]))))
				removed += unlinkat(fd, name, 0) == 0;
			if (!reclen)
				break;
			off += reclen;
		}
		if (removed) /* entries moved: read the directory from its start again */
			lseek(fd, 0, SEEK_SET);
	}
	close(fd);
}

void tk_cleanup_temporaries(void)
{
	atomic_fetch_add(&cleaning, 1);
	for (int i = 0; i < SLOTS; i++) {
		const char *p = atomic_load(&slots[i]);
		if (!p)
			continue;
		if (p[0] == 'd') {
			empty_dir(p + 1);
			rmdir(p + 1);
		} else {
			unlink(p + 1);
		}
	}
	atomic_fetch_sub(&cleaning, 1);
}
