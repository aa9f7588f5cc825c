/* core/store_delta_internal.h - a snapshot encoded against a base snapshot, as a safetensors-storable snapshot (internal). */
#ifndef GCK_STORE_DELTA_INTERNAL_H
#define GCK_STORE_DELTA_INTERNAL_H

#include <stdint.h>

#include <gradckpt/snapshot.h>
#include <gradckpt/store.h>

#include "status_internal.h"

/* "gradckpt." key of the delta description in a delta file's metadata. */
#define GCK_DELTA_KEY "gradckpt.delta"

/* Elements per chunk: a delta is decoded chunk by chunk (each chunk's planes
 * decoded, then unshuffled, while in cache), and a rANS plane is one block
 * per chunk (1 MiB of a plane: its frequency table costs under 0.1 %).
 * Recorded in every delta (older files: 32768 and 131072), so it may change
 * without breaking old files; readers accept up to this. 1 Mi rather than
 * 128 Ki elements: htscodecs' 32-way rANS decodes 1 MiB blocks at 2.0 GB/s
 * and 64 KiB ones at 1.2 (the Intel VM), and restores took 4-11 % less time
 * on every store sequence, 1 and 2 threads, for 8 MiB of chunk buffer per
 * decoding thread. */
#define GCK_DELTA_CHUNK 1048576

/* Reusable compression state (zstd contexts and chunk buffers). */
typedef struct gck_delta_codec gck_delta_codec;

/* level: zstd's, for planes with long runs (and every coded plane with
 * coder GCK_STORE_CODER_ZSTD); a build without zstd ignores it. entropy_max:
 * byte planes whose sampled order-0 entropy (as a fraction of 8 bits)
 * exceeds it are stored raw. coder: GCK_STORE_CODER_AUTO (rANS, Huffman or
 * zstd chosen per plane) or GCK_STORE_CODER_ZSTD. */
GCK_INTERNAL gck_status gck_delta_codec_create(int level, double entropy_max, int coder, gck_delta_codec **out);
GCK_INTERNAL void gck_delta_codec_destroy(gck_delta_codec *c);
/* 1 when this build can compress and decompress zstd payloads. */
GCK_INTERNAL int gck_delta_have_zstd(void);
/* 1 when this build can code and decode rANS planes (htscodecs). */
GCK_INTERNAL int gck_delta_have_rans(void);

/*
 * Encodes target against base (NULL: no base, every tensor stored whole)
 * into a new file at path, written with gck_write_unsynced (*fd left open,
 * unsynced; on error no file is left): a snapshot file with target's step, timestamp, loss cid and
 * metadata, one U8 payload tensor "d/<i>" (i zero-padded) per changed tensor or blob, and a
 * GCK_DELTA_KEY entry listing every tensor and blob of target as
 *   ref - same dtype, shape and content id as the base's: no payload;
 *   xor - same dtype and byte size as the base's: byte planes of (value bits
 *         XOR base bits);
 *   raw - new or resized: byte planes of the value bits.
 * An item's planes are one payload tensor "d/<i>", each plane in it coded
 * with what its sample says pays (raw bytes, rANS order-0 blocks, a zstd
 * frame of Huffman literals or at the configured level; see store_delta.c).
 * With base NULL (a compressed full version) every item is raw and
 * base_version is 0.
 * Byte planes are formed from the little-endian bytes on any CPU. The items
 * are coded on the OpenMP threads and each item's payload written as soon
 * as it and those before it are coded; the header, padded with spaces to
 * the length it would have with every plane at its longest, last.
 * With `adopt` (base non-NULL, owning its buffers, gck_snapshot_same_layout
 * as target) each xor item's values are also copied into the base's, right
 * after their planes are formed, while both are in cache: afterwards base
 * holds target's values (ref items are equal already) but still its own
 * ids and fields (gck_snapshot_overwrite_ids completes it). That fuses the
 * store's copy of a saved snapshot into its in-memory base with the
 * encoder's pass over the same bytes. On failure base is partly
 * overwritten: the caller must no longer take it for the base version.
 */
