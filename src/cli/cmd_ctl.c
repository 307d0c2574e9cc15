/*
 * cmd_ctl.c - live control of running programs: `ringtrace ps`, `list`,
 * `enable`, `disable`, `on`, `off`, `stat`, `reset`, `buffer-size`.
 *
 * The same control as ftrace's files (tracing_on, set_event,
 * buffer_size_kb, trace, per_cpu/cpuN/stats), over the control block every
 * program that uses libringtrace publishes (src/ctl/ctl.h). Reads (ps,
 * list, stat) only look at shared memory; changes go through the
 * program's control thread and wait for its answer.
 */
#include <errno.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ctl/ctl_client.h"
#include "common/trigger_parse.h"

#define TIMEOUT_MS 5000

/* Open the block of the process named by argv[1] (mode: CTL_OPEN_READ for
 * the commands that only look); prints the error. */
static int open_target(const char *cmd, const char *spec, int mode, struct ctl_handle *h)
{
	char err[512];
	pid_t pid;
	if (ctl_resolve(spec, &pid, err, sizeof(err)) < 0 || ctl_open(pid, h, mode, err, sizeof(err)) < 0) {
		fprintf(stderr, "ringtrace %s: %s\n", cmd, err);
		return -1;
	}
	return 0;
}

/* `CMD [--json] PID|NAME`: parse, then open the target read-only (list
 * and stat only look). 0, or the exit status (2 usage, 1 no such target)
 * after a one-line message. */
static int json_and_target(const char *cmd, int argc, char **argv, int *json, struct ctl_handle *h)
{
	const char *spec = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			*json = 1;
		} else if (argv[i][0] == '-' || spec) {
			fprintf(stderr, "ringtrace %s: unexpected argument '%s' (usage: ringtrace %s [--json] PID|NAME)\n",
				cmd, argv[i], cmd);
			return 2;
		} else {
			spec = argv[i];
		}
	}
	if (!spec) {
		fprintf(stderr, "ringtrace %s: no process given (usage: ringtrace %s [--json] PID|NAME)\n", cmd, cmd);
		return 2;
	}
	return open_target(cmd, spec, CTL_OPEN_READ, h) < 0 ? 1 : 0;
}

static const char *comm_of(const struct ctl_block *b, char *buf)
{
	memcpy(buf, b->comm, sizeof(b->comm));
	buf[sizeof(b->comm)] = 0;
	return buf;
}

static int want_help(int argc, char **argv, const char *usage)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s\n", usage);
			return 1;
		}
	return 0;
}

/* ---- ps -------------------------------------------------------------------- */

struct ps_ctx {
	int clean;
	int count;
	int removed;
	int header;
};

static void ring_totals(struct ctl_handle *h, uint64_t *mem, uint64_t *lost)
{
	*mem = h->b->ring_size;
	*lost = 0;
	struct ctl_ring ring;
	char err[256];
	if (h->b->session == CTL_SESSION_NONE || ctl_ring_open(h, &ring, err, sizeof(err)) < 0)
		return;
	for (uint32_t c = 0; c < ring.rb->ncpus; c++) {
		struct ctl_cpu_stat s;
		ctl_ring_cpu_stat(ring.rb, c, &s);
		*lost += s.lost_full + s.lost_overwrite + s.lost_too_big + s.lost_nocpu;
	}
	ctl_ring_close(&ring);
}

static void ps_one(pid_t pid, const char *path, void *arg)
{
	struct ps_ctx *ps = arg;
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (st.st_uid != geteuid() && geteuid() != 0)
		return; /* another user's programs are not ours to list */
	struct ctl_handle h;
	char err[512];
	int r = ctl_open(pid, &h, CTL_OPEN_READ, err, sizeof(err));
	if (r == -ESRCH) {
		/* Gone: its block is stale. */
		if (ps->clean) {
			if (unlink(path) == 0) {
				printf("removed %s (process %d is gone)\n", path, (int)pid);
				ps->removed++;
			} else {
				fprintf(stderr, "ringtrace ps: cannot remove %s: %s\n", path, strerror(errno));
			}
		}
		return;
	}
	if (r < 0) {
		fprintf(stderr, "ringtrace ps: %s\n", err);
		return;
	}
	if (ps->clean) {
		ctl_close(&h);
		return;
	}
	if (!ps->header) {
		printf("%7s %-10s %-16s %6s %-7s %10s %10s\n", "PID", "USER", "NAME", "EVENTS", "TRACING", "BUFFERS",
		       "LOST");
		ps->header = 1;
	}
	uint64_t mem, lost;
	ring_totals(&h, &mem, &lost);
	/* The owner as /proc says (ctl_open() checked it owns the block): the
	 * block's uid field is the program's word. */
	struct passwd *pw = getpwuid(h.uid);
	char comm[32], sz[32];
	printf("%7d %-10.10s %-16s %6u %-7s %10s %10llu\n", (int)pid, pw ? pw->pw_name : "?", comm_of(h.b, comm),
	       h.b->nevents, h.b->tracing ? "on" : "off", mem ? cli_bytes(mem, sz, sizeof(sz)) : "-",
	       (unsigned long long)lost);
	ps->count++;
	ctl_close(&h);
}

