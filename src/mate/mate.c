/* mate.c: the `mate VERB ...` dispatcher: runs mate-VERB from beside itself, else from PATH. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fe.h"

/* Verbs mate ships, with a line of help; others found as mate-* are listed too. */
static const struct verb {
	const char *name, *help;
} known[] = {
	{ "bench", "time the calls of profile entries on inputs of their shapes" },
	{ "list-dumps", "list recorded calls (dump directories) and their status" },
	{ "record", "run an unmodified program under the recorder" },
	{ "replay", "re-execute recorded calls and compare their outputs" },
	{ "ring", "a flight recorder's ring: PID writes it out, FILE -o DIR converts it" },
	{ "top", "live per-worker activity of monitored programs" },
	{ "trace", "capture live events of monitored programs into an instruction log" },
	{ "visualize", "draw timelines of instruction logs, or export them to Perfetto" },
};

/* The directory this program lives in (from /proc/self/exe, else argv[0]). */
static int
self_dir(const char *argv0, char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n > 0) {
		buf[n] = '\0';
	} else if (strchr(argv0, '/') != NULL && strlen(argv0) < len) {
		strcpy(buf, argv0);
	} else {
		return 0;
	}
	if ((slash = strrchr(buf, '/')) == NULL)
		return 0;
	slash[slash == buf] = '\0';
	return 1;
}

static int
executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static void
run(const char *argv0, const char *verb, char **args)
{
	char dir[PATH_MAX], path[PATH_MAX + 160], prog[128];

	if (strlen(verb) > 100 || strchr(verb, '/') != NULL)
		mate_fe_usage_error("'%s' is not a mate command", verb);
	snprintf(prog, sizeof(prog), "mate-%s", verb);
	args[0] = prog;
	if (self_dir(argv0, dir, sizeof(dir))) {
		snprintf(path, sizeof(path), "%s/%s", dir, prog);
		if (executable(path)) {
			execv(path, args);
			mate_fe_errx(MATE_EXIT_USAGE, "cannot run %s: %s", path, strerror(errno));
		}
	}
	execvp(prog, args);
	if (errno == ENOENT)
		mate_fe_usage_error("'%s' is not a mate command (no %s beside %s or in PATH)",
		    verb, prog, mate_fe_progname());
	mate_fe_errx(MATE_EXIT_USAGE, "cannot run %s: %s", prog, strerror(errno));
}

/* `mate ring PID [SIGNAL]`: asks a running process to write its ring's calls into its dump
 * directory (its MATE_RING_SIGNAL, USR2 unless told); `mate ring FILE ARG...`:
 * mate-list-dumps --ring FILE ARG... */
static void
ring(const char *argv0, int argc, char **argv)
{
	char *end, **args;
	long pid;
	int sig = SIGUSR2;

	if (argc < 3)
		mate_fe_usage_error("ring: PID [USR1|USR2|HUP|NUMBER], or FILE -o DIR");
	pid = strtol(argv[2], &end, 10);
	if (*end == '\0' && end != argv[2]) {
		if (pid < 1 || pid > INT32_MAX)
			mate_fe_usage_error("ring: %s is not a process id", argv[2]);
		if (argc > 3) {
			const char *s = strncmp(argv[3], "SIG", 3) == 0 ? argv[3] + 3 : argv[3];

			sig = strcmp(s, "USR1") == 0 ? SIGUSR1 : strcmp(s, "USR2") == 0 ? SIGUSR2 :
			    strcmp(s, "HUP") == 0 ? SIGHUP : (int)strtol(s, &end, 10);
			if (sig <= 0 || sig >= NSIG || (isdigit((unsigned char)*s) && *end != '\0'))
				mate_fe_usage_error("ring: %s is not USR1, USR2, HUP or a signal number", argv[3]);
		}
		if (argc > 4)
			mate_fe_usage_error("ring: PID takes one more argument at most, its signal");
		if (kill((pid_t)pid, sig) != 0)
			mate_fe_errx(MATE_EXIT_USAGE, "ring: process %ld: %s", pid, strerror(errno));
		printf("asked process %ld to write its ring's calls into its dump directory (signal "
		    "%d)\n", pid, sig);
		exit(MATE_EXIT_OK);
	}
	if ((args = calloc((size_t)argc + 2, sizeof(*args))) == NULL)
		mate_fe_errx(MATE_EXIT_USAGE, "out of memory");
	args[1] = (char *)"--ring";
	for (int i = 2; i < argc; i++)
		args[i] = argv[i];
	run(argv0, "list-dumps", args);
}

