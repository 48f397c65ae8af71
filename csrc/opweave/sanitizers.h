// Which sanitizer this file is compiled under, for code that must behave differently under one:
// OPWEAVE_TSAN / OPWEAVE_ASAN are defined (to 1) under ThreadSanitizer / AddressSanitizer, and
// kThreadSanitizer / kAddressSanitizer say the same for `if constexpr`. GCC announces sanitizers
// with __SANITIZE_*__ macros, Clang through __has_feature.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define OPWEAVE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OPWEAVE_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define OPWEAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPWEAVE_ASAN 1
#endif
#endif

namespace opweave {

#if defined(OPWEAVE_TSAN)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

#if defined(OPWEAVE_ASAN)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace opweave
