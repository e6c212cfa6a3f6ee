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

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
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

const char *tk__tmp_from(const char *dir)
{
	const char *env = dir && *dir ? NULL : getenv("TMPDIR");
	return env && *env ? " ($TMPDIR)" : "";
}

int tk__tmp_dir(const char *dir, const char *prefix, char **out, int *hold, char *msg, size_t msg_len)
{
	const char *base = tk__tmp_base(dir);
	size_t n = strlen(base) + strlen(prefix) + 9;
	char *path = malloc(n);
	*out = NULL;
	*hold = 0;
	if (!path) {
		snprintf(msg, msg_len, "out of memory");
		return TK_ERR_NOMEM;
	}
	snprintf(path, n, "%s/%s-XXXXXX", base, prefix);
	if (tk__tmp_create(path, 1, hold) < 0) {
		int e = errno;
		snprintf(msg, msg_len, "cannot create a temporary directory in %s%s: %s", base, tk__tmp_from(dir),
		         strerror(e));
		free(path);
		return TK_ERR_IO;
	}
	*out = path;
	return 0;
}

void tk__tmp_dir_free(char *path, int hold)
{
	if (!path)
		return;
	rmdir(path);
	tk__tmp_release(hold);
	free(path);
}

int tk__tmp_hold(const char *path, int dir)
{
	size_t n = strlen(path);
	char *p = malloc(n + 2);
	if (!p)
		return 0; /* not cleaned on a signal; everything else works */
	p[0] = dir == TK__TMP_MADE ? 'm' : dir ? 'd' : 'f';
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

int tk__tmp_create(char *tmpl, int dir, int *hold)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static atomic_uint seq;
	size_t n = strlen(tmpl);
	*hold = 0;
	if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX") != 0) {
		errno = EINVAL;
		return -1;
	}
	char *x = tmpl + n - 6;
	for (int tries = 0; tries < 1000; tries++) {
		unsigned char r[6];
		if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)getpid() << 20 ^ atomic_fetch_add(&seq, 1);
			for (int i = 0; i < 6; i++, v >>= 8)
				r[i] = (unsigned char)v;
		}
		for (int i = 0; i < 6; i++)
			x[i] = chars[r[i] % (sizeof chars - 1)];
		struct stat st;
		if (lstat(tmpl, &st) == 0)
			continue; /* taken: never held, so never removed on a signal */
		/* held before it exists: a signal from here on finds it */
		int h = tk__tmp_hold(tmpl, dir);
		int fd = dir ? mkdir(tmpl, 0700) : open(tmpl, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			*hold = h;
			return fd;
		}
		int e = errno;
		tk__tmp_release(h);
		if (e != EEXIST) {
			errno = e;
			return -1;
		}
	}
	errno = EEXIST;
	return -1;
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
	int saved = errno;
	atomic_fetch_add(&cleaning, 1);
	for (int i = 0; i < SLOTS; i++) {
		const char *p = atomic_load(&slots[i]);
		if (!p)
			continue;
		if (p[0] == 'd') {
			/* another thread may be adding a file: once the directory is
			 * gone, no file can be */
			for (int k = 0; k < 100; k++) {
				empty_dir(p + 1);
				if (rmdir(p + 1) == 0 || errno != ENOTEMPTY)
					break;
			}
		} else if (p[0] == 'f') {
			unlink(p + 1);
		}
	}
	/* then the directories made for outputs, where empty now: the
	 * innermost first, each round those whose own were removed in the last */
	for (int round = 0, removed = 1; removed && round < 64; round++) {
		removed = 0;
		for (int i = 0; i < SLOTS; i++) {
			const char *p = atomic_load(&slots[i]);
			if (p && p[0] == 'm' && rmdir(p + 1) == 0)
				removed = 1;
		}
	}
	atomic_fetch_sub(&cleaning, 1);
	errno = saved;
}
