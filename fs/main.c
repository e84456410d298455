/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Placeholder while the daemon is wired up (replaced in the foundation work). */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "cfqfs: not built yet\n");
	return 1;
}
