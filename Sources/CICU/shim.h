#ifndef CICU_SHIM_H
#define CICU_SHIM_H
// ICU's C API for UTS #39 (the spoof checker) and script properties, from Debian's libicu-dev.
// Swift does not import this module: Foundation carries its own ICU (_FoundationICU), whose
// UErrorCode and other types clash with these in one Swift module. CICUShims wraps what the server
// uses behind plain C types.
#include <unicode/uchar.h>
#include <unicode/uscript.h>
#include <unicode/uspoof.h>
#include <unicode/uversion.h>
#endif
