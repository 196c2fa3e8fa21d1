/* Shared by cert-data.c, cert-data-attrs.c and cert-data-copy.c only: a certificate or data
 * object as a bag of attributes, how a creation template and a store row become one, how one
 * becomes a row, and the create path a copy takes too. */
#ifndef HF_MODULE_CERT_DATA_H
#define HF_MODULE_CERT_DATA_H

#include "internal.h"

struct hf_dobj {
    CK_OBJECT_HANDLE handle;
    CK_ATTRIBUTE *attrs; /* values owned; CKA_CLASS, CKA_TOKEN and CKA_PRIVATE always present */
    size_t n;
    CK_SESSION_HANDLE owner; /* session objects: the maker, and who it was for the records */
    char *api, *caller;
};

void hf_dobj_free(struct hf_dobj *d);
/* The attribute of type (a pointer into the bag: hf_dobj_attr_set may move it), or NULL. */
CK_ATTRIBUTE *hf_dobj_attr(const struct hf_dobj *d, CK_ATTRIBUTE_TYPE type);
/* Sets type to a copy of len bytes at p, replacing an earlier value. */
CK_RV hf_dobj_attr_set(struct hf_dobj *d, CK_ATTRIBUTE_TYPE type, const void *p, size_t len);
CK_RV hf_dobj_attr_bool(struct hf_dobj *d, CK_ATTRIBUTE_TYPE type, bool v);
CK_RV hf_dobj_attr_ulong(struct hf_dobj *d, CK_ATTRIBUTE_TYPE type, CK_ULONG v);
/* A CK_BBOOL attribute that is there and TRUE; a CK_ULONG one's value (0 when absent). */
bool hf_dobj_is_true(const struct hf_dobj *d, CK_ATTRIBUTE_TYPE type);
CK_ULONG hf_dobj_ulong(const struct hf_dobj *d, CK_ATTRIBUTE_TYPE type);
CK_RV hf_dobj_copy(const struct hf_dobj *d, struct hf_dobj **out);
/* The object of a store row (handle included), and the row of an object (row->attrs is the
 * caller's to free; the other pointers are d's). */
CK_RV hf_dobj_from_row(const struct hf_store_object *row, struct hf_dobj **out);
CK_RV hf_dobj_to_row(const struct hf_dobj *d, struct hf_store_object *row);
/* The object a creation template of class cls describes, checked and completed. */
CK_RV hf_dobj_from_template(CK_OBJECT_CLASS cls, const CK_ATTRIBUTE *t, CK_ULONG n,
                            struct hf_dobj **out);

/* A copy of the visible object behind h (the caller's to free). */
CK_RV hf_dobj_get(CK_OBJECT_HANDLE h, struct hf_dobj **out);
/* As the records of session keys, naming the object by handle and class. */
CK_RV hf_dobj_record(const HF_REQUEST_CONTEXT *ctx, const char *operation, const struct hf_dobj *d,
                     const char *detail, CK_RV result);
/* Makes d a token object (CKA_TOKEN TRUE: R/W session and user) or a session object of s, with
 * its creation record (detail ending why, unless NULL). Takes d over, whatever the answer. */
CK_RV hf_dobj_add(struct hf_session *s, struct hf_dobj *d, const char *why, CK_OBJECT_HANDLE *out);

#endif
