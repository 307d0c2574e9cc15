/*
 * cmd_mount.c - `ringtrace mount [-f] DIR`: mount the tracefs-like file
 * system of fs_ops.c on DIR (docs/mount.md) and serve it until it is
 * unmounted (`umount DIR`, `fusermount3 -u DIR`) or the daemon is
 * signalled.
 *
 * Before anything is mounted the pieces FUSE needs are checked, so that a
 * machine without them gets one line naming the missing one: the device
 * /dev/fuse and, for a user other than root, the set-user-ID helper
 * fusermount3 (Debian package fuse3) that mounts on their behalf. Root's
 * mount is open to every user (allow_other) and the kernel checks each
 * access against the process's user (default_permissions: the process
 * directories are theirs, mode 0700); another user's mount shows only
 * that user's processes (ctl_open refuses the others).
 *
 * A reader blocked in trace_pipe keeps the file system busy, so a plain
 * `umount` is refused by the kernel then; a lazy one (`umount -l`,
 * `fusermount3 -uz`) detaches it at once, and the blocked read notices
 * (fs_stopping: the mount is gone from /proc/self/mountinfo) and ends the
 * file, after which the daemon exits.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fs/fs.h"

#define PFX "ringtrace mount: "
#define FS_TYPE "fuse.ringtrace"

static struct fuse *the_fuse;
static char mnt_path[PATH_MAX];

/* The mount point as /proc/self/mountinfo writes it (octal escapes for
 * space, tab, newline and backslash). */
static void mountinfo_escape(const char *s, char *out, size_t size)
{
	size_t o = 0;
	for (; *s && o + 5 < size; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\%03o", (unsigned char)*s);
		else
			out[o++] = *s;
	}
	out[o] = 0;
}

/* Whether our mount is still attached: field 5 is the mount point, and
 * the file system type follows the " - " separator. */
static int still_mounted(void)
{
	char want[PATH_MAX * 4 + 1], line[PATH_MAX * 4 + 512];
	mountinfo_escape(mnt_path, want, sizeof(want));
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 1;
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *save = NULL, *field = strtok_r(line, " ", &save);
		for (int i = 1; field && i < 5; i++)
			field = strtok_r(NULL, " ", &save);
		if (!field || strcmp(field, want))
			continue;
		for (char *t; (t = strtok_r(NULL, " ", &save));)
			if (!strcmp(t, "-")) {
				t = strtok_r(NULL, " ", &save);
				found = t && !strcmp(t, FS_TYPE);
				break;
			}
	}
	fclose(f);
	return found;
}

int fs_stopping(void)
{
	struct fuse_session *se = the_fuse ? fuse_get_session(the_fuse) : NULL;
	if (se && fuse_session_exited(se))
		return 1;
	return !still_mounted();
}

int fs_interrupted(void)
{
	return fuse_interrupted();
}

static void on_intr(int sig)
{
	(void)sig;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ringtrace mount [-f] DIR\n"
		   "\n"
		   "  Mounts on DIR a file system with one directory per traceable process\n"
		   "  (DIR/PID/, DIR/by-name/NAME -> ../PID) whose files control and read it as\n"
		   "  ftrace's do: tracing_on, events/PROVIDER/NAME/enable, set_event, trace,\n"
		   "  trace_pipe, snapshot, stack_map... (docs/mount.md).\n"
		   "\n"
		   "  -f   stay in the foreground (otherwise the server runs as a daemon)\n"
		   "\n"
		   "  'umount DIR' or 'fusermount3 -u DIR' stops it (with '-l' or '-z' while a\n"
		   "  reader is blocked in trace_pipe).\n");
}

/* Whether an executable named `name` is in one of the directories libfuse
 * runs fusermount3 from (its install directory, then PATH). */
static int have_program(const char *name)
{
	char path[PATH_MAX];
	static const char *const dirs[] = { "/usr/bin", "/bin", "/usr/local/bin" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (access(path, X_OK) == 0)
			return 1;
	}
	const char *p = getenv("PATH");
	while (p && *p) {
		size_t n = strcspn(p, ":");
		if (n) {
			snprintf(path, sizeof(path), "%.*s/%s", (int)n, p, name);
			if (access(path, X_OK) == 0)
				return 1;
		}
		p += n + (p[n] == ':');
	}
	return 0;
}

/* The pieces FUSE needs: 0, or -1 after the one line naming what is
 * missing. RINGTRACE_FUSE_DEVICE replaces /dev/fuse (tests only: they
 * cannot take the real one away). */
