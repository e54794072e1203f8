/* main.c — paddle-run's entry point: the table of subcommands. */
#include <stdio.h>
int main(void) { puts("paddle-run " PD_VERSION); return 0; }
