/* util_map.h: the one hash map of mate, uint64 key -> uint64 value (live allocations, thread ids, streams); inline, as the recorder's allocation path uses it; never installed. */
#ifndef MATE_UTIL_MAP_H_INCLUDED
#define MATE_UTIL_MAP_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Open addressing with linear probing over a power-of-two table, grown
 * twice as large when it would be more than half full. Key 0 marks an empty
 * slot, so the entry of key 0 (a thread id or a stream may be 0) is kept
 * beside the table. Deletion shifts the rest of the probe chain back, so
 * lookups never meet a hole and no tombstones build up.
 * A zeroed struct is an empty map; mate_map_free() makes it one again. */
struct mate_map {
	uint64_t *keys, *vals;
	size_t cap;                    /* slots: 0 or a power of two */
	size_t n;                      /* keys in the table (key 0 not counted) */
	int has_zero;                  /* key 0 is present, with zero_val */
	uint64_t zero_val;
};

#define MATE_MAP_FIRST 64              /* slots of the first table */

/* The home slot of key (the finaliser of MurmurHash3, enough to spread
 * aligned pointers). */
static inline size_t
mate_map_home(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

/* The number of entries. */
static inline size_t
mate_map_count(const struct mate_map *m)
{
	return m->n + (m->has_zero != 0);
}

/* Moves every entry into a table twice as large; -1 without memory (the
 * map is unchanged). */
static inline int
mate_map_grow(struct mate_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : MATE_MAP_FIRST;
	uint64_t *k = (uint64_t *)calloc(cap, sizeof(*k)), *v = (uint64_t *)malloc(cap * sizeof(*v));

	if (k == NULL || v == NULL) {
		free(k);
		free(v);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;
		if (m->keys[i] == 0)
			continue;
		for (j = mate_map_home(m->keys[i], cap); k[j] != 0; j = (j + 1) & (cap - 1))
			;
		k[j] = m->keys[i];
		v[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = k;
	m->vals = v;
	m->cap = cap;
	return 0;
}

/* The value of key, or NULL when absent; valid until the next change. */
static inline uint64_t *
mate_map_get(struct mate_map *m, uint64_t key)
{
	if (key == 0)
		return m->has_zero ? &m->zero_val : NULL;
	if (m->cap == 0)
		return NULL;
	for (size_t j = mate_map_home(key, m->cap); m->keys[j] != 0; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key)
			return &m->vals[j];
	return NULL;
}

/* The value of key, added as 0 when absent; *found says whether it was
 * there. Valid until the next change; NULL without memory. */
static inline uint64_t *
mate_map_put(struct mate_map *m, uint64_t key, int *found)
{
	size_t j;

	if (key == 0) {
		*found = m->has_zero;
		if (!m->has_zero) {
			m->has_zero = 1;
			m->zero_val = 0;
		}
		return &m->zero_val;
	}
	if ((m->n + 1) * 2 > m->cap && mate_map_grow(m) != 0)
		return NULL;
	for (j = mate_map_home(key, m->cap); m->keys[j] != 0; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key) {
			*found = 1;
			return &m->vals[j];
		}
	*found = 0;
	m->keys[j] = key;
	m->vals[j] = 0;
	m->n++;
	return &m->vals[j];
}

/* Removes key: 1 with its value in *val, 0 when absent. */
static inline int
mate_map_take(struct mate_map *m, uint64_t key, uint64_t *val)
{
	size_t j, mask = m->cap - 1;

	if (key == 0) {
		if (!m->has_zero)
			return 0;
		*val = m->zero_val;
		m->has_zero = 0;
		return 1;
	}
	if (m->cap == 0)
		return 0;
	for (j = mate_map_home(key, m->cap); m->keys[j] != key; j = (j + 1) & mask)
		if (m->keys[j] == 0)
			return 0;
	*val = m->vals[j];
	/* Backward shift: a later key of the chain moves into the hole at j
	 * unless its home lies cyclically in (j, i], where a lookup starting
	 * from it would never pass j. */
	for (size_t i = (j + 1) & mask; m->keys[i] != 0; i = (i + 1) & mask) {
		size_t home = mate_map_home(m->keys[i], m->cap);
		if (((i - home) & mask) >= ((i - j) & mask)) {
			m->keys[j] = m->keys[i];
			m->vals[j] = m->vals[i];
			j = i;
		}
	}
	m->keys[j] = 0;
	m->n--;
	return 1;
}

/* The next entry from *pos (0 to start), in no particular order: 1 with
 * *key and *val, 0 at the end. */
static inline int
mate_map_next(const struct mate_map *m, size_t *pos, uint64_t *key, uint64_t *val)
{
	for (; *pos < m->cap; ++*pos)
		if (m->keys[*pos] != 0) {
			*key = m->keys[*pos];
			*val = m->vals[(*pos)++];
			return 1;
		}
	if (*pos == m->cap && m->has_zero) {
		++*pos;
		*key = 0;
		*val = m->zero_val;
		return 1;
	}
	return 0;
}

/* Frees the table; the map is empty again. */
static inline void
mate_map_free(struct mate_map *m)
{
	struct mate_map empty = { 0 };

	free(m->keys);
	free(m->vals);
	*m = empty;
}

#endif