static int check_fuse(void)
{
	const char *dev = getenv("RINGTRACE_FUSE_DEVICE");
	if (!dev || !*dev)
		dev = "/dev/fuse";
	struct stat st;
	if (stat(dev, &st) < 0 || !S_ISCHR(st.st_mode)) {
		fprintf(stderr,
			PFX "%s is missing: this kernel has no FUSE (load it with 'modprobe fuse'; a container needs the device passed in)\n",
			dev);
		return -1;
	}
	/* libfuse opens the device as the user first, and turns to
	 * fusermount3 only when mount(2) is refused: a device closed to
	 * the user (mode 0600, as some containers make it) ends there. */
	if (geteuid() != 0 && access(dev, R_OK | W_OK) < 0) {
		fprintf(stderr, PFX "cannot open %s: %s (only root may mount here; or make it mode 0666)\n", dev,
			strerror(errno));
		return -1;
	}
	if (geteuid() != 0 && !have_program("fusermount3")) {
		fprintf(stderr, PFX "fusermount3 is missing: a user other than root mounts through it (Debian package fuse3)\n");
		return -1;
	}
	return 0;
}

int cmd_mount(int argc, char **argv)
{
	int foreground = 0;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--foreground")) {
			foreground = 1;
		} else if (argv[i][0] == '-' || dir) {
			fprintf(stderr, PFX "unexpected argument '%s' (usage: ringtrace mount [-f] DIR)\n", argv[i]);
			return 2;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		fprintf(stderr, PFX "no directory given (usage: ringtrace mount [-f] DIR)\n");
		return 2;
	}
	struct stat st;
	if (stat(dir, &st) < 0) {
		fprintf(stderr, PFX "cannot mount on '%s': %s\n", dir, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, PFX "cannot mount on '%s': %s\n", dir, strerror(ENOTDIR));
		return 1;
	}
	if (!realpath(dir, mnt_path)) {
		fprintf(stderr, PFX "cannot mount on '%s': %s\n", dir, strerror(errno));
		return 1;
	}
	if (check_fuse() < 0)
		return 1;

	/* Root's mount serves every user, the kernel checking each access
	 * against the files' owners; a user's mount serves that user. */
	char opts[128];
	snprintf(opts, sizeof(opts), "fsname=ringtrace,subtype=ringtrace,default_permissions%s",
		 geteuid() == 0 ? ",allow_other" : "");
	char *fargv[] = { argv[0], "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse *f = fuse_new(&args, &fs_operations, sizeof(fs_operations), NULL);
	if (!f) {
		fprintf(stderr, PFX "cannot start the FUSE session\n");
		fuse_opt_free_args(&args);
		return 1;
	}
	if (fuse_mount(f, mnt_path) != 0) {
		fprintf(stderr, PFX "cannot mount on '%s' (see the message above)\n", mnt_path);
		fuse_destroy(f);
		fuse_opt_free_args(&args);
		return 1;
	}
	struct fuse_session *se = fuse_get_session(f);
	if (!foreground)
		fprintf(stderr, PFX "%s mounted; 'umount %s' stops the server\n", mnt_path, mnt_path);
	if (fuse_daemonize(foreground) != 0) {
		fprintf(stderr, PFX "cannot run in the background\n");
		fuse_unmount(f);
		fuse_destroy(f);
		fuse_opt_free_args(&args);
		return 1;
	}
	if (foreground)
		fprintf(stderr, PFX "%s mounted; Ctrl-C or 'umount %s' stops the server\n", mnt_path, mnt_path);
	the_fuse = f;
	/* SIGINT, SIGTERM, SIGHUP end the loop; SIGPIPE is ignored (a
	 * streamed file's reader that stops early). */
	if (fuse_set_signal_handlers(se) != 0) {
		fuse_unmount(f);
		fuse_destroy(f);
		fuse_opt_free_args(&args);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* libfuse interrupts a worker with SIGUSR1 (config intr, fs_ops.c)
	 * when the reader it serves is signalled; the handler only makes
	 * the worker's sleep return (no SA_RESTART). libfuse 3.14 installs
	 * none when intr is set from the init callback. */
	struct sigaction sa = { 0 };
	sa.sa_handler = on_intr;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	int r = fuse_loop_mt(f, 0);
	/*
	 * An unmount shuts the kernel's side of the connection down while
	 * workers may be reading: those waiting get ENODEV (the loop's clean
	 * end), but one that was taking a request off the queue at that
	 * moment gets ECONNABORTED, which libfuse reports ("reading device")
	 * and the loop returns. Once our mount is gone that is the end of an
	 * unmount like the other (seen after `umount -l` with a reader
	 * blocked in trace_pipe, about once in 25 runs on a loaded machine);
	 * a connection aborted under a mount that stays is a failure.
	 */
	if (r < 0 && !still_mounted())
		r = 0;
	fuse_remove_signal_handlers(se);
	fuse_unmount(f);
	the_fuse = NULL;
	fuse_destroy(f);
	fuse_opt_free_args(&args);
	/* A signal that asked us to stop (its number) is a clean end. */
	return r < 0 ? 1 : 0;
}
