/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli.h - the sub-commands that talk to a running mount through its control directory:
 *
 *     cfqfs stat MOUNTPOINT [-w SECONDS] [-n COUNT] [--json] [--ctl-dir NAME]
 *     cfqfs set MOUNTPOINT [--ctl-dir NAME] KEY=VALUE...
 *
 * They only read and write files under MOUNTPOINT/.cfqfs (ctl.h documents the formats), so
 * they work for any user the mount lets in, with the same permission rules.
 */
#ifndef CFQFS_CLI_H
#define CFQFS_CLI_H

#include <stdbool.h>

/* The usage text of the sub-commands (part of cfqfs --help). */
extern const char cli_usage_text[];

/* Is argv[1] a sub-command (so main() hands over to cli_main)? Cannot fail. */
bool cli_is_command(int argc, char **argv);

/*
 * Runs the sub-command argv[1] ("stat" or "set"). Returns the exit status: 0 on success, 1 if
 * a value was refused or a control file could not be read, 2 on bad usage or when MOUNTPOINT
 * has no control directory. Messages go to stderr, one line each.
 */
int cli_main(int argc, char **argv);

#endif
