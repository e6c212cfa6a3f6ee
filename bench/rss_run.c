/* rss_run.c: run a command and report its wall time, peak RSS, CPU time and exit status on stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(stderr, "usage: rss_run CMD [ARGS...]\n"
		                "Runs CMD and prints `wall_s=<s> max_rss_kib=<KiB> cpu_s=<s> rc=<exit>` to\n"
		                "stderr (cpu_s: user and system time of CMD and its waited-for children).\n");
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
	if (wait_child(pid, &status, &ru) != 0)
		return 127;
	double wall = now_s() - t0;
	int rc = shell_status(status);
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	             (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	fprintf(stderr, "wall_s=%.3f max_rss_kib=%ld cpu_s=%.3f rc=%d\n", wall, ru.ru_maxrss, cpu, rc);
	return rc;
}
