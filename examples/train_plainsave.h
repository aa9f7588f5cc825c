/* examples/train_plainsave.h - the demo's --save-plain: the run's state written as one plain file
 * per save on a thread of its own, the floor of what a durable asynchronous save costs here. */
#ifndef GCK_TRAIN_PLAINSAVE_H
#define GCK_TRAIN_PLAINSAVE_H

#include <stddef.h>

typedef struct train_plainsave train_plainsave;

/* A writer of files DIR/plain-<k>.bin of `bytes` bytes each, keeping the last `keep` of them (the
 * store's default policy keeps ten versions). Returns NULL (with a message on stderr) on failure. */
train_plainsave *train_plainsave_start(const char *dir, size_t bytes, unsigned keep);
/* Waits for the write in flight, copies the n blocks (their sizes summing to at most `bytes`) into
 * the writer's buffer and hands it to its thread: write, fsync of the file and of the directory,
 * then the file from `keep` saves ago unlinked, as the store's save does. -1 when a write failed. */
int train_plainsave_put(train_plainsave *p, const void *const *blocks, const size_t *sizes, size_t n);
/* Waits for the last write, ends the thread and frees p; -1 when a write failed. NULL is ignored. */
int train_plainsave_end(train_plainsave *p);

#endif /* GCK_TRAIN_PLAINSAVE_H */