/* Adds the verbs of the mate-* programs in dir to list (no duplicates). */
static void
scan_dir(const char *dir, char ***list, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX + 300];

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t i;
		char **p;

		if (strncmp(de->d_name, "mate-", 5) != 0 || de->d_name[5] == '\0' ||
		    strchr(de->d_name, '.') != NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!executable(path))
			continue;
		for (i = 0; i < *n && strcmp((*list)[i], de->d_name + 5) != 0; i++)
			;
		if (i < *n || (p = realloc(*list, (*n + 1) * sizeof(*p))) == NULL)
			continue;
		*list = p;
		if ((p[*n] = strdup(de->d_name + 5)) != NULL)
			(*n)++;
	}
	closedir(d);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
usage(const char *argv0)
{
	char dir[PATH_MAX], **found = NULL, *path = getenv("PATH"), *copy, *save = NULL, *tok;
	size_t n = 0;

	printf("Usage: %s [--help|--version] VERB [ARG]...\n"
	    "Run mate-VERB (from beside mate, else from PATH) with ARGs.\n"
	    "`%s help VERB` shows a verb's help.\n\nVerbs:\n",
	    mate_fe_progname(), mate_fe_progname());
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		printf("  %-12s %s\n", known[i].name, known[i].help);
	if (self_dir(argv0, dir, sizeof(dir)))
		scan_dir(dir, &found, &n);
	if (path != NULL && (copy = strdup(path)) != NULL) {
		for (tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
			scan_dir(*tok ? tok : ".", &found, &n);
		free(copy);
	}
	if (n > 1)   /* qsort(NULL, 0) is undefined */
		qsort(found, n, sizeof(*found), cmp_str);
	for (size_t i = 0; i < n; i++) {
		size_t k;

		for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			if (strcmp(found[i], known[k].name) == 0)
				break;
		if (k == sizeof(known) / sizeof(known[0]))
			printf("  %-12s (mate-%s)\n", found[i], found[i]);
		free(found[i]);
	}
	free(found);
	printf("\nExit status: that of the verb; 2 for an unknown verb or a usage error.\n");
}

int
main(int argc, char **argv)
{
	char *help_args[3];

	mate_fe_set_progname(argv[0]);
	if (argc < 2)
		mate_fe_usage_error("no verb given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argv[0]);
		return MATE_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		mate_fe_print_version();
		return MATE_EXIT_OK;
	}
	if (argv[1][0] == '-')
		mate_fe_usage_error("unknown option '%s'", argv[1]);
	if (strcmp(argv[1], "help") == 0) {
		if (argc < 3) {
			usage(argv[0]);
			return MATE_EXIT_OK;
		}
		if (strcmp(argv[2], "ring") == 0) {
			printf("Usage: %s ring PID [USR1|USR2|HUP|NUMBER]\n"
			    "       %s ring FILE -o DIR | --into ROOT\n"
			    "PID: send the process its MATE_RING_SIGNAL (USR2 unless given): it writes the\n"
			    "calls of its flight recorder's ring into its dump directory and runs on.\n"
			    "FILE: mate-list-dumps --ring FILE ...: the ring a process left, as dumps.\n",
			    mate_fe_progname(), mate_fe_progname());
			return MATE_EXIT_OK;
		}
		help_args[0] = NULL;
		help_args[1] = (char *)"--help";
		help_args[2] = NULL;
		run(argv[0], argv[2], help_args);
	}
	if (strcmp(argv[1], "ring") == 0)
		ring(argv[0], argc, argv);
	run(argv[0], argv[1], argv + 1);
	return MATE_EXIT_USAGE;
}
