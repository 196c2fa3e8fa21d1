/* tests/unit/gw-log.h */
#include "hf-build.h"

#include "gateway/log.h"
#include "tests/unit/gw-log.h"

#include <stdlib.h>
#include <unistd.h>

static char log_path[] = "/tmp/hf-test-gwlog-XXXXXX";

int hf_test_gw_log_init(void)
{
    char err[256];
    int fd = mkstemp(log_path);

    if (fd < 0) return -1;
    close(fd);
    return hf_gw_log_open(log_path, err, sizeof(err)) ? 0 : -1;
}

int hf_test_gw_log_clean(void)
{
    hf_gw_log_close();
    return unlink(log_path);
}

const char *hf_test_gw_log_path(void)
{
    return log_path;
}
