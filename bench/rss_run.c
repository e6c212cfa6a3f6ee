/* rss_run.c: run a command and report its wall time, peak RSS, CPU time and exit status on stderr;
 * with --threads-cpu, also the CPU time of its threads by name. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Exit status as a shell reports it: the code, or 128 + signal. */
static int shell_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

static int wait_child(pid_t pid, int *status, struct rusage *ru)
{
	for (;;) {
		pid_t r = wait4(pid, status, 0, ru);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			perror("rss_run: wait4");
			return -1;
		}
	}
}

/* ---- --threads-cpu: the child's threads sampled from /proc ---- */

#define MAX_TIDS 4096

typedef struct tsample {
	int tid;
	char name[32];
	unsigned long long ns; /* time on a processor, the last sample (schedstat, else stat) */
} tsample;

static tsample tids[MAX_TIDS];
static int n_tids;

static int read_small(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = 0;
	return 0;
}

/* One look at every thread of pid: its name and its time so far. A thread
 * that ends between two looks loses what it ran since the last (a look
 * every millisecond or so). */
static void sample_threads(pid_t pid)
{
	char dir[64], path[128], buf[128];
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		int tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		unsigned long long ns;
		snprintf(path, sizeof path, "%s/%d/schedstat", dir, tid);
		if (read_small(path, buf, sizeof buf) == 0) {
			ns = strtoull(buf, NULL, 10);
		} else {
			/* a kernel without schedstat: user and system clock ticks
			 * (fields 14 and 15 of stat, after the name in brackets) */
			char st[1024];
			snprintf(path, sizeof path, "%s/%d/stat", dir, tid);
			const char *q = read_small(path, st, sizeof st) ? NULL : strrchr(st, ')');
			unsigned long long ut, stt;
			if (!q || sscanf(q + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) != 2)
				continue;
			ns = (ut + stt) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
		}
		int i = 0;
		while (i < n_tids && tids[i].tid != tid)
			i++;
		if (i == n_tids) {
			if (n_tids == MAX_TIDS)
				continue;
			n_tids++;
			tids[i].tid = tid;
			tids[i].name[0] = 0;
		}
		/* the name as the thread set it: read again until it has one of its own */
		snprintf(path, sizeof path, "%s/%d/comm", dir, tid);
		if (read_small(path, buf, sizeof buf) == 0) {
			buf[strcspn(buf, "\n")] = 0;
			snprintf(tids[i].name, sizeof tids[i].name, "%.31s", buf);
		}
		tids[i].ns = ns;
	}
	closedir(d);
}

/* `threads_cpu_s NAME=SECONDS[/THREADS] ...`, the threads grouped by name. */
static void print_threads(void)
{
	fprintf(stderr, "threads_cpu_s");
	for (int i = 0; i < n_tids; i++) {
		if (!tids[i].name[0])
			continue;
		unsigned long long ns = 0;
		int k = 0;
		for (int j = i; j < n_tids; j++)
			if (!strcmp(tids[j].name, tids[i].name)) {
				ns += tids[j].ns;
				k++;
				if (j > i)
					tids[j].name[0] = 0;
			}
		fprintf(stderr, " %s=%.3f", tids[i].name, (double)ns / 1e9);
		if (k > 1)
			fprintf(stderr, "/%d", k);
	}
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	int per_thread = argc > 1 && strcmp(argv[1], "--threads-cpu") == 0;
	if (per_thread) {
		argv++;
		argc--;
	}
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(stderr, "usage: rss_run [--threads-cpu] CMD [ARGS...]\n"
		                "Runs CMD and prints `wall_s=<s> max_rss_kib=<KiB> cpu_s=<s> rc=<exit>` to\n"
		                "stderr (cpu_s: user and system time of CMD and its waited-for children).\n"
		                "--threads-cpu: also `threads_cpu_s NAME=SECONDS[/THREADS] ...` on the line\n"
		                "before, the time CMD's threads ran, grouped by their names (tracekit's:\n"
		                "tk-parse, tk-input, tk-read, tk-nest, tk-sort, tk-write; the main thread has\n"
		                "the program's), looked up in /proc about every millisecond.\n");
		return argc < 2 ? 2 : 0;
	}
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0) {
		perror("rss_run: fork");
		return 127;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		fprintf(stderr, "rss_run: cannot run %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	if (per_thread) {
		/* look until the child has ended (a zombie has no threads to show) */
		const struct timespec ms = {0, 1000000};
		siginfo_t si;
		for (;;) {
			memset(&si, 0, sizeof si);
			if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
				break;
			sample_threads(pid);
			nanosleep(&ms, NULL);
		}
	}
	if (wait_child(pid, &status, &ru) != 0)
		return 127;
	if (per_thread)
		print_threads();
	double wall = now_s() - t0;
	int rc = shell_status(status);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	             (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	fprintf(stderr, "wall_s=%.3f max_rss_kib=%ld cpu_s=%.3f rc=%d\n", wall, ru.ru_maxrss, cpu, rc);
	return rc;
}
