/* Locked memory for unwrapped key material: mlock'd (never swapped), excluded from core dumps
 * (MADV_DONTDUMP), zero in a forked child (MADV_WIPEONFORK), zeroed on free. Served from page-sized
 * arenas so many small AES keys share a page. When RLIMIT_MEMLOCK is exhausted it still returns
 * memory (zeroed on free) and logs one warning, rather than failing key operations. Thread-safe. */
#ifndef HF_SECMEM_H
#define HF_SECMEM_H

#include <stddef.h>

void *hf_secmem_alloc(size_t len);          /* zero-filled; NULL on failure */
void hf_secmem_free(void *ptr, size_t len); /* cleanses len bytes; NULL is fine */

#endif
