/*
 * recover.c - `ringtrace recover FILE|PID`: what a program's buffers hold,
 * written as a trace, when the program cannot write it itself (it hangs,
 * or it died and a copy of its buffers is all there is). One call per
 * command, on the caller's thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/session_int.h"

/*
 * `ringtrace recover FILE|PID [-o DIR]`: write what a set of buffers holds
 * as a trace, everything, the open sub-buffers included (a record cut in
 * the middle is left out). FILE is a copy of a program's buffers (`cp
 * /proc/PID/fd/N FILE`, or a region file left by a recorder that was
 * killed), mapped privately: it is never changed. PID is a running
 * program, typically one that hangs: its live buffers, as they are.
 * `record --flight-recorder` does this by itself when its program is
 * killed (DIR/recovered).
 */
int sess_recover(const char *what, const char *outdir, unsigned out_flags)
{
	int k;
	struct stat st;
	struct ctl_ring ring = { 0 };
	char err[512], comm[64];
	pid_t pid = 0;
	struct ctl_handle h = { 0 };
	if (stat(what, &st) == 0) {
		int fd = open(what, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size < sizeof(struct ringtrace__shm_header)) {
			sess_log(SESS_SRC_RECOVER, "'%s' is not a copy of ringtrace buffers%s%s\n", what,
				fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : "");
			k = fd < 0 ? -errno : -EBADMSG;
			if (fd >= 0)
				close(fd);
			return k;
		}
		/* Private: the reader's bookkeeping never reaches the file. */
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED) {
			k = -errno;
			sess_log(SESS_SRC_RECOVER, "cannot map '%s': %s\n", what, strerror(-k));
			return k;
		}
		ring.mem = m;
		ring.size = (uint64_t)st.st_size;
		if (rb_view_open(m, ring.size, &ring.rb) < 0) {
			sess_log(SESS_SRC_RECOVER, "'%s' is not a copy of ringtrace buffers, or it is damaged\n", what);
			munmap(m, ring.size);
			return -EBADMSG;
		}
		pid = (pid_t)ring.rb->hdr->attached_pid;
		const char *base = strrchr(what, '/');
		snprintf(comm, sizeof(comm), "%s", base ? base + 1 : what);
	} else {
		if ((k = ctl_resolve(what, &pid, err, sizeof(err))) < 0 ||
		    (k = ctl_open(pid, &h, CTL_OPEN_WRITE, err, sizeof(err))) < 0 ||
		    (k = ctl_ring_open(&h, &ring, err, sizeof(err))) < 0) {
			sess_log(SESS_SRC_RECOVER, "%s\n", err);
			ctl_close(&h);
			return k;
		}
		snprintf(comm, sizeof(comm), "%.16s", h.b->comm);
		/* Work on a copy: the reader's bookkeeping (discard mode gives
		 * sub-buffers back zeroed) must not touch the program's
		 * buffers, which it may still be writing. */
		void *copy = mmap(NULL, ring.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ringtrace__rb *view = NULL;
		if (copy == MAP_FAILED || (memcpy(copy, ring.mem, ring.size), rb_view_open(copy, ring.size, &view) < 0)) {
			sess_log(SESS_SRC_RECOVER, "cannot copy the buffers of process %d\n", (int)pid);
			if (copy != MAP_FAILED)
				munmap(copy, ring.size);
			ctl_ring_close(&ring);
			ctl_close(&h);
			return -ENOMEM;
		}
		uint64_t size = ring.size;
		ctl_ring_close(&ring);
		ring.mem = copy;
		ring.size = size;
		ring.rb = view;
	}
	char name[128];
	char *made = NULL;
	if (!outdir) {
		snprintf(name, sizeof(name), "recovered-%s", comm);
		/* write_region's default name is for snapshots: name it here. */
		struct sess tmp;
		sess_init(&tmp, NULL);
		tmp.out_flags = out_flags;
		tmp.progname = name;
		if ((k = sess_make_outdir(&tmp)) < 0) {
			ctl_ring_close(&ring);
			ctl_close(&h);
			return k;
		}
		close(tmp.odfd);
		outdir = made = tmp.outdir;
		rmdir(outdir); /* write_region makes it again, empty */
	}
	struct snap_dir sd = { AT_FDCWD, outdir };
	/* Thread names from /proc only for a program we checked is the one
	 * (a FILE's pid may be anybody's by now). */
	int status = sess_write_region(pid, comm, &ring, &sd, out_flags, 0, "recover", h.b != NULL);
	ctl_ring_close(&ring);
	ctl_close(&h);
	free(made);
	return status;
}

