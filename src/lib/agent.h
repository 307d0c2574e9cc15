/*
 * agent.h - control block and control thread of the traced program.
 */
#ifndef RINGTRACE_LIB_AGENT_H
#define RINGTRACE_LIB_AGENT_H

#include <stdint.h>

#include <ringtrace/ringtrace-abi.h>

/* At start-up: `recorder_rb` is the region of `ringtrace record` (or NULL),
 * mapped at mem/size from descriptor fd (kept open, so that controllers can
 * map it too). Attaches it, publishes the control block, starts the
 * control thread. */
void agent_start(struct ringtrace__rb *recorder_rb, void *mem, uint64_t size, int fd);
/* In the constructor, before agent_start(): read RINGTRACE_FOLLOW (record
 * --follow-fork/--follow-exec), which forked children inherit. */
void agent_follow_init(void);
/* Whether exec'ed programs are followed (this one may be one). */
int agent_follow_exec(void);
/* At exit: remove the control block's name. */
void agent_stop(void);
/* In a forked child: forget (and unmap) the parent's block and regions,
 * then publish the child's own after a short delay, from a new thread. */
void agent_after_fork_child(void);
/* Post a snapshot request for the watcher (ringtrace_snapshot(), or a
 * trigger when `trig`): lock-free, async-signal-safe. 0, or -ENOTSUP when
 * snapshots are not enabled. */
int agent_request_snapshot(int trig);
/* Whether probes of this process may use rseq with this region. */
int agent_rseq_usable(const struct ringtrace__rb *rb);

#endif
