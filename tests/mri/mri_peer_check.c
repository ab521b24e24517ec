/*
 * mri_peer_check.c - run as root: becomes uid/gid 65534 (nobody) for
 * everything except file access (the saved uid stays 0, so the file-system
 * uid can stay 0 and reach root's 0700 socket directory and 0600 socket).
 * The connection then reaches the server, whose SO_PEERCRED check sees uid
 * 65534 and must refuse with a message before closing.
 *
 * usage: mri_peer_check PID       exit 0 when refused as expected
 */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "mri.h"

int main(int argc, char **argv)
{
	struct mri_session *s;
	int err;

	if (argc != 2 || geteuid() != 0) {
		fprintf(stderr, "usage (as root): mri_peer_check PID\n");
		return 2;
	}
	if (setgroups(0, NULL) || setresgid(65534, 65534, 0) || setresuid(65534, 65534, 0)) {
		perror("mri_peer_check: setres[ug]id");
		return 2;
	}
	setfsgid(0);
	setfsuid(0);
	if (setfsuid((uid_t)-1) != 0 || geteuid() != 65534) {
		fprintf(stderr, "mri_peer_check: cannot keep file-system uid 0 as euid 65534\n");
		return 2;
	}
	err = mri_open_pid(&s, (pid_t)atoi(argv[1]), 5000);
	printf("as euid %d: %s (%s)\n", (int)geteuid(), mri_errmsg(s), ameba_strerror(err));
	if (err != AMEBA_EPERM || !strstr(mri_errmsg(s), "refused by the target: permission denied: "
					   "uid 65534 may not attach")) {
		fprintf(stderr, "mri_peer_check: want a refusal naming uid 65534\n");
		mri_close(s);
		return 1;
	}
	mri_close(s);
	return 0;
}
