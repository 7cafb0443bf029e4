// One field list per definition type (ShapeDef, BodyTemplate, BodyDef, WorldDef). The WorldDef
// fingerprint, a body's shape in the state hash and snapshots, validation, the scene text and the
// tests walk these lists instead of naming the fields one by one, so a field added to a struct
// and to its list reaches all of them. tests/sim_fields_test.cpp fails when a struct has a field
// its list lacks; the wire codec (FlatBuffers generates it field by field) is checked against the
// lists by tests/schema_protocol_test.cpp.
//
// Fields<T>::visit(v) calls v(Field, &T::member) once per field: member pointers, so one list
// serves a const object, a mutable one and two objects side by side. for_each_field(object, v)
// calls v(Field, object.member) instead. The order is canonical: the binary encodings write the
// fields in list order, so a new field goes at the end of its list (and changes the fingerprint,
// as it must). The walks are forced inline: the state hash writes a shape per body through one.
//
// A new shape type: its name in kShapeTypeNames, its fields in Fields<ShapeDef> with `shapes`
// naming the types they describe; the encodings, the text format and the checks follow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "lockstep/sim/types.h"

namespace lockstep::sim {

/// How the encodings treat a field (bits of Field::flags).
enum FieldFlags : uint32_t {
  field_plain = 0,
  field_not_simulated = 1u << 0,    // changes no result: left out of the WorldDef fingerprint
  field_text_required = 1u << 1,    // scene text: a line without the key is refused
  field_text_if_changed = 1u << 2,  // scene text: written only when not the default (bit for bit)
  field_text_hex = 1u << 3,         // scene text: a bit set, written as 0x and 8 hex digits
  field_spawn_argument = 1u << 4,   // BodyDef: given by a spawn command, not by its template
  // The binary encodings (state, snapshots, the WorldDef fingerprint) write it only when in use:
  // a ShapeDef field for the shape types in Field::shapes, a WorldDef list when it is not empty.
  // A world without hulls encodes, and hashes, as it did before hulls existed.
  field_encoded_if_used = 1u << 5,
};

/// Field::shapes bit of a shape type.
constexpr uint32_t shape_bit(ShapeType type) {
  return 1u << static_cast<uint32_t>(type);
}
inline constexpr uint32_t kEveryShape = 0xffffffffu;

/// One field of a definition.
struct Field {
  std::string_view name;  // the member's name
  std::string_view key;   // its scene-text key; empty when the text format spells it otherwise
  uint32_t flags = field_plain;
  uint32_t shapes = kEveryShape;  // ShapeDef: the shape types the field describes
};

/// Scene-text names of the enum values, indexed by value; a value past the end is invalid.
inline constexpr std::string_view kBodyTypeNames[] = {"static", "kinematic", "dynamic"};
inline constexpr std::string_view kShapeTypeNames[] = {
    "sphere", "box", "capsule", "plane", "hull", "compound", "mesh", "heightfield"};

constexpr std::span<const std::string_view> enum_names(BodyType) {
  return kBodyTypeNames;
}
constexpr std::span<const std::string_view> enum_names(ShapeType) {
  return kShapeTypeNames;
}

/// True when `raw` is a value of the enum E (binary decoders check bytes with it).
template <class E>
constexpr bool valid_enum_value(uint32_t raw) {
  return raw < enum_names(E{}).size();
}

/// Fields<T>::visit(v): the field list of T. Only definition types have one (kListed).
template <class T>
struct Fields {
  static constexpr bool kListed = false;
};

/// The shape type and sizes, which a ShapeDef and a CompoundChild share: v(Field, &S::member...)
/// for the classes S.
template <class... S, class V>
[[gnu::always_inline]] constexpr void visit_shape_sizes(V&& v) {
  constexpr uint32_t round = shape_bit(ShapeType::sphere) | shape_bit(ShapeType::capsule);
  constexpr uint32_t box = shape_bit(ShapeType::box);
  constexpr uint32_t capsule = shape_bit(ShapeType::capsule);
  v(Field{"type", "shape", field_text_required}, &S::type...);
  v(Field{"radius", "radius", field_text_required, round}, &S::radius...);
  v(Field{"half_extents", "half", field_text_required, box}, &S::half_extents...);
  v(Field{"half_height", "half_height", field_text_required, capsule}, &S::half_height...);
}

template <>
struct Fields<ShapeDef> {
  static constexpr bool kListed = true;
  template <class V>
  [[gnu::always_inline]] static constexpr void visit(V&& v) {
    constexpr uint32_t plane = shape_bit(ShapeType::plane);
    visit_shape_sizes<ShapeDef>(v);
    v(Field{"plane_normal", "normal", field_text_required, plane}, &ShapeDef::plane_normal);
    v(Field{"plane_offset", "offset", field_plain, plane}, &ShapeDef::plane_offset);
    v(Field{"density", "density"}, &ShapeDef::density);
    v(Field{"friction", "friction"}, &ShapeDef::friction);
    v(Field{"restitution", "restitution"}, &ShapeDef::restitution);
    v(Field{"category", "category", field_text_if_changed | field_text_hex}, &ShapeDef::category);
    v(Field{"mask", "mask", field_text_if_changed | field_text_hex}, &ShapeDef::mask);
    v(Field{"sensor", "sensor", field_text_if_changed}, &ShapeDef::sensor);
    // The text spells a hull by its points (`points=`), not by its index.
    v(Field{"hull", "", field_encoded_if_used, shape_bit(ShapeType::hull)}, &ShapeDef::hull);
    // The text names a compound (`compound=NAME`, a `compound` line's name), not its index.
    v(Field{"compound", "", field_encoded_if_used, shape_bit(ShapeType::compound)},
      &ShapeDef::compound);
    // The level geometry's index (LevelDef::meshes or ::heightfields); the text names it by the
    // `mesh` or `heightfield` line that made it.
    v(Field{"mesh", "", field_encoded_if_used,
            shape_bit(ShapeType::mesh) | shape_bit(ShapeType::heightfield)},
      &ShapeDef::mesh);
  }
};

template <>
struct Fields<CompoundChild> {
  static constexpr bool kListed = true;
  template <class V>
  [[gnu::always_inline]] static constexpr void visit(V&& v) {
    // The child's shape: ShapeDef's keys and the types they describe; a hull child spells its
    // hull by its points (`points=`), as a hull shape does.
    using C = CompoundChild;
    visit_shape_sizes<C>(v);
    v(Field{"hull", "", field_plain, shape_bit(ShapeType::hull)}, &C::hull);
    v(Field{"position", "pos"}, &C::position);
    v(Field{"orientation", "rot", field_text_if_changed}, &C::orientation);
  }
};

template <>
struct Fields<CompoundDef> {
  static constexpr bool kListed = true;
  template <class V>
  [[gnu::always_inline]] static constexpr void visit(V&& v) {
    v(Field{"name", ""}, &CompoundDef::name);  // the `compound` line's name
    // The encodings write the first child_count children only.
    v(Field{"child_count", ""}, &CompoundDef::child_count);
    v(Field{"children", ""}, &CompoundDef::children);
  }
};

template <>
struct Fields<HullDef> {
  static constexpr bool kListed = true;
  template <class V>
  [[gnu::always_inline]] static constexpr void visit(V&& v) {
    // The encodings write the first point_count points only.
    v(Field{"point_count", ""}, &HullDef::point_count);
    v(Field{"points", ""}, &HullDef::points);
  }
};

/// The fields a BodyTemplate shares with a BodyDef: v(Field, &S::member...) for the classes S,
/// so two classes walk them side by side (template_body_def copies them that way).
template <class... S, class V>
[[gnu::always_inline]] constexpr void visit_body_properties(V&& v) {
  v(Field{"type", "type", field_text_required}, &S::type...);
  v(Field{"shape", ""}, &S::shape...);
  v(Field{"linear_damping", "linear_damping", field_text_if_changed}, &S::linear_damping...);
  v(Field{"angular_damping", "angular_damping", field_text_if_changed}, &S::angular_damping...);
  v(Field{"allow_sleep", "allow_sleep", field_text_if_changed}, &S::allow_sleep...);
  v(Field{"bullet", "bullet", field_text_if_changed}, &S::bullet...);
}

template <>
struct Fields<BodyTemplate> {
  static constexpr bool kListed = true;
  template <class V>
  [[gnu::always_inline]] static constexpr void visit(V&& v) {
    v(Field{"name", ""}, &BodyTemplate::name);  // the `template` line's name, written first
    visit_body_properties<BodyTemplate>(v);
  }
};

template <>
struct Fields<BodyDef> {
  static constexpr bool kListed = true;
  template <class V>
  [[gnu::always_inline]] static constexpr void visit(V&& v) {
    visit_body_properties<BodyDef>(v);
    constexpr uint32_t given = field_spawn_argument;
    v(Field{"position", "pos", given}, &BodyDef::position);
    v(Field{"orientation", "rot", given}, &BodyDef::orientation);
    v(Field{"linear_velocity", "vel", given | field_text_if_changed}, &BodyDef::linear_velocity);
    v(Field{"angular_velocity", "angvel", given | field_text_if_changed},
      &BodyDef::angular_velocity);
    v(Field{"owner_player", "owner", given | field_text_if_changed}, &BodyDef::owner_player);
  }
};

template <>
struct Fields<WorldDef> {
  static constexpr bool kListed = true;
  template <class V>
  [[gnu::always_inline]] static constexpr void visit(V&& v) {
    using W = WorldDef;
    v(Field{"dt_s", "dt"}, &W::dt_s);
    v(Field{"gravity", "gravity"}, &W::gravity);
    v(Field{"velocity_iterations", "iterations"}, &W::velocity_iterations);
    v(Field{"relax_iterations", "relax_iterations"}, &W::relax_iterations);
    v(Field{"substeps", "substeps"}, &W::substeps);
    v(Field{"contact_hertz", "contact_hertz"}, &W::contact_hertz);
    v(Field{"contact_damping_ratio", "contact_damping_ratio"}, &W::contact_damping_ratio);
    v(Field{"linear_slop_m", "linear_slop"}, &W::linear_slop_m);
    v(Field{"max_bias_velocity", "max_bias_velocity"}, &W::max_bias_velocity);
    v(Field{"restitution_threshold", "restitution_threshold"}, &W::restitution_threshold);
    v(Field{"contact_margin_m", "contact_margin"}, &W::contact_margin_m);
    v(Field{"max_speculative_margin_m", "max_speculative_margin"}, &W::max_speculative_margin_m);
    v(Field{"max_angular_speed", "max_angular_speed"}, &W::max_angular_speed);
    v(Field{"max_linear_speed", "max_linear_speed"}, &W::max_linear_speed);
    v(Field{"max_input_linear_impulse", "max_input_linear_impulse"}, &W::max_input_linear_impulse);
    v(Field{"max_input_angular_impulse", "max_input_angular_impulse"},
      &W::max_input_angular_impulse);
    v(Field{"max_bodies", "max_bodies"}, &W::max_bodies);
    v(Field{"max_contact_pairs", "max_contact_pairs"}, &W::max_contact_pairs);
    v(Field{"max_contact_points", "max_contact_points"}, &W::max_contact_points);
    v(Field{"max_candidate_pairs", "max_candidate_pairs"}, &W::max_candidate_pairs);
    v(Field{"max_events", "max_events"}, &W::max_events);
    v(Field{"max_inputs_per_tick", "max_inputs_per_tick"}, &W::max_inputs_per_tick);
    v(Field{"enable_sleep", "enable_sleep"}, &W::enable_sleep);
    v(Field{"sleep_speed_threshold_mps", "sleep_speed_threshold"}, &W::sleep_speed_threshold_mps);
    v(Field{"time_to_sleep_s", "time_to_sleep"}, &W::time_to_sleep_s);
    v(Field{"contact_reuse_distance_m", "contact_reuse_distance"}, &W::contact_reuse_distance_m);
    v(Field{"contact_reuse_angle_rad", "contact_reuse_angle"}, &W::contact_reuse_angle_rad);
    v(Field{"max_input_linear_velocity", "max_input_linear_velocity"},
      &W::max_input_linear_velocity);
    v(Field{"max_input_angular_velocity", "max_input_angular_velocity"},
      &W::max_input_angular_velocity);
    v(Field{"max_commands_per_tick", "max_commands_per_tick"}, &W::max_commands_per_tick);
    v(Field{"measure_stage_times", "measure_stage_times", field_not_simulated},
      &W::measure_stage_times);
    // The templates in use: `template` lines in the text, the first template_count entries in
    // the encodings.
    v(Field{"template_count", ""}, &W::template_count);
    v(Field{"templates", ""}, &W::templates);
    // The hulls in use: the first hull_count entries in the encodings; the text writes each
    // hull's points on the shapes that use it.
    v(Field{"hull_count", "", field_encoded_if_used}, &W::hull_count);
    v(Field{"hulls", "", field_encoded_if_used}, &W::hulls);
    // The compounds in use: the first compound_count entries; the text writes each as a
    // `compound` line and its `child` lines.
    v(Field{"compound_count", "", field_encoded_if_used}, &W::compound_count);
    v(Field{"compounds", "", field_encoded_if_used}, &W::compounds);
  }
};

/// True for a type with a field list (a definition nested in another is walked in place).
template <class T>
inline constexpr bool kHasFields = Fields<std::remove_cv_t<T>>::kListed;

/// v(Field, object.member) for every field of `object`, in list order.
template <class T, class V>
[[gnu::always_inline]] constexpr void for_each_field(T& object, V&& v) {
  static_assert(kHasFields<T>, "a type without a field list");
  Fields<std::remove_cv_t<T>>::visit(
      [&object, &v](const Field& field, auto member) { v(field, object.*member); });
}

/// True when every float of `object`, and of the definitions nested in it, is finite (arrays of
/// definitions, WorldDef::templates, are left to their own checks).
template <class T>
requires kHasFields<T>
bool all_floats_finite(const T& object) {
  bool finite = true;
  for_each_field(object, [&finite](const Field&, const auto& value) {
    using M = std::remove_cvref_t<decltype(value)>;
    if constexpr (kHasFields<M>) {
      finite = finite && all_floats_finite(value);
    } else if constexpr (std::is_same_v<M, float> || std::is_same_v<M, Vec3> ||
                         std::is_same_v<M, Quat>) {
      finite = finite && is_finite(value);
    }
  });
  return finite;
}

/// The type of a member a member pointer names: field_type_t<decltype(&ShapeDef::radius)> = float.
template <class M>
struct FieldType;
template <class T, class C>
struct FieldType<T C::*> {
  using type = T;
};
template <class M>
using field_type_t = typename FieldType<M>::type;

/// Number of fields in T's list (nested definitions count as one).
template <class T>
constexpr size_t field_count() {
  size_t n = 0;
  Fields<T>::visit([&n](const Field&, auto) { ++n; });
  return n;
}

}  // namespace lockstep::sim
