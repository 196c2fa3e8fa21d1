/* Lingering close: a connection answered before its body was read (a 413 from Content-Length,
 * a 404 with a body, a chunked body over the limit) is closed by libmicrohttpd with that body
 * still arriving. Closing a socket with unread data makes the kernel send a reset, and a client
 * still uploading (curl without Expect: 100-continue, most HTTP libraries under 1 MiB) then
 * reports "connection reset" instead of the answer it was sent. As nginx does, the socket is
 * kept open a bounded while after the answer and what comes in is read and thrown away, until
 * the client closes its side. */
#ifndef HF_GATEWAY_LINGER_H
#define HF_GATEWAY_LINGER_H

#include <stdbool.h>
#include <stddef.h>

/* At most this many sockets linger at once; past it a socket closes as before (a reset). */
#define HF_GW_LINGER_MAX 256
/* A lingering socket is closed this long after its answer, whatever the client still sends. */
#define HF_GW_LINGER_MS 5000

bool hf_gw_linger_start(char *err, size_t errlen);
/* Takes a duplicate of fd, which its owner may close at once: the socket lives on until the
 * client ends its side, the deadline passes, or hf_gw_linger_stop. */
void hf_gw_linger_adopt(int fd);
/* Closes every lingering socket and stops the thread. */
void hf_gw_linger_stop(void);

#endif /* HF_GATEWAY_LINGER_H */
