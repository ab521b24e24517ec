/*
 * fuzz_oracle.c - libFuzzer target: `ameba oracle FILE` (agent/oracle_cmd.c)
 * on arbitrary files, by rows of objects and by bins. A file is printed as
 * a table or refused with a message; no crash, leak or undefined behaviour
 * whatever its fields hold.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "agent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	/* agent_cmd_oracle takes the arguments after `ameba oracle` */
	char *by_object[] = { path, "--top", "0", NULL };
	char *by_bin[] = { path, "--bins", "--metric", "l1d_miss", NULL };
	FILE *f;

	if (!path[0])	/* the tables: run with -close_fd_mask=3 */
		snprintf(path, sizeof(path), "/tmp/fuzz_oracle.%d.json", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	agent_cmd_oracle(3, by_object);
	agent_cmd_oracle(4, by_bin);
	return 0;
}
