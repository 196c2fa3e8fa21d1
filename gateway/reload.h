/* The current generation and SIGHUP. Requests take the current generation without a lock in
 * the steady state: each worker thread keeps a reference to the generation it last saw, and only
 * takes the swap lock when a reload has happened since. */
#ifndef HF_GATEWAY_RELOAD_H
#define HF_GATEWAY_RELOAD_H

#include "gateway/plugins.h"

/* Installs the first generation (takes the reference). */
void hf_gw_reload_install(struct hf_gw_generation *gen);
/* The current generation with a reference for the caller (hf_gw_generation_unref), or NULL
 * after hf_gw_reload_shutdown. */
struct hf_gw_generation *hf_gw_current_acquire(void);
/* Re-reads path and swaps in a new generation; on any error keeps the current one and says why
 * in err. Reopens the log, flushes the key cache. */
bool hf_gw_reload(const char *path, char *err, size_t errlen);
/* Drops the current generation (the threads' cached references go when the threads end). */
void hf_gw_reload_shutdown(void);

#endif /* HF_GATEWAY_RELOAD_H */
