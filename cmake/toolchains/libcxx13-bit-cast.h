// Force-included by wasm32-emscripten.cmake. Debian 12's emscripten (3.1.6) ships libc++ 13,
// which has no std::bit_cast (added in libc++ 14); clang 14 has the builtin it is made of, so
// supply the C++20 declaration only when the library lacks it.
#pragma once
#include <version>
#if !defined(__cpp_lib_bit_cast)
#include <type_traits>
namespace std {
template <class To, class From>
requires(sizeof(To) == sizeof(From) && is_trivially_copyable_v<To> && is_trivially_copyable_v<From>)
    [[nodiscard]] constexpr To bit_cast(const From& from) noexcept {
  return __builtin_bit_cast(To, from);
}
}  // namespace std
#endif
