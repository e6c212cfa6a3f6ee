/* trace-collect.c: run a command with the CUPTI collector injected (CUDA_INJECTION64_PATH). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "tkc.h"

#ifndef TKC_LIB_BUILD
#define TKC_LIB_BUILD ""
#endif
#ifndef TKC_LIB_INSTALL
#define TKC_LIB_INSTALL ""
#endif
#ifndef TKC_CUPTI_PATH
#define TKC_CUPTI_PATH ""
#endif

enum { OPT_OUT = 'o', OPT_ACT = 'a', OPT_QUIET = 'q', OPT_RANKS = 256, OPT_CAPTURE, OPT_SCHED,
       OPT_STEP, OPT_LIB, OPT_CUPTI, OPT_NO_NVTX };

static const cli_opt opts[] = {
	{OPT_OUT, 'o', "output", "DIR", "directory for the .tkb files (TK_OUTPUT_DIR; default .)"},
	{OPT_ACT, 'a', "activities", "LIST",
	 "what to record: kernel,memcpy,memset,runtime,driver,driver-launch,sync,nvtx,overhead, "
	 "default (all but driver: of the driver calls, those that launch GPU work) or all "
	 "(TK_ACTIVITIES)"},
	{OPT_RANKS, 0, "ranks", "LIST", "record only these ranks: 0,1,4-7 (TK_RANKS)"},
	{OPT_CAPTURE, 0, "capture-range", "KIND",
	 "cudaProfilerApi: record only between cudaProfilerStart and cudaProfilerStop (TK_CAPTURE)"},
	{OPT_SCHED, 0, "schedule", "SPEC",
	 "skip_first=N,wait=N,warmup=N,active=N,repeat=N over step ranges (TK_SCHEDULE)"},
	{OPT_STEP, 0, "step-range", "PATTERN",
	 "NVTX range name that starts a step, a glob (TK_STEP_RANGE; default ProfilerStep#*)"},
	{OPT_LIB, 0, "lib", "PATH", "the collector library (default: beside this program)"},
	{OPT_CUPTI, 0, "cupti", "PATH", "libcupti to use (TK_CUPTI_LIB)"},
	{OPT_NO_NVTX, 0, "no-nvtx-injection",
	 NULL, "leave NVTX_INJECTION64_PATH alone (NVTX ranges and the schedule need it)"},
	{OPT_QUIET, 'q', "quiet", NULL, "say nothing on success"},
	{0, 0, NULL, NULL, NULL},
};

static const cli_tool tool = {
	"trace-collect",
	"[options] [--] COMMAND [ARG...]",
	"Runs COMMAND with the tracekit CUPTI collector injected into every CUDA process it starts "
	"(CUDA_INJECTION64_PATH). Each process writes DIR/HOST.PID.rankR.tkb; convert with "
	"trace-convert. The program is not changed and runs on if tracing cannot start.",
	opts,
	"exit status: that of COMMAND; 2 usage error, 1 when the collector library is missing,\n"
	"126/127 when COMMAND cannot be run or found.\n\n"
	"examples:\n"
	"  trace-collect -o traces/ -- python train.py\n"
	"  trace-collect -o traces/ --schedule wait=1,warmup=1,active=3 -- torchrun train.py\n"
	"  trace-collect --capture-range cudaProfilerApi -a kernel,memcpy -- ./app\n",
	1,
	0,
};

typedef struct collect_opts {
	const char *out_dir, *activities, *ranks, *capture, *schedule, *step_range, *lib, *cupti;
	int no_nvtx, quiet;
	char **cmd;
} collect_opts;

static int file_exists(const char *p)
{
	struct stat st;
	return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* $TK_COLLECT_LIB, beside this program, ../lib*, the install path, the build path. */
static int find_lib(const char *given, char *out, size_t cap)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	const char *env = getenv("TK_COLLECT_LIB");
	if (given || (env && *env)) {
		snprintf(out, cap, "%s", given ? given : env);
		return file_exists(out) ? 0 : -1;
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		static const char *const rel[] = {"/libtkcollect.so", "/../lib/libtkcollect.so",
		                                  "/../lib64/libtkcollect.so"};
		for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
			snprintf(cand, sizeof cand, "%s%s", exe, rel[i]);
			if (file_exists(cand) && realpath(cand, out))
				return 0;
		}
	}
	const char *fixed[] = {TKC_LIB_INSTALL, TKC_LIB_BUILD};
	for (size_t i = 0; i < 2; i++)
		if (file_exists(fixed[i])) {
			snprintf(out, cap, "%s", fixed[i]);
			return 0;
		}
	return -1;
}

