/* Happens-before annotations for valgrind's helgrind, which does not model the ordering C11
 * atomics give (a refcount, a pointer published with compare-and-swap): without them each such
 * use reads as a race. They cost a few instructions and do nothing outside valgrind. */
#ifndef HF_ANNOTATE_H
#define HF_ANNOTATE_H

#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#endif
#endif
#ifndef ANNOTATE_HAPPENS_BEFORE
#define ANNOTATE_HAPPENS_BEFORE(obj) ((void)(obj))
#define ANNOTATE_HAPPENS_AFTER(obj) ((void)(obj))
#endif

#endif