int cmd_ps(int argc, char **argv)
{
	if (want_help(argc, argv, "ringtrace ps [--clean]\n\n"
				  "  Lists the running programs of your user (all users' for root) that use\n"
				  "  libringtrace. --clean removes the control blocks of programs that are gone."))
		return 0;
	struct ps_ctx ps = { 0 };
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--clean")) {
			ps.clean = 1;
		} else {
			fprintf(stderr, "ringtrace ps: unknown option '%s' (try --help)\n", argv[i]);
			return 2;
		}
	}
	ctl_scan(ps_one, &ps);
	if (ps.clean)
		printf("%d stale control block%s removed\n", ps.removed, ps.removed == 1 ? "" : "s");
	else if (!ps.count)
		fprintf(stderr, "ringtrace ps: no traceable process is running\n");
	return 0;
}

/* ---- list ------------------------------------------------------------------ */

static void json_fields(FILE *out, const char *sig)
{
	fprintf(out, "[");
	int first = 1;
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", sig);
	for (char *save = NULL, *f = strtok_r(buf, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
		char *sp = strchr(f, ' ');
		if (!sp)
			continue;
		*sp = 0;
		char *name = sp + 1;
		char *br = strchr(name, '[');
		long len = -1;
		int seq = 0;
		if (br) {
			if (br[1] == ']')
				seq = 1;
			else
				len = strtol(br + 1, NULL, 10);
			*br = 0;
		}
		fprintf(out, "%s{\"name\":", first ? "" : ",");
		cli_json_string(out, name);
		fprintf(out, ",\"type\":");
		cli_json_string(out, f);
		if (seq)
			fprintf(out, ",\"sequence\":true");
		else if (len >= 0)
			fprintf(out, ",\"length\":%ld", len);
		fprintf(out, "}");
		first = 0;
	}
	fprintf(out, "]");
}

int cmd_list(int argc, char **argv)
{
	const char *usage = "ringtrace list [--json] PID|NAME\n\n"
			    "  The program's events: provider:name, id, enabled or disabled, fields.";
	if (want_help(argc, argv, usage))
		return 0;
	int json = 0;
	struct ctl_handle h;
	int r = json_and_target("list", argc, argv, &json, &h);
	if (r)
		return r;
	int ret = cmd_list_write(stdout, &h, json);
	ctl_close(&h);
	return ret;
}

/* What `ringtrace list` prints (also the info file of `ringtrace mount`).
 * 0, or 1 after a message when the registry is damaged. */
int cmd_list_write(FILE *out, const struct ctl_handle *h, int json)
{
	const struct ctl_block *b = h->b;
	const char *log = (const char *)b + CTL_REG_OFF;
	const uint8_t *en = (const uint8_t *)b + CTL_EN_OFF;
	uint64_t used = __atomic_load_n(&b->reg_used, __ATOMIC_ACQUIRE);
	if (used > CTL_REG_SIZE)
		used = CTL_REG_SIZE;
	char comm[32], ver[sizeof(b->version_str) + 1];
	snprintf(ver, sizeof(ver), "%.*s", (int)sizeof(b->version_str), b->version_str);
	if (json) {
		fprintf(out, "{\"ringtrace_version\":");
		cli_json_string(out, ver);
		fprintf(out, ",\"pid\":%d,\"name\":", (int)h->pid);
		cli_json_string(out, comm_of(b, comm));
		fprintf(out, ",\"tracing\":%s,\"events\":[", b->tracing ? "true" : "false");
	} else {
		fprintf(out, "ringtrace %s, process %d (%s), tracing %s\n", ver, (int)h->pid, comm_of(b, comm),
		       b->tracing ? "on" : "off");
	}
	uint64_t pos = 0;
	struct ctl_log_entry e;
	int k, n = 0;
	while ((k = ctl_log_next(log, used, &pos, &e)) > 0) {
		if (e.kind != 1 || e.n < 3 || e.id >= CTL_MAX_IDS)
			continue;
		int on = __atomic_load_n(&en[e.id], __ATOMIC_ACQUIRE) == CTL_EV_ENABLED;
		if (json) {
			fprintf(out, "%s{\"provider\":", n ? "," : "");
			cli_json_string(out, e.s[0]);
			fprintf(out, ",\"name\":");
			cli_json_string(out, e.s[1]);
			fprintf(out, ",\"id\":%u,\"enabled\":%s,\"signature\":", e.id, on ? "true" : "false");
			cli_json_string(out, e.s[2]);
			fprintf(out, ",\"fields\":");
			json_fields(out, e.s[2]);
			if (e.n >= 4) {
				fprintf(out, ",\"defined_at\":");
				cli_json_string(out, e.s[3]);
			}
			fprintf(out, "}");
		} else {
			char full[512];
			snprintf(full, sizeof(full), "%s:%s", e.s[0], e.s[1]);
			fprintf(out, "%-32s id %-5u %-8s %s\n", full, e.id, on ? "enabled" : "disabled",
			       *e.s[2] ? e.s[2] : "(no fields)");
		}
		n++;
	}
	if (json)
		fprintf(out, "]}\n");
	int ret = 0;
	if (k < 0) {
		fprintf(stderr, "ringtrace list: the event registry of process %d is damaged after %d events\n",
			(int)h->pid, n);
		ret = 1;
	}
	return ret;
}

/* ---- requests ------------------------------------------------------------ */

static int request(const char *cmd, struct ctl_handle *h, uint32_t op, uint64_t a0, uint64_t a1, const char *text,
		   size_t textlen, char *msg, size_t msglen)
{
	int r = ctl_request(h, op, a0, a1, text, textlen, TIMEOUT_MS, msg, msglen);
	if (r < 0)
		fprintf(stderr, "ringtrace %s: process %d: %s\n", cmd, (int)h->pid,
			*msg ? msg : strerror(-r));
	return r;
}

static int rules(int argc, char **argv, int on)
{
	const char *cmd = on ? "enable" : "disable";
	char usage[128];
	snprintf(usage, sizeof(usage), "ringtrace %s PID|NAME PATTERN...", cmd);
	if (want_help(argc, argv, usage))
		return 0;
	if (argc < 3) {
		fprintf(stderr, "ringtrace %s: usage: %s\n", cmd, usage);
		return 2;
	}
	char text[CTL_TEXT];
	size_t len = 0;
	for (int i = 2; i < argc; i++) {
		if (ctl_pattern_valid(argv[i]) < 0) {
			fprintf(stderr,
				"ringtrace %s: malformed pattern '%s' (provider:name globs such as 'app:*' or '*:request_*')\n",
				cmd, argv[i]);
			return 2;
		}
		size_t n = strlen(argv[i]) + 1;
		if (len + n + 1 > sizeof(text)) {
			fprintf(stderr, "ringtrace %s: too many patterns: '%s' and those after it do not fit in %zu bytes\n", cmd, argv[i], sizeof(text));
			return 2;
		}
		memcpy(text + len, argv[i], n);
		len += n;
	}
	text[len++] = 0;
	struct ctl_handle h;
	if (open_target(cmd, argv[1], CTL_OPEN_WRITE, &h) < 0)
		return 1;
	char msg[CTL_MSG];
	int r = request(cmd, &h, on ? CTL_OP_ENABLE : CTL_OP_DISABLE, 0, 0, text, len, msg, sizeof(msg));
	if (r >= 0) {
		printf("%s %d event%s in process %d\n", on ? "enabled" : "disabled", r, r == 1 ? "" : "s",
		       (int)h.pid);
		if (r == 0)
			fprintf(stderr, "ringtrace %s: no event matches now; the rule applies to events registered later\n",
				cmd);
	}
	ctl_close(&h);
	return r < 0 ? 1 : 0;
}

int cmd_enable(int argc, char **argv)
{
	return rules(argc, argv, 1);
}

int cmd_disable(int argc, char **argv)
{
	return rules(argc, argv, 0);
}

static int simple(int argc, char **argv, const char *cmd, uint32_t op)
{
	char usage[128];
	snprintf(usage, sizeof(usage), "ringtrace %s PID|NAME", cmd);
	if (want_help(argc, argv, usage))
		return 0;
	if (argc != 2) {
		fprintf(stderr, "ringtrace %s: usage: %s\n", cmd, usage);
		return 2;
	}
	struct ctl_handle h;
	if (open_target(cmd, argv[1], CTL_OPEN_WRITE, &h) < 0)
		return 1;
	char msg[CTL_MSG];
	int r = request(cmd, &h, op, 0, 0, NULL, 0, msg, sizeof(msg));
	if (r >= 0) {
		char sz[32];
		switch (op) {
		case CTL_OP_ON:
			printf("tracing on in process %d (%s of buffers)\n", (int)h.pid,
			       cli_bytes(h.b->ring_size, sz, sizeof(sz)));
			break;
		case CTL_OP_OFF:
			printf("tracing off in process %d\n", (int)h.pid);
			break;
		case CTL_OP_SNAP_ENABLE:
			printf("snapshots enabled in process %d (spare buffers allocated)\n", (int)h.pid);
			break;
		case CTL_OP_SNAP_DISABLE:
			printf("snapshots disabled in process %d\n", (int)h.pid);
			break;
		default:
			if (r == 1)
				printf("process %d has no buffers: nothing to empty\n", (int)h.pid);
			else
				printf("buffers of process %d emptied\n", (int)h.pid);
			break;
		}
		if (*msg)
			fprintf(stderr, "ringtrace %s: %s\n", cmd, msg);
	}
	ctl_close(&h);
	return r < 0 ? 1 : 0;
}

int cmd_on(int argc, char **argv)
{
	return simple(argc, argv, "on", CTL_OP_ON);
}

int cmd_off(int argc, char **argv)
{
	return simple(argc, argv, "off", CTL_OP_OFF);
}

int cmd_reset(int argc, char **argv)
{
	return simple(argc, argv, "reset", CTL_OP_RESET);
}

int cmd_snapshot_enable(int argc, char **argv)
{
	const char *usage = "ringtrace snapshot-enable PID|NAME [--snapshot-on 'PROVIDER:EVENT [if FIELD OP VALUE]'] [--min-interval MS]\n\n"
			    "  Allocate spare buffers, so that snapshots can be taken without stopping\n"
			    "  tracing. --snapshot-on arms a trigger: the program asks for a snapshot when\n"
			    "  it fires that event and the condition on its integer field holds (OP: ==\n"
			    "  != < <= > >=), at most once per --min-interval; a watcher writes it\n"
			    "  (ringtrace snapshot PID -o DIR --watch).";
	if (want_help(argc, argv, usage))
		return 0;
	const char *spec = NULL, *trig = NULL;
	uint64_t interval = 0;
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--snapshot-on") || !strcmp(argv[i], "--min-interval")) && i + 1 < argc) {
			const char *v = argv[++i];
			if (argv[i - 1][2] == 's') {
				char err[256];
				if (trigger_check(v, err, sizeof(err)) < 0) {
					fprintf(stderr, "ringtrace snapshot-enable: %s\n", err);
					return 2;
				}
				trig = v;
			} else {
				char *end;
				interval = strtoull(v, &end, 10);
				if (*end || end == v || v[0] == '-' || interval > 86400000u) {
					fprintf(stderr, "ringtrace snapshot-enable: bad --min-interval '%s' (milliseconds)\n", v);
					return 2;
				}
			}
		} else if (argv[i][0] == '-' || spec) {
			fprintf(stderr, "ringtrace snapshot-enable: unexpected argument '%s' (try --help)\n", argv[i]);
			return 2;
		} else {
			spec = argv[i];
		}
	}
	if (!spec) {
		fprintf(stderr, "ringtrace snapshot-enable: usage: ringtrace snapshot-enable PID|NAME [--snapshot-on EV] [--min-interval MS]\n");
		return 2;
	}
	struct ctl_handle h;
	if (open_target("snapshot-enable", spec, CTL_OPEN_WRITE, &h) < 0)
		return 1;
	char msg[CTL_MSG];
	int r = request("snapshot-enable", &h, CTL_OP_SNAP_ENABLE, 0, 0, NULL, 0, msg, sizeof(msg));
	if (r >= 0 && trig)
		r = request("snapshot-enable", &h, CTL_OP_SNAP_TRIGGER, interval, 0, trig, strlen(trig), msg,
			    sizeof(msg));
	if (r >= 0)
		printf("snapshots enabled in process %d (spare buffers allocated%s%s)\n", (int)h.pid,
		       trig ? "; trigger: " : "", trig ? trig : "");
	ctl_close(&h);
	return r < 0 ? 1 : 0;
}

