/* policy_file (config.h): an endpoint's Key Access Justification policies kept in a file of
 * their own, one [key:PATH] section per key with the options a "key.PATH." line takes, read
 * with libinih as holdfastd reads its own config file. */
#include "hf-build.h"

#include "gateway/plugins/gcp-ekm/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "gateway/plugin.h"
#include "gateway/plugins/gcp-ekm/request.h"

struct load {
    struct hf_ekm_endpoint *ep;
    char why[192]; /* the first refusal, without its line */
};

/* libinih's handler: one "name = value" of section "key:PATH"; 0 stops nothing but marks the
 * line (ini_parse answers the first such line), so the first message is kept. */
static int on_line(void *user, const char *section, const char *name, const char *value)
{
    struct load *l = user;
    size_t slen = strlen(section);
    const char *path = slen > 4 ? section + 4 : "";
    size_t len = slen > 4 ? slen - 4 : 0;
    char why[192];
    struct hf_ekm_key *k;

    why[0] = '\0';
    if (strncmp(section, "key:", 4) != 0 || !hf_ekm_key_path_is_valid(path, len)) {
        snprintf(why, sizeof(why), "want sections [key:<keyPath>], keyPath of [A-Za-z0-9._~/-]");
    } else if ((k = hf_ekm_endpoint_key_get(l->ep, path, len, HF_EKM_KEY_FROM_FILE, why,
                                            sizeof(why))) != NULL &&
               hf_ekm_key_attr_set(k, name, value, why, sizeof(why))) {
        return 1;
    }
    if (l->why[0] == '\0') snprintf(l->why, sizeof(l->why), "%s", why);
    return 0;
}

/* It grants access to keys: writable by others, it would let them grant themselves. */
static bool file_is_trusted(FILE *f, const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "policy_file %.200s: not a regular file", path);
        return false;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen, "policy_file %.200s: mode %04o: group- or world-writable; chmod 644",
                 path, (unsigned)(st.st_mode & 07777));
        return false;
    }
    return true;
}

bool hf_ekm_policy_file_load(struct hf_ekm_endpoint *ep, const char *value, char *err,
                             size_t errlen)
{
    struct load l = {.ep = ep};
    FILE *f = NULL;
    bool ok = false;
    int line;

    if (ep->policy_file != NULL) {
        snprintf(err, errlen, "policy_file: one per endpoint (already %.200s)", ep->policy_file);
        return false;
    }
    if ((ep->policy_file = hf_conf_path(value)) == NULL) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    if ((f = fopen(ep->policy_file, "r")) == NULL) {
        snprintf(err, errlen, "policy_file %.200s: %s", ep->policy_file, strerror(errno));
        goto done;
    }
    if (!file_is_trusted(f, ep->policy_file, err, errlen)) goto done;
    line = ini_parse_file(f, on_line, &l);
    if (line > 0)
        snprintf(err, errlen, "%.200s:%d: %s", ep->policy_file, line,
                 l.why[0] ? l.why : "not a line of an ini file");
    else if (line < 0)
        snprintf(err, errlen, "policy_file %.200s: cannot be read", ep->policy_file);
    ok = line == 0;
done:
    if (f != NULL) fclose(f);
    return ok;
}