GCK_INTERNAL gck_status gck_delta_write(gck_delta_codec *c, const gck_snapshot *target, gck_snapshot *base,
                                        int adopt, uint64_t base_version, const char *path, int *fd);

/* Rebuilds the target from a loaded delta and its base, the content of
 * version base_version (NULL only when the delta has no ref/xor items).
 * With `check` every rebuilt tensor is hashed and GCK_ERR_CORRUPT when its
 * content id differs from the recorded one; without it the recorded ids are
 * taken unchecked (for a base rebuilt only to rebuild a checked version on
 * it: each of that version's tensors is hashed, so a wrong byte of the base
 * it uses is found there). GCK_ERR_CORRUPT also when the delta records
 * another base or its description is malformed. */
GCK_INTERNAL gck_status gck_delta_decode(gck_delta_codec *c, const gck_snapshot *delta, const gck_snapshot *base, int check,
                                         uint64_t base_version, gck_snapshot **out);

/* ---- one item at a time, into the caller's memory ---- */

enum { GCK_DELTA_REF, GCK_DELTA_XOR, GCK_DELTA_RAW }; /* gck_delta_item.enc */

/* One tensor or blob of a delta, as its description records it. */
typedef struct gck_delta_item {
    const char *name; /* the tensor's name, or the blob's parameter name */
    int blob;
    gck_dtype dtype;
    size_t nbytes;
    int enc;          /* GCK_DELTA_REF: as in the base; XOR: planes XOR the base; RAW: planes alone */
    int rot;          /* the planes are of the values rotated left one bit (gck_xor_shuffle_rot) */
    const char *cid;  /* of the rebuilt bytes */
    int64_t shape[GCK_MAX_DIMS]; /* tensors: the shape (blobs: ndim 0) */
    size_t ndim;
} gck_delta_item;

/* A loaded delta's description, every item parsed and its planes checked
 * against the payload tensors (sizes included) - what can be checked before
 * any byte is decoded. The delta snapshot must outlive the index.
 * GCK_ERR_CORRUPT as gck_delta_decode (another base, malformed items). */
typedef struct gck_delta_index gck_delta_index;
GCK_INTERNAL gck_status gck_delta_index_open(const gck_snapshot *delta, uint64_t base_version,
                                             gck_delta_index **out);
GCK_INTERNAL void gck_delta_index_free(gck_delta_index *x);
/* The item of that kind and name, or NULL. */
GCK_INTERNAL const gck_delta_item *gck_delta_index_find(const gck_delta_index *x, int blob, const char *name);

/* Decodes an item of x into dst (it->nbytes, this CPU's byte order): RAW
 * writes its planes' values; XOR turns dst, which must hold the base's
 * bytes, into the item's (in place, a chunk at a time through the codec's
 * decoding slot `slot`, see gck_delta_decode_threads); REF leaves dst as
 * it is. The content id is not checked here. GCK_ERR_CORRUPT (a damaged
 * zstd stream) leaves dst partly decoded. Items may be decoded at once on
 * different slots; the index is only read. */
GCK_INTERNAL gck_status gck_delta_decode_into(gck_delta_codec *c, int slot, const gck_delta_index *x,
                                              const gck_delta_item *it, void *dst);
/* The OpenMP threads worth using to rebuild m items of `bytes` bytes in
 * all one at a time (1 when there is little to do), in *threads, with a
 * decoding slot made for each: a call of decode_into on thread t of
 * such a team passes slot t (slots are not shared between calls running at
 * once; 0 outside a parallel region). GCK_ERR_OUT_OF_MEMORY if a slot
 * cannot be made (*threads is then still the count wanted). */
GCK_INTERNAL gck_status gck_delta_decode_threads(gck_delta_codec *c, size_t bytes, size_t m, int *threads);
/* This thread's slot: its number in the OpenMP team, 0 outside one. */
GCK_INTERNAL int gck_delta_slot(void);

#endif /* GCK_STORE_DELTA_INTERNAL_H */
