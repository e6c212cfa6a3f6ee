/* tkc_cupti.c: loading libcupti at run time and resolving the entry points the collector uses. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tkc.h"

#ifndef TKC_CUPTI_PATH
#define TKC_CUPTI_PATH ""
#endif

static int try_open(tkc_cupti *c, const char *path)
{
	if (!path || !*path)
		return -1;
	c->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!c->handle)
		return -1;
	snprintf(c->path, sizeof c->path, "%s", path);
	return 0;
}

#define SYM(field, name)                                                                           \
	{ offsetof(tkc_cupti, field), name }

int tkc_cupti_load(tkc_cupti *c, char *err, size_t err_size)
{
	static const struct {
		size_t off;
		const char *name;
	} syms[] = {
		SYM(Subscribe, "cuptiSubscribe"),
		SYM(Unsubscribe, "cuptiUnsubscribe"),
		SYM(EnableCallback, "cuptiEnableCallback"),
		SYM(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks"),
		SYM(ActivityEnable, "cuptiActivityEnable"),
		SYM(ActivityDisable, "cuptiActivityDisable"),
		SYM(ActivityFlushAll, "cuptiActivityFlushAll"),
		SYM(ActivityFlushPeriod, "cuptiActivityFlushPeriod"),
		SYM(ActivityGetNextRecord, "cuptiActivityGetNextRecord"),
		SYM(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords"),
		SYM(GetTimestamp, "cuptiGetTimestamp"),
		SYM(GetCallbackName, "cuptiGetCallbackName"),
		SYM(GetResultString, "cuptiGetResultString"),
	};
	memset(c, 0, sizeof *c);
	if (try_open(c, getenv("TK_CUPTI_LIB")) && try_open(c, TKC_CUPTI_PATH) &&
	    try_open(c, "libcupti.so.13") && try_open(c, "libcupti.so.12") &&
	    try_open(c, "libcupti.so")) {
		const char *e = dlerror();
		snprintf(err, err_size, "cannot load libcupti (%s); set TK_CUPTI_LIB", e ? e : "not found");
		return -1;
	}
	for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
		void *f = dlsym(c->handle, syms[i].name);
		/* cuptiGetCallbackName is recent; names fall back to "runtime cbid N" */
		if (!f && strcmp(syms[i].name, "cuptiGetCallbackName")) {
			snprintf(err, err_size, "%s: no symbol %s", c->path, syms[i].name);
			dlclose(c->handle);
			c->handle = NULL;
			return -1;
		}
		memcpy((char *)c + syms[i].off, &f, sizeof f);
	}
	return 0;
}

const char *tkc_cupti_strerror(const tkc_cupti *c, CUptiResult r)
{
	const char *s = NULL;
	if (!c->GetResultString || c->GetResultString(r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}
