/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

/* Written once before threads start, read-only afterwards. */
static enum log_level g_level = LOG_LVL_INFO;
static bool g_syslog;

void log_setup(enum log_level level, bool use_syslog)
{
	g_level = level;
	g_syslog = use_syslog;
	if (use_syslog)
		openlog("cfqfs", LOG_PID, LOG_DAEMON);
}

bool log_enabled(enum log_level level)
{
	return level <= g_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	static const char *const tag[] = { "error", "warning", "info", "debug" };
	char line[1024];
	va_list ap;

	if (!log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (g_syslog)
		syslog(prio[level], "%s", line);
	else
		fprintf(stderr, "cfqfs: %s%s%s\n", level == LOG_LVL_INFO ? "" : tag[level],
			level == LOG_LVL_INFO ? "" : ": ", line);
}
