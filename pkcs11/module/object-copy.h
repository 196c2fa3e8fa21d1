/* Shared by object-copy.c and cert-data-copy.c: a C_CopyObject template read as the change it
 * asks for, by one reader for every class (PKCS#11 2.40 section 4.4's tables, footnote 8). */
#ifndef HF_MODULE_OBJECT_COPY_H
#define HF_MODULE_OBJECT_COPY_H

#include "internal.h"

struct hf_copy_change {
    const CK_ATTRIBUTE *label, *id; /* the template's, borrowed */
    bool has_token, to_token;       /* CKA_TOKEN */
    bool has_private, is_private;
    bool has_fixed, is_fixed; /* CKA_MODIFIABLE, inverted */
    bool seal;                /* keys: CKA_SENSITIVE TRUE or CKA_EXTRACTABLE FALSE */
};

/* A class's answer for an attribute the reader does not take itself: CKR_OK when a is accepted
 * (its own value, or a change the class allows, noted in c), else the CKR_ to return. */
typedef CK_RV (*hf_copy_other_fn)(const void *obj, const CK_ATTRIBUTE *a, struct hf_copy_change *c);

/* CKA_TOKEN, CKA_PRIVATE, CKA_MODIFIABLE, CKA_LABEL and CKA_ID into c; any other attribute is
 * other's (obj passed through). */
CK_RV hf_copy_change_read(const CK_ATTRIBUTE *t, CK_ULONG n, hf_copy_other_fn other,
                          const void *obj, struct hf_copy_change *c);

/* C_CopyObject of the certificate or data object behind h (cert-data-copy.c). */
CK_RV hf_dobj_copy_object(struct hf_session *s, CK_OBJECT_HANDLE h, const CK_ATTRIBUTE *t,
                          CK_ULONG n, CK_OBJECT_HANDLE *out);

#endif
