/* The strict JSON reader every plugin parses its bodies with (declared for plugins in plugin.h:
 * hf_json_parse, hf_json_wipe, hf_json_put_wiped).
 *
 * json-c does the parsing (JSON_TOKENER_STRICT, a depth limit); this file adds what json-c 0.16
 * (Debian 12) lets through:
 * - duplicate keys: json-c keeps the last value silently, so {"plaintext":"a","plaintext":"b"}
 *   would mean whatever the reader after us thinks it means. After the parse, the members the
 *   text has (its ':' outside strings, counted over text json-c has already accepted) are set
 *   against the members the tree kept (every object's length): any difference is a duplicate.
 * - invalid UTF-8: JSON_TOKENER_VALIDATE_UTF8 checks only the shape of sequences, not overlong
 *   forms, surrogates (ED A0..BF) or code points over U+10FFFF, so the text is checked against
 *   RFC 3629 first, and every string the tree holds after (a \u escape can make a lone
 *   surrogate) as well.
 * - leniencies: json-c's strict mode still takes single-quoted keys, NaN, Infinity, "1." and
 *   raw control characters in strings; a lexical pass over the accepted text refuses them.
 * - secrets: json-c frees strings without clearing them, and its tokener keeps the last string
 *   it read in its buffer; the reader clears that buffer, and hf_json_wipe clears a tree. */
#ifndef HF_GATEWAY_JSON_H
#define HF_GATEWAY_JSON_H

#include "gateway/plugin.h"

/* Whether s[0..len) is UTF-8 as RFC 3629 defines it (no overlong form, no surrogate, nothing
 * over U+10FFFF, nothing truncated). */
bool hf_json_utf8_is_valid(const unsigned char *s, size_t len);

#endif /* HF_GATEWAY_JSON_H */