int cmd_snapshot_disable(int argc, char **argv)
{
	return simple(argc, argv, "snapshot-disable", CTL_OP_SNAP_DISABLE);
}

int cmd_buffer_size(int argc, char **argv)
{
	const char *usage = "ringtrace buffer-size PID|NAME SIZE [--subbuffers N] [--mode discard|overwrite]\n\n"
			    "  Per-CPU buffer size (a power of two, K/M/G suffixes), taken at the next\n"
			    "  'ringtrace on'. Refused while tracing is on.";
	if (want_help(argc, argv, usage))
		return 0;
	if (argc < 3) {
		fprintf(stderr, "ringtrace buffer-size: usage: ringtrace buffer-size PID|NAME SIZE [--subbuffers N] [--mode M]\n");
		return 2;
	}
	uint64_t size, nsb = 0, mode = 0;
	if (cli_parse_size(argv[2], &size) < 0 || size == 0 || (size & (size - 1))) {
		fprintf(stderr, "ringtrace buffer-size: bad size '%s' (a power of two such as 4M)\n", argv[2]);
		return 2;
	}
	for (int i = 3; i < argc; i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "ringtrace buffer-size: option '%s' needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--subbuffers")) {
			char *end;
			nsb = strtoull(argv[i + 1], &end, 10);
			if (*end || nsb < 2 || nsb > 1024 || (nsb & (nsb - 1))) {
				fprintf(stderr, "ringtrace buffer-size: bad --subbuffers '%s' (a power of two from 2 to 1024)\n",
					argv[i + 1]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--mode")) {
			if (!strcmp(argv[i + 1], "discard"))
				mode = 1;
			else if (!strcmp(argv[i + 1], "overwrite"))
				mode = 2;
			else {
				fprintf(stderr, "ringtrace buffer-size: bad --mode '%s' (discard or overwrite)\n",
					argv[i + 1]);
				return 2;
			}
		} else {
			fprintf(stderr, "ringtrace buffer-size: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	struct ctl_handle h;
	if (open_target("buffer-size", argv[1], CTL_OPEN_WRITE, &h) < 0)
		return 1;
	char msg[CTL_MSG];
	int r = request("buffer-size", &h, CTL_OP_BUFFER_SIZE, size, nsb | mode << 32, NULL, 0, msg, sizeof(msg));
	if (r >= 0) {
		char sz[32];
		printf("process %d: %s per CPU in %u sub-buffers, %s mode, from the next 'ringtrace on'\n",
		       (int)h.pid, cli_bytes(size, sz, sizeof(sz)), h.b->cfg_nsb,
		       h.b->cfg_mode == 1 ? "overwrite" : "discard");
	}
	ctl_close(&h);
	return r < 0 ? 1 : 0;
}

/* ---- stat ------------------------------------------------------------------ */

int cmd_stat(int argc, char **argv)
{
	const char *usage = "ringtrace stat [--json] PID|NAME\n\n"
			    "  Per CPU and in total: events in the buffer, written, lost by cause,\n"
			    "  bytes, sub-buffers read.";
	if (want_help(argc, argv, usage))
		return 0;
	int json = 0;
	struct ctl_handle h;
	int r = json_and_target("stat", argc, argv, &json, &h);
	if (r)
		return r;
	char comm[32], err[512];
	struct ctl_ring ring = { 0 };
	int have = h.b->session != CTL_SESSION_NONE && ctl_ring_open(&h, &ring, err, sizeof(err)) == 0;
	if (!have && h.b->session != CTL_SESSION_NONE) {
		fprintf(stderr, "ringtrace stat: %s\n", err);
		ctl_close(&h);
		return 1;
	}
	struct ctl_cpu_stat tot = { 0 };
	if (json)
		printf("{\"pid\":%d,\"tracing\":%s,\"cpus\":[", (int)h.pid, h.b->tracing ? "true" : "false");
	else if (!have)
		printf("process %d (%s): tracing %s, no buffers\n", (int)h.pid, comm_of(h.b, comm),
		       h.b->tracing ? "on" : "off");
	else {
		char sz[32];
		printf("process %d (%s): tracing %s, %s mode, %u x %s sub-buffers per CPU%s\n", (int)h.pid,
		       comm_of(h.b, comm), h.b->tracing ? "on" : "off",
		       ring.rb->mode == RINGTRACE__MODE_OVERWRITE ? "overwrite" : "discard", 1u << ring.rb->nsb_shift,
		       cli_bytes(ring.rb->sb_mask + 1, sz, sizeof(sz)),
		       h.b->session == CTL_SESSION_RECORDER ? ", buffers of ringtrace record" : "");
		printf("%5s %12s %12s %10s %14s %12s %14s %12s\n", "CPU", "IN-BUFFER", "WRITTEN", "LOST-FULL",
		       "LOST-OVERWRITE", "LOST-TOO-BIG", "BYTES", "SUBBUFS-READ");
	}
	for (uint32_t c = 0; have && c < ring.rb->ncpus; c++) {
		struct ctl_cpu_stat s;
		ctl_ring_cpu_stat(ring.rb, c, &s);
		ctl_cpu_stat_add(&tot, &s);
		if (json)
			printf("%s{\"cpu\":%u,\"in_buffer\":%llu,\"written\":%llu,\"lost_full\":%llu,\"lost_overwrite\":%llu,\"lost_too_big\":%llu,\"lost_no_rseq\":%llu,\"bytes\":%llu,\"subbuffers_read\":%llu,\"events_read\":%llu}",
			       c ? "," : "", c, (unsigned long long)s.in_buffer, (unsigned long long)s.written,
			       (unsigned long long)s.lost_full, (unsigned long long)s.lost_overwrite,
			       (unsigned long long)s.lost_too_big, (unsigned long long)s.lost_nocpu,
			       (unsigned long long)s.bytes, (unsigned long long)s.read_subbufs,
			       (unsigned long long)s.read_events);
		else
			printf("%5u %12llu %12llu %10llu %14llu %12llu %14llu %12llu\n", c,
			       (unsigned long long)s.in_buffer, (unsigned long long)s.written,
			       (unsigned long long)s.lost_full, (unsigned long long)s.lost_overwrite,
			       (unsigned long long)s.lost_too_big, (unsigned long long)s.bytes,
			       (unsigned long long)s.read_subbufs);
	}
	if (json) {
		printf("],\"total\":{\"in_buffer\":%llu,\"written\":%llu,\"lost_full\":%llu,\"lost_overwrite\":%llu,\"lost_too_big\":%llu,\"lost_no_rseq\":%llu,\"bytes\":%llu,\"subbuffers_read\":%llu,\"events_read\":%llu,"
		       "\"blocking_timeout_us\":%u,\"blocked_events\":%llu,\"blocked_ns\":%llu,\"blocked_timeouts\":%llu}}\n",
		       (unsigned long long)tot.in_buffer, (unsigned long long)tot.written,
		       (unsigned long long)tot.lost_full, (unsigned long long)tot.lost_overwrite,
		       (unsigned long long)tot.lost_too_big, (unsigned long long)tot.lost_nocpu,
		       (unsigned long long)tot.bytes, (unsigned long long)tot.read_subbufs,
		       (unsigned long long)tot.read_events, have ? ring.rb->block_us : 0,
		       (unsigned long long)tot.block_waits, (unsigned long long)tot.block_ns,
		       (unsigned long long)tot.block_timeouts);
	} else if (have) {
		printf("%5s %12llu %12llu %10llu %14llu %12llu %14llu %12llu\n", "total",
		       (unsigned long long)tot.in_buffer, (unsigned long long)tot.written,
		       (unsigned long long)tot.lost_full, (unsigned long long)tot.lost_overwrite,
		       (unsigned long long)tot.lost_too_big, (unsigned long long)tot.bytes,
		       (unsigned long long)tot.read_subbufs);
		if (tot.lost_nocpu)
			printf("lost from threads without rseq: %llu\n", (unsigned long long)tot.lost_nocpu);
		if (ring.rb->block_us || tot.block_waits)
			printf("waits for room (blocking timeout %u us): %llu events waited, %.3f ms in all, %llu timed out\n",
			       ring.rb->block_us, (unsigned long long)tot.block_waits, (double)tot.block_ns / 1e6,
			       (unsigned long long)tot.block_timeouts);
	}
	if (have)
		ctl_ring_close(&ring);
	ctl_close(&h);
	return 0;
}
