/* libpq, loaded when a PostgreSQL store is first opened rather than linked: the PKCS#11 module
 * goes into every program that uses the token (browsers, ssh, openssl), and linking libpq would
 * load its dependencies (Kerberos, LDAP, GnuTLS, p11-kit) into each of them, for a store most of
 * them never use. A core file that calls libpq includes this header instead of <libpq-fe.h> and
 * calls hf_pq_load() before its first PQ function: each PQ name below is then the pointer loaded
 * here. A PQ function not listed is a link error in the module, never a silent dependency. */
#ifndef HF_PQ_API_H
#define HF_PQ_API_H

#include <libpq-fe.h>

#include "pkcs11/core/core.h"

#define HF_PQ_FUNCTIONS(X)                                                                         \
    X(PQclear)                                                                                     \
    X(PQcmdStatus)                                                                                 \
    X(PQcmdTuples)                                                                                 \
    X(PQconnectdbParams)                                                                           \
    X(PQconninfoFree)                                                                              \
    X(PQconninfoParse)                                                                             \
    X(PQconsumeInput)                                                                              \
    X(PQdb)                                                                                        \
    X(PQerrorMessage)                                                                              \
    X(PQexec)                                                                                      \
    X(PQexecParams)                                                                                \
    X(PQexecPrepared)                                                                              \
    X(PQfinish)                                                                                    \
    X(PQfreemem)                                                                                   \
    X(PQgetResult)                                                                                 \
    X(PQgetisnull)                                                                                 \
    X(PQgetlength)                                                                                 \
    X(PQgetvalue)                                                                                  \
    X(PQhost)                                                                                      \
    X(PQisBusy)                                                                                    \
    X(PQnotifies)                                                                                  \
    X(PQntuples)                                                                                   \
    X(PQport)                                                                                      \
    X(PQprepare)                                                                                   \
    X(PQresultErrorField)                                                                          \
    X(PQresultStatus)                                                                              \
    X(PQsendPrepare)                                                                               \
    X(PQsendQuery)                                                                                 \
    X(PQsendQueryPrepared)                                                                         \
    X(PQsetNoticeProcessor)                                                                        \
    X(PQsocket)                                                                                    \
    X(PQstatus)                                                                                    \
    X(PQtransactionStatus)                                                                         \
    X(PQunescapeBytea)

struct hf_pq_api {
#define HF_PQ_MEMBER(name) __typeof__(name) *name;
    HF_PQ_FUNCTIONS(HF_PQ_MEMBER)
#undef HF_PQ_MEMBER
};
extern struct hf_pq_api hf_pq;

/* Loads libpq once per process (never unloaded): CKR_OK, or CKR_FUNCTION_NOT_SUPPORTED (logged)
 * when it is not installed or lacks a function. */
CK_RV hf_pq_load(void);

#ifndef HF_PQ_API_IMPL
#define PQclear (hf_pq.PQclear)
#define PQcmdStatus (hf_pq.PQcmdStatus)
#define PQcmdTuples (hf_pq.PQcmdTuples)
#define PQconnectdbParams (hf_pq.PQconnectdbParams)
#define PQconninfoFree (hf_pq.PQconninfoFree)
#define PQconninfoParse (hf_pq.PQconninfoParse)
#define PQconsumeInput (hf_pq.PQconsumeInput)
#define PQdb (hf_pq.PQdb)
#define PQerrorMessage (hf_pq.PQerrorMessage)
#define PQexec (hf_pq.PQexec)
#define PQexecParams (hf_pq.PQexecParams)
#define PQexecPrepared (hf_pq.PQexecPrepared)
#define PQfinish (hf_pq.PQfinish)
#define PQfreemem (hf_pq.PQfreemem)
#define PQgetResult (hf_pq.PQgetResult)
#define PQgetisnull (hf_pq.PQgetisnull)
#define PQgetlength (hf_pq.PQgetlength)
#define PQgetvalue (hf_pq.PQgetvalue)
#define PQhost (hf_pq.PQhost)
#define PQisBusy (hf_pq.PQisBusy)
#define PQnotifies (hf_pq.PQnotifies)
#define PQntuples (hf_pq.PQntuples)
#define PQport (hf_pq.PQport)
#define PQprepare (hf_pq.PQprepare)
#define PQresultErrorField (hf_pq.PQresultErrorField)
#define PQresultStatus (hf_pq.PQresultStatus)
#define PQsendPrepare (hf_pq.PQsendPrepare)
#define PQsendQuery (hf_pq.PQsendQuery)
#define PQsendQueryPrepared (hf_pq.PQsendQueryPrepared)
#define PQsetNoticeProcessor (hf_pq.PQsetNoticeProcessor)
#define PQsocket (hf_pq.PQsocket)
#define PQstatus (hf_pq.PQstatus)
#define PQtransactionStatus (hf_pq.PQtransactionStatus)
#define PQunescapeBytea (hf_pq.PQunescapeBytea)
#endif

#endif
