/* inputs.c: the traces a path stands for: a trace file, an archive's members that are traces, or one member. */
#include <stdlib.h>
#include <sys/stat.h>

#include "formats/archive.h"
#include "formats/formats.h"

struct tk_inputs {
	tk__err err;
	tk_reader_opts opts;
	char *path;   /* the file ("-" standard input) */
	char *member; /* the member named with ARCHIVE//MEMBER, or NULL */
	tk__src src;  /* the opened file, until its one reader takes it */
	tk__arc *arc; /* an archive: its members are the traces */
	int done;
	char *name; /* the last name returned */
};

int tk_inputs_open(tk_inputs **out, const char *path, const tk_reader_opts *opts)
{
	if (!out || !path)
		return TK_ERR_ARG;
	tk_inputs *in = calloc(1, sizeof *in);
	*out = in;
	if (!in)
		return TK_ERR_NOMEM;
	if (opts)
		in->opts = *opts;
	char *file = NULL;
	const char *member = NULL;
	if (tk__member_path(path, &file, &member)) {
		in->path = file;
		in->member = tk__strdup(member);
	} else {
		in->path = tk__strdup(path);
	}
	if (!in->path || (member && !in->member))
		return tk__err_set(&in->err, TK_ERR_NOMEM, "out of memory");
	char err[TK__ERRLEN];
	if (tk__src_open_file(&in->src, in->path, err))
		return tk__err_set(&in->err, TK_ERR_IO, "%s", err);
	if (in->member) /* one member: its reader finds it */
		return 0;
	int archive;
	if (tk__src_detect(&in->src, &archive) < 0)
		return tk__err_set(&in->err, TK_ERR_IO, "%s: %s", in->path, in->src.err);
	if (!archive)
		return 0;
	int rc = tk__arc_open(&in->arc, &in->src, in->path);
	return rc ? tk__err_set(&in->err, rc, "%s", tk__arc_error(in->arc)) : 0;
}

/* A reader of src into *r, or, with r NULL, only the check that it opens.
 * On failure the reader's message is in.err too (the reader, with its
 * warnings, is still handed over). */
static int open_reader(tk_inputs *in, tk_reader **r, tk__src *src, const char *label, const char *member)
{
	tk_reader *t = NULL;
	int rc = tk__reader_open_src(&t, src, label, member, &in->opts);
	if (rc)
		tk__err_msg(&in->err, rc, "%s", t ? tk_reader_error(t) : "out of memory");
	if (r)
		*r = t;
	else
		tk_reader_free(t);
	return rc;
}

/* *name = "FILE//MEMBER", or FILE. */
static int set_name(tk_inputs *in, const char *member)
{
	free(in->name);
	size_t n = strlen(in->path) + (member ? strlen(member) + 2 : 0) + 1;
	if (!(in->name = malloc(n)))
		return tk__err_set(&in->err, TK_ERR_NOMEM, "out of memory");
	snprintf(in->name, n, "%s%s%s", in->path, member ? "//" : "", member ? member : "");
	return 0;
}

int tk_inputs_next(tk_inputs *in, tk_reader **r, const char **name)
{
	if (r)
		*r = NULL;
	if (!in || !name)
		return TK_ERR_ARG;
	if (in->done)
		return TK_EOF;
	if (in->err.code) { /* tk_inputs_open failed: said once more, then the end */
		in->done = 1;
		return in->err.code;
	}
	in->err.msg[0] = 0; /* the last member's error is not this one's */
	if (!in->arc) { /* a trace file, or the member named */
		in->done = 1;
		if (set_name(in, in->member))
			return in->err.code;
		*name = in->name;
		const char *label = strcmp(in->path, "-") == 0 ? "(stdin)" : in->path;
		if (!r && !in->member) {
			tk__src_close(&in->src);
			return TK_OK;
		}
		/* a member is listed only when it is there: its reader finds it */
		return open_reader(in, r, &in->src, label, in->member);
	}
	const char *m;
	int64_t size;
	int rc;
	while ((rc = tk__arc_next(in->arc, &m, &size)) == 1 && m && !tk__is_trace_name(m))
		;
	if (rc == 0) {
		in->done = 1;
		return TK_EOF;
	}
	if (rc < 0) { /* said once; the listing goes on where the archive allows */
		in->done = tk__arc_failed(in->arc);
		tk__err_msg(&in->err, rc, "%s", tk__arc_error(in->arc));
		return rc;
	}
	if (set_name(in, m))
		return in->err.code;
	*name = in->name;
	if (!r)
		return TK_OK;
	tk__src s;
	if (tk__src_init_member(&s, in->arc))
		return tk__err_set(&in->err, TK_ERR_NOMEM, "out of memory");
	return open_reader(in, r, &s, in->name, NULL);
}

const char *tk_inputs_error(const tk_inputs *in)
{
	return in ? in->err.msg : "out of memory";
}

void tk_inputs_free(tk_inputs *in)
{
	if (!in)
		return;
	tk__src_close(&in->src);
	tk__arc_unref(in->arc);
	tk__err_free(&in->err);
	free(in->path);
	free(in->member);
	free(in->name);
	free(in);
}

/* stat() of the file that path reads: the archive of ARCHIVE//MEMBER. */
static int input_stat(const char *path, struct stat *st)
{
	char *file = NULL;
	const char *member = NULL;
	int rc = stat(tk__member_path(path, &file, &member) ? file : path, st);
	free(file);
	return rc;
}

int tk_input_rereadable(const char *path)
{
	struct stat st;
	if (!path || strcmp(path, "-") == 0)
		return 0;
	if (input_stat(path, &st))
		return 1;
	return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode);
}

int tk_output_is_input(const char *out, const char *path)
{
	struct stat so, si;
	if (!out || !path || strcmp(out, "-") == 0 || strcmp(path, "-") == 0)
		return 0;
	if (stat(out, &so) || !S_ISREG(so.st_mode) || input_stat(path, &si))
		return 0;
	return so.st_dev == si.st_dev && so.st_ino == si.st_ino;
}
