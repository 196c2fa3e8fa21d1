/* A keyed audit stream's chain key (audit.h: the keyed chain), as the writer holds it.
 *
 * Record i of a stream is MACed under k_e, e = i / every (every: the stream-open's
 * "ratchet_every"; logs written before it was recorded have 1). After a key's last record the key
 * is ratcheted, k_{e+1} = SHA-256("holdfast-audit-ratchet" || k_e), and k_e is overwritten: a
 * reader of the process's memory can rewrite at most the last every-1 records of a stream.
 * Ratcheting less often than per record is what makes the MAC cheap: HMAC's two pad blocks are
 * hashed once per key, not once per record (the writer hashes as many blocks as the unkeyed
 * SHA-256 chain did, plus one). */
#ifndef HF_AUDIT_KEY_H
#define HF_AUDIT_KEY_H

#include <stdbool.h>
#include <stddef.h>

#define HF_AUDIT_KEY_LEN 32
#define HF_AUDIT_RATCHET_EVERY 32u

struct hf_audit_key;

/* A chain key starting at k0, in hf_secmem memory; NULL when out of memory. */
struct hf_audit_key *hf_audit_key_new(const unsigned char k0[HF_AUDIT_KEY_LEN], unsigned every);
void hf_audit_key_free(struct hf_audit_key *key);

/* out = HMAC-SHA-256(the current key, prev || line[0..len)); then counts the record, ratcheting
 * after the key's last one. */
void hf_audit_key_mac(struct hf_audit_key *key, const unsigned char prev[HF_AUDIT_KEY_LEN],
                      const char *line, size_t len, unsigned char out[HF_AUDIT_KEY_LEN]);

/* k = SHA-256("holdfast-audit-ratchet" || k), in place: the one step shared with the verifier. */
void hf_audit_key_ratchet(unsigned char k[HF_AUDIT_KEY_LEN]);

#endif