static int set(const char *name, const char *value)
{
	return value ? setenv(name, value, 1) : 0;
}

int run_collect(const collect_opts *o)
{
	char lib[PATH_MAX], dir[PATH_MAX];
	if (find_lib(o->lib, lib, sizeof lib)) {
		cli_err(tool.name, "cannot find libtkcollect.so%s%s; use --lib", o->lib ? " at " : "",
		        o->lib ? o->lib : "");
		return 1;
	}
	const char *out = o->out_dir ? o->out_dir : ".";
	if (mkdir(out, 0777) && errno != EEXIST) {
		cli_err(tool.name, "%s: cannot create: %s", out, strerror(errno));
		return 1;
	}
	/* the processes may change directory: give them an absolute path */
	if (!realpath(out, dir)) {
		cli_err(tool.name, "%s: %s", out, strerror(errno));
		return 1;
	}
	set("CUDA_INJECTION64_PATH", lib);
	set("TK_OUTPUT_DIR", dir);
	set("TK_ACTIVITIES", o->activities);
	set("TK_RANKS", o->ranks);
	set("TK_CAPTURE", o->capture);
	set("TK_SCHEDULE", o->schedule);
	set("TK_STEP_RANGE", o->step_range);
	set("TK_CUPTI_LIB", o->cupti);
	const char *cupti = o->cupti ? o->cupti : getenv("TK_CUPTI_LIB");
	if (!o->no_nvtx && !getenv("NVTX_INJECTION64_PATH"))
		set("NVTX_INJECTION64_PATH", cupti && *cupti ? cupti : TKC_CUPTI_PATH);
	if (!o->quiet && isatty(2))
		fprintf(stderr, "trace-collect: writing to %s/\n", dir);
	execvp(o->cmd[0], o->cmd);
	cli_err(tool.name, "%s: %s", o->cmd[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

/* The collector's message about its variable ("TK_SCHEDULE: bad value ..."),
 * naming the option instead. */
static void option_error(int id, const char *err)
{
	const char *rest = strncmp(err, "TK_", 3) == 0 && strstr(err, ": ") ? strstr(err, ": ") + 2 : err;
	cli_usage_error(&tool, "%s: %s", cli_opt_name(&tool, id), rest);
}

/* Bad values are caught here rather than in every traced process. */
static int check(const collect_opts *o)
{
	static const char *const captures[] = {"cudaProfilerApi", "none", NULL};
	char err[256];
	tkc_schedule s;
	if (o->activities && tkc_parse_activities(o->activities, err, sizeof err) < 0) {
		option_error(OPT_ACT, err);
		return -1;
	}
	if (o->schedule && tkc_parse_schedule(o->schedule, &s, err, sizeof err)) {
		option_error(OPT_SCHED, err);
		return -1;
	}
	if (o->capture && cli_parse_enum(&tool, OPT_CAPTURE, o->capture, captures) < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	collect_opts o;
	const char *arg = NULL;
	int c, first = 1;
	memset(&o, 0, sizeof o);
	while ((c = cli_next(&tool, argc, argv, &arg, &first)) >= 0) {
		switch (c) {
		case OPT_OUT: o.out_dir = arg; break;
		case OPT_ACT: o.activities = arg; break;
		case OPT_RANKS: o.ranks = arg; break;
		case OPT_CAPTURE: o.capture = arg; break;
		case OPT_SCHED: o.schedule = arg; break;
		case OPT_STEP: o.step_range = arg; break;
		case OPT_LIB: o.lib = arg; break;
		case OPT_CUPTI: o.cupti = arg; break;
		case OPT_NO_NVTX: o.no_nvtx = 1; break;
		case OPT_QUIET: o.quiet = 1; break;
		default: break;
		}
	}
	if (c == -2)
		return 2;
	if (first >= argc) {
		cli_usage_error(&tool, "no command to run");
		return 2;
	}
	o.cmd = argv + first;
	if (check(&o))
		return 2;
	return run_collect(&o);
}
