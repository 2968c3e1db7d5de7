/* progress: a progress bar on stderr for statements that scan for long:
 * partitions and blocks done, MB/s, ETA.
 *
 * The scan engine calls vm_progress_begin with what it will read, then
 * vm_progress_add as it goes (from any thread: the counters are atomic and
 * one thread at a time draws), and the front end calls vm_progress_clear
 * before it shows a result or an error. The bar appears only when enabled
 * (the prompt enables it when stderr is a terminal), only after
 * VM_PROGRESS_DELAY seconds, and is redrawn at most every
 * VM_PROGRESS_EVERY seconds. */
#ifndef COMB_PROGRESS_H
#define COMB_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define VM_PROGRESS_DELAY 0.5
#define VM_PROGRESS_EVERY 0.1

void vm_progress_enable(bool on);
/* Whether a bar may be drawn: a scan need not measure what it will read
 * when none will. */
bool vm_progress_enabled(void);

/* A scan of this many partitions, blocks and bytes begins (a total may be
 * 0 when unknown); what names it ("scan", a store's name). */
void vm_progress_begin(const char *what, uint64_t parts, uint64_t blocks, uint64_t bytes);
/* This much more is done. */
void vm_progress_add(uint64_t parts, uint64_t blocks, uint64_t bytes);
/* The scan is over: erase the bar if it was drawn. Harmless when none. */
void vm_progress_clear(void);

/* For tests: the bar's stream (default stderr), clock in seconds (default
 * monotonic), and width in columns (0: the terminal's, else 80). */
void vm_progress_setup(FILE *out, double (*clock)(void), int width);

#endif
