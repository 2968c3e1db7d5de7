/* journal: the dispatcher's durable state, an append-only file of checksummed
 * records, replayed on start and compacted by snapshot + rename.
 *
 * A record is one line: the payload (no newline), a space, '#', and the 16 hex
 * digits of the payload's XXH3-64 checksum. The first record is the header
 * "comb-jobs-journal 1". The journal knows nothing of what records mean: the
 * dispatcher writes them (jobs/model.c) and applies them on replay (jobs/replay.c).
 *
 * Durability: appends are buffered; jnl_sync writes and fdatasyncs them. Only
 * the last record may be damaged (a crash mid-append): replay truncates it
 * and says so in the note. A bad record with good ones after it is corruption
 * and stops the open with an error naming the file and offset. Compaction
 * writes the whole state to PATH.tmp, fsyncs it, renames it over PATH and
 * fsyncs the directory, so a crash leaves either journal, never half of one. */
#ifndef COMB_JOBS_JOURNAL_H
#define COMB_JOBS_JOURNAL_H

#include <stddef.h>

typedef struct journal journal;

/* Applies one replayed record (NUL-terminated, may be modified in place).
 * Returns 0, or -1 with a reason in err to stop the replay. */
typedef int (*jnl_apply_fn)(void *ctx, char *rec, char *err, size_t errlen);

/* Opens (creating if absent) and replays the journal at path. On success a
 * truncated torn tail is described in note (else note is ""). On failure
 * returns NULL with the reason in err. */
journal *jnl_open(const char *path, jnl_apply_fn apply, void *ctx, char *note, size_t notelen,
              char *err, size_t errlen);
/* Closes; what was appended but not flushed is dropped, as a crash would. */
void jnl_close(journal *j);

/* Buffers one record of len bytes (no newline inside). 0, or -1 (memory). */
int jnl_append(journal *j, const char *rec, size_t len);
/* Writes the buffered records; jnl_sync also makes them durable. A no-op
 * when there is nothing new. 0, or -1 with the reason in jnl_error. */
int jnl_flush(journal *j);
int jnl_sync(journal *j);

/* Compaction: after jnl_snapshot_begin (which syncs first), appends build the
 * new journal; jnl_snapshot_commit replaces the old one atomically, or
 * jnl_snapshot_abort drops the new one and keeps appending to the old. */
int jnl_snapshot_begin(journal *j);
int jnl_snapshot_commit(journal *j);
void jnl_snapshot_abort(journal *j);

/* The framing, for other files of such records (the exit log, jobs/exitlog.h):
 * jnl_seal writes the JNL_SEAL_LEN bytes that follow a record's len bytes
 * (" #", the checksum, "\n"); it only computes, so a forked child may call
 * it. jnl_line_ok checks a line (without its "\n") and cuts it to the record. */
#define JNL_SEAL_LEN 19
void jnl_seal(const char *rec, size_t len, char *out);
int jnl_line_ok(char *line, size_t len);

/* True while something appended is not yet durable. */
int jnl_dirty(const journal *j);

/* Records in the file since it was opened or last compacted. */
size_t jnl_records(const journal *j);
const char *jnl_error(const journal *j);

#endif
