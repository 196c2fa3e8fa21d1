/* UUIDs as text, for the plugins whose paths carry them (plugin.h). */
#include "hf-build.h"

#include <ctype.h>

#include "gateway/plugin.h"

HF_PLUGIN_EXPORT bool hf_uuid_text_is_valid(const char *s, size_t len)
{
    if (s == NULL || len != 36) return false;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i])) return false;
    }
    return true;
}
