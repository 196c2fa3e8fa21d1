/* The gateway's log in a temp file for a CUnit suite that reads what the gateway logs (refusal
 * summaries without a module, refused reply headers): opened by the suite's init, closed and
 * removed by its clean. */
#ifndef HF_TEST_GW_LOG_H
#define HF_TEST_GW_LOG_H

int hf_test_gw_log_init(void);
int hf_test_gw_log_clean(void);
const char *hf_test_gw_log_path(void);

#endif
