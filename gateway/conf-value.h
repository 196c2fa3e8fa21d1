/* The gateway's side of plugin.h's config value parsers: which directory relative paths are
 * taken from while a config file's lines are handed out. */
#ifndef HF_GATEWAY_CONF_VALUE_H
#define HF_GATEWAY_CONF_VALUE_H

/* hf_conf_path's base on this thread until the next call: the directory of the config file
 * whose lines are being handed to plugins (plugins.c); NULL or "": none (paths stay as given).
 * dir is borrowed: it must outlive the calls that use it. */
void hf_gw_conf_dir_set(const char *dir);

/* value relative to dir (absolute values, and any value when dir is NULL or "", as given): a new
 * string (free()), NULL if out of memory. */
char *hf_gw_conf_path_in(const char *dir, const char *value);

#endif /* HF_GATEWAY_CONF_VALUE_H */
