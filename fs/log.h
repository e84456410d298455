/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.h - leveled logging: stderr in the foreground, syslog when daemonized.
 * LOG_DBG compiles to nothing unless CFQFS_TRACE is defined, so the per-request path pays
 * nothing for it in normal builds; runtime -d enables it in trace builds and raises the level.
 */
#ifndef CFQFS_LOG_H
#define CFQFS_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR = 0, LOG_LVL_WARN = 1, LOG_LVL_INFO = 2, LOG_LVL_DEBUG = 3 };

/* Chooses the sink and the threshold. Not thread-safe: call before starting threads. */
void log_setup(enum log_level level, bool use_syslog);
bool log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_ERR(...) log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define LOG_WARN(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define LOG_INFO(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...)                                                                             \
	do {                                                                                       \
		if (log_enabled(LOG_LVL_DEBUG))                                                    \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
