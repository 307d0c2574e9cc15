/*
 * report_html.h - `ringtrace report DIR --html -o FILE`: the allocation
 * report as one self-contained HTML page (report_html.c).
 *
 * cmd_report.c calls report_html_init() before the replay, feeds every
 * item of the trace to report_html_item() and the heap after every mem
 * event to report_html_heap(), then writes the page with
 * report_html_write() from the rows it printed as text or JSON.
 */
#ifndef RINGTRACE_CLI_REPORT_HTML_H
#define RINGTRACE_CLI_REPORT_HTML_H

#include <stdint.h>
#include <stdio.h>

struct report;
struct aggtab;
struct rd_item;
struct sym_ctx;
struct stack_files;

/* Allocate the heap and event-rate series of `r` (r->heap, r->rates);
 * -ENOMEM. */
int report_html_init(struct report *r);
/* Free them (NULL-safe; report_free calls it). */
void report_html_free(struct report *r);

/* The live heap after a mem event at `ns` (r->t0_ns set). */
void report_html_heap(struct report *r, int64_t ns);
/* Any item of the trace: an event counts for its type, a loss is added
 * up. -ENOMEM (the rates then miss the item). */
int report_html_item(struct report *r, const struct rd_item *it);

/*
 * The page. `sites` are the rows by call site (or by function, r->by 2),
 * `stacks` by stack or NULL; both named and sorted as the text report
 * sorts them. Without mem events (and no aggregate counters) the page has
 * the event rates alone. 0, or -ENOMEM (the page is then incomplete).
 * Write errors are the caller's to check on `o`.
 */
int report_html_write(FILE *o, struct report *r, struct aggtab *sites, struct aggtab *stacks,
		      struct sym_ctx *ctx, const struct stack_files *sf, const char *dir);

#endif /* RINGTRACE_CLI_REPORT_HTML_H */
