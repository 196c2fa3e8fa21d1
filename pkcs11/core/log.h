/* Structured log lines to stderr (or syslog when HOLDFAST_LOG=syslog). Never pass a secret,
 * a PIN or a plaintext. Level from HOLDFAST_LOG_LEVEL (error, warn, info, debug; default warn). */
#ifndef HF_LOG_H
#define HF_LOG_H

enum hf_log_level { HF_LOG_ERROR = 0, HF_LOG_WARN = 1, HF_LOG_INFO = 2, HF_LOG_DEBUG = 3 };

void hf_log(enum hf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define hf_log_error(...) hf_log(HF_LOG_ERROR, __VA_ARGS__)
#define hf_log_warn(...) hf_log(HF_LOG_WARN, __VA_ARGS__)
#define hf_log_info(...) hf_log(HF_LOG_INFO, __VA_ARGS__)
#define hf_log_debug(...) hf_log(HF_LOG_DEBUG, __VA_ARGS__)

#endif
