/*
 * main.c - the `ameba` command: subcommand dispatch and global help.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "ameba/ameba.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ameba <command> [options]\n"
		"\n"
		"Finds the memory bottlenecks of multithreaded C/C++ programs.\n"
		"\n"
		"commands:\n"
		"  cc, c++        compile and link with ameba's access instrumentation\n"
		"  run -- CMD     start CMD, search its memory bottlenecks online, report\n"
		"  attach PID     the same for a process that is already running\n"
		"  report FILE    print a saved report (ameba-PID.json)\n"
		"  mri PID        debugging client of a target's MRI: threads, objects, counts\n"
		"  oracle FILE    print an AMEBA_ORACLE dump as a ranked per-object table\n"
		"  list WHAT      list properties, strategies, metrics, backends or presets\n"
		"  geometry       print the sim backend's cache geometry (--preset, --nodes)\n"
		"  calibrate      measure this machine's memory latencies into a sim preset\n"
		"  version        print the version\n"
		"  help           this text\n"
		"\n"
		"`ameba <command> --help` (`ameba cc --ameba-help`) describes a command.\n"
		"An instrumented program writes exact per-object counts at exit when run\n"
		"with AMEBA_ORACLE=FILE in its environment (see docs/oracle.md).\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || !strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "cc"))
		return agent_cmd_cc(argc - 2, argv + 2, 0);
	if (!strcmp(cmd, "c++") || !strcmp(cmd, "cxx"))
		return agent_cmd_cc(argc - 2, argv + 2, 1);
	if (!strcmp(cmd, "run"))
		return agent_cmd_run(argc - 2, argv + 2);
	if (!strcmp(cmd, "attach"))
		return agent_cmd_attach(argc - 2, argv + 2);
	if (!strcmp(cmd, "report"))
		return agent_cmd_report(argc - 2, argv + 2);
	if (!strcmp(cmd, "mri"))
		return agent_cmd_mri(argc - 2, argv + 2);
	if (!strcmp(cmd, "oracle"))
		return agent_cmd_oracle(argc - 2, argv + 2);
	if (!strcmp(cmd, "list"))
		return agent_cmd_list(argc - 2, argv + 2);
	if (!strcmp(cmd, "geometry"))
		return agent_cmd_geometry(argc - 2, argv + 2);
	if (!strcmp(cmd, "calibrate"))
		return agent_cmd_calibrate(argc - 2, argv + 2);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("ameba %s\n", AMEBA_VERSION_STRING);
		return 0;
	}
	fprintf(stderr, "ameba: unknown command '%s'; try 'ameba help'\n", cmd);
	return 2;
}
