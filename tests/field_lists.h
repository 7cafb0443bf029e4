// Test helpers over the sim's field lists (lockstep/sim/fields.h): the leaves of a definition,
// a changed value for each, bitwise comparison field by field, and the member count of an
// aggregate (so a test can tell that a struct has a member its list lacks).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "lockstep/sim/fields.h"

namespace lockstep::sim::testing {

/// f(dotted name, Field, value&) for every leaf of `object`, depth first: a nested definition in
/// place, of an array of definitions (WorldDef::templates) its first element only.
template <class T, class F>
void for_each_leaf(T& object, F&& f, const std::string& prefix = "") {
  Fields<std::remove_cv_t<T>>::visit([&](const Field& field, auto member) {
    auto& value = object.*member;
    using M = std::remove_cvref_t<decltype(value)>;
    const std::string name = prefix + std::string(field.name);
    if constexpr (kHasFields<M>) {
      for_each_leaf(value, f, name + ".");
    } else if constexpr (std::is_array_v<M> && kHasFields<std::remove_extent_t<M>>) {
      for_each_leaf(value[0], f, name + "[0].");
    } else {
      f(name, field, value);
    }
  });
}

/// A value other than `value`, valid where the field's checks allow it: floats half again
/// (0 → 0.25), u32 plus one, bools flipped, enums the next value (wrapping), names another valid
/// name, rotations another unit quaternion.
template <class T>
void change_value(T& value) {
  if constexpr (std::is_same_v<T, float>) {
    value = value == 0.0f ? 0.25f : value * 1.5f;
  } else if constexpr (std::is_same_v<T, Vec3>) {
    change_value(value.x);
    change_value(value.y);
    change_value(value.z);
  } else if constexpr (std::is_same_v<T, Quat>) {
    value = value.z == 0.6f ? Quat{} : Quat{0, 0, 0.6f, 0.8f};
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    value = value + 1;
  } else if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (std::is_enum_v<T>) {
    value = static_cast<T>((static_cast<size_t>(value) + 1) % enum_names(value).size());
  } else if constexpr (std::is_array_v<T> && !std::is_same_v<T, char[kMaxTemplateNameBytes + 1]>) {
    change_value(value[0]);  // a list of values (a hull's points): its first
  } else {
    static_assert(std::is_same_v<T, char[kMaxTemplateNameBytes + 1]>, "a field type to change");
    value[0] = value[0] == 'a' ? 'b' : 'a';
  }
}

/// Every leaf of `object` changed (change_value).
template <class T>
void change_every_leaf(T& object) {
  for_each_leaf(object, [](const std::string&, const Field&, auto& value) { change_value(value); });
}

/// Dotted name of the first field whose bits differ between a and b ("" when none does); of an
/// array of definitions every element is compared.
template <class T>
std::string first_difference(const T& a, const T& b) {
  std::string found;
  Fields<T>::visit([&](const Field& field, auto member) {
    const auto& va = a.*member;
    const auto& vb = b.*member;
    using M = std::remove_cvref_t<decltype(va)>;
    if (!found.empty()) return;
    if constexpr (kHasFields<M>) {
      const std::string inner = first_difference(va, vb);
      if (!inner.empty()) found = std::string(field.name) + "." + inner;
    } else if constexpr (std::is_array_v<M> && kHasFields<std::remove_extent_t<M>>) {
      for (size_t i = 0; i < std::extent_v<M> && found.empty(); ++i) {
        const std::string inner = first_difference(va[i], vb[i]);
        if (!inner.empty())
          found = std::string(field.name) + "[" + std::to_string(i) + "]." + inner;
      }
    } else if (std::memcmp(&va, &vb, sizeof(M)) != 0) {
      found = std::string(field.name);
    }
  });
  return found;
}

// Converts to anything: T{{AnyMember{}}, ...} compiles with as many braces as T has members.
struct AnyMember {
  template <class T>
  constexpr operator T() const {
    return T{};
  }
};
template <size_t>
using AnyMemberAt = AnyMember;

template <class T, size_t... I>
constexpr bool brace_initializable(std::index_sequence<I...>) {
  return requires {
    T{{AnyMemberAt<I>{}}...};
  };
}

/// Number of members of the aggregate T (each member in braces of its own, so an array member
/// counts once).
template <class T, size_t N = 0>
constexpr size_t member_count() {
  if constexpr (brace_initializable<T>(std::make_index_sequence<N + 1>{})) {
    return member_count<T, N + 1>();
  } else {
    return N;
  }
}

}  // namespace lockstep::sim::testing
