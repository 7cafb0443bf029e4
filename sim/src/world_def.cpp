// Defaults and validation of world and body definitions.
#include <cmath>
#include <cstring>
#include <string_view>

#include "lockstep/sim/fields.h"
#include "lockstep/sim/world.h"
#include "shape.h"
#include "world_data.h"

namespace lockstep::sim {

WorldDef default_world_def() {
  return WorldDef{};
}

BodyDef default_body_def() {
  return BodyDef{};
}

BodyDef template_body_def(const BodyTemplate& tmpl) {
  BodyDef body;
  visit_body_properties<BodyDef, BodyTemplate>(
      [&body, &tmpl](const Field&, auto to, auto from) { body.*to = tmpl.*from; });
  return body;
}

void set_template_properties(BodyTemplate* tmpl, const BodyDef& body) {
  visit_body_properties<BodyTemplate, BodyDef>(
      [tmpl, &body](const Field&, auto to, auto from) { tmpl->*to = body.*from; });
}

namespace {

bool template_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// Length of a valid name (NUL-terminated, NUL-padded, allowed bytes), else 0: templates' and
// compounds'.
template <size_t N>
size_t name_length(const char (&name)[N]) {
  size_t n = 0;
  while (n < N && name[n] != '\0') {
    if (!template_name_byte(name[n])) return 0;
    ++n;
  }
  if (n == 0 || n >= N) return 0;
  for (size_t i = n; i < N; ++i) {
    if (name[i] != '\0') return 0;
  }
  return n;
}

size_t template_name_length(const BodyTemplate& t) {
  return name_length(t.name);
}

template <size_t N>
bool set_name(char (&out)[N], std::string_view name) {
  if (name.empty() || name.size() >= N) return false;
  for (char c : name) {
    if (!template_name_byte(c)) return false;
  }
  std::memset(out, 0, N);
  std::memcpy(out, name.data(), name.size());
  return true;
}

}  // namespace

namespace {

// The index of the first of list[0, count) named `name` (a count past N: none), or -1.
template <class T, size_t N>
int find_named(const T (&list)[N], uint32_t count, std::string_view name) {
  const uint32_t n = count <= N ? count : 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (std::string_view(list[i].name, strnlen(list[i].name, sizeof(list[i].name))) == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

int find_template(const WorldDef& def, std::string_view name) {
  return find_named(def.templates, def.template_count, name);
}

bool set_template_name(BodyTemplate* tmpl, std::string_view name) {
  return set_name(tmpl->name, name);
}

int find_compound(const WorldDef& def, std::string_view name) {
  return find_named(def.compounds, def.compound_count, name);
}

bool set_compound_name(CompoundDef* compound, std::string_view name) {
  return set_name(compound->name, name);
}

namespace {

// NaN/inf first (non_finite), then the range (invalid_argument), so callers learn the real cause.
Error check_range(float value, float lo, float hi) {
  if (!std::isfinite(value)) return Error::non_finite;
  if (!(value >= lo && value <= hi)) return Error::invalid_argument;
  return Error::none;
}

Error check_capacity(uint32_t value, uint32_t hi) {
  return (value >= 1 && value <= hi) ? Error::none : Error::invalid_argument;
}

// n·num/den in 64 bits, at least 16 and at most `hi`.
uint32_t derived(uint64_t n, uint64_t num, uint64_t den, uint32_t hi) {
  const uint64_t v = n * num / den;
  return static_cast<uint32_t>(v < 16 ? 16 : (v > hi ? hi : v));
}

// The contact capacities of a WorldDef.
struct ContactCapacities {
  uint32_t pairs = 0, points = 0, candidates = 0, events = 0;
};

// The contact capacities of `def` with a 0 replaced by WorldDef's rule.
ContactCapacities derive_capacities(const WorldDef& def) {
  // A body in a dense packing of boxes touches 4 below, 4 above and 4 beside it: 6 manifolds
  // per body, one more for the transients of a collapse (the 1,240-box pyramid peaks at 6.3).
  // Box manifolds hold up to 4 points, spheres 1, capsules 2 (that pyramid peaks at 3.8 per
  // manifold while its manifold count is below the bound). The sweep's boxes, fattened by the
  // speculative margins, overlap half as often again as shapes touch.
  ContactCapacities c;
  const uint32_t bodies = def.max_bodies < kMaxBodiesLimit ? def.max_bodies : kMaxBodiesLimit;
  c.pairs = def.max_contact_pairs != 0 ? def.max_contact_pairs
                                       : derived(bodies, 7, 1, kMaxContactPairsLimit);
  c.points = def.max_contact_points != 0 ? def.max_contact_points
                                         : derived(c.pairs, 7, 2, kMaxContactPointsLimit);
  c.candidates = def.max_candidate_pairs != 0 ? def.max_candidate_pairs
                                              : derived(c.pairs, 3, 2, kMaxCandidatePairsLimit);
  c.events = def.max_events != 0 ? def.max_events : derived(c.pairs, 1, 1, kMaxEventsLimit);
  return c;
}

}  // namespace

void resolve_capacities(WorldDef* def) {
  const ContactCapacities c = derive_capacities(*def);
  def->max_contact_pairs = c.pairs;
  def->max_contact_points = c.points;
  def->max_candidate_pairs = c.candidates;
  def->max_events = c.events;
}

namespace {

// Templates: valid unique names, valid shapes, bodies a spawn could create (a plane only on a
// static template, a dynamic one with positive mass), damping in range. Entries at and beyond
// template_count are ignored (neither checked nor fingerprinted).
Error validate_templates(const WorldDef& def, const ShapeLibrary& library) {
  if (def.template_count > kMaxBodyTemplates) return Error::invalid_argument;
  for (uint32_t i = 0; i < def.template_count; ++i) {
    const BodyTemplate& t = def.templates[i];
    const size_t n = template_name_length(t);
    if (n == 0) return Error::invalid_argument;
    if (find_template(def, std::string_view(t.name, n)) != static_cast<int>(i)) {
      return Error::invalid_argument;  // a duplicate name: the first one wins the lookup
    }
    if (t.type != BodyType::static_body && t.type != BodyType::kinematic &&
        t.type != BodyType::dynamic) {
      return Error::invalid_argument;
    }
    if (!std::isfinite(t.linear_damping) || !std::isfinite(t.angular_damping)) {
      return Error::non_finite;
    }
    Error e = validate_shape(t.shape, library);
    if (e != Error::none) return e;
    if (t.shape.type == ShapeType::plane && t.type != BodyType::static_body) {
      return Error::wrong_body_type;
    }
    if (!(t.linear_damping >= 0.0f && t.linear_damping <= kMaxDamping) ||
        !(t.angular_damping >= 0.0f && t.angular_damping <= kMaxDamping)) {
      return Error::invalid_argument;
    }
    if (t.type == BodyType::dynamic) {
      const MassProperties m = compute_mass_properties(t.shape, library);
      if (!std::isfinite(m.mass) || !(m.mass > 0.0f) || !is_finite(m.inertia) ||
          !(m.inertia.x > 0.0f) || !(m.inertia.y > 0.0f) || !(m.inertia.z > 0.0f)) {
        return Error::invalid_argument;
      }
    }
  }
  return Error::none;
}

}  // namespace

Error build_world_hulls(const WorldDef& def, std::vector<HullGeometry>* out) {
  if (def.hull_count > kMaxHulls) return Error::invalid_argument;
  out->assign(def.hull_count, HullGeometry{});
  for (uint32_t i = 0; i < def.hull_count; ++i) {
    const Error e = build_hull(def.hulls[i], &(*out)[i]);
    if (e != Error::none) return e;
  }
  return Error::none;
}

Error build_world_compounds(const WorldDef& def, const std::vector<HullGeometry>& hulls,
                            std::vector<CompoundGeometry>* out) {
  if (def.compound_count > kMaxCompounds) return Error::invalid_compound;
  out->assign(def.compound_count, CompoundGeometry{});
  for (uint32_t i = 0; i < def.compound_count; ++i) {
    const CompoundDef& c = def.compounds[i];
    const size_t n = name_length(c.name);
    if (n == 0 || find_compound(def, std::string_view(c.name, n)) != static_cast<int>(i)) {
      return Error::invalid_compound;  // a bad name, or the first one of a repeated name wins
    }
    const Error e =
        build_compound(c, hulls.data(), static_cast<uint32_t>(hulls.size()), &(*out)[i]);
    if (e != Error::none) return e;
  }
  return Error::none;
}

Error validate_world_def(const WorldDef& def) {
  std::vector<HullGeometry> hulls;
  std::vector<CompoundGeometry> compounds;
  return validate_world_def_and_build(def, &hulls, &compounds);
}

Error validate_world_def_and_build(const WorldDef& def, std::vector<HullGeometry>* hulls,
                                   std::vector<CompoundGeometry>* compounds) {
  // Finiteness of every float first: a NaN anywhere is reported as such (templates below).
  if (!all_floats_finite(def)) return Error::non_finite;
  // dt in (0, 1]: a zero step would divide by zero in the bias terms.
  if (!(def.dt_s > 0.0f && def.dt_s <= 1.0f)) return Error::invalid_argument;
  Error e = Error::none;
  const float g = kMaxGravity;
  if ((e = check_range(def.gravity.x, -g, g)) != Error::none) return e;
  if ((e = check_range(def.gravity.y, -g, g)) != Error::none) return e;
  if ((e = check_range(def.gravity.z, -g, g)) != Error::none) return e;
  if (def.velocity_iterations < 1 || def.velocity_iterations > kMaxVelocityIterations) {
    return Error::invalid_argument;
  }
  if (def.relax_iterations > kMaxVelocityIterations) return Error::invalid_argument;
  if (def.substeps < 1 || def.substeps > kMaxSubsteps) return Error::invalid_argument;
  if ((e = check_range(def.contact_hertz, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.contact_damping_ratio, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.linear_slop_m, 0.0f, 1.0f)) != Error::none) return e;
  if ((e = check_range(def.max_bias_velocity, 0.0f, 1.0e3f)) != Error::none) return e;
  if ((e = check_range(def.restitution_threshold, 0.0f, 1.0e3f)) != Error::none) return e;
  if ((e = check_range(def.contact_margin_m, 0.0f, 1.0f)) != Error::none) return e;
  if ((e = check_range(def.max_speculative_margin_m, def.contact_margin_m, 100.0f)) !=
      Error::none) {
    return e;
  }
  if ((e = check_range(def.contact_reuse_distance_m, 0.0f, 1.0f)) != Error::none) return e;
  if ((e = check_range(def.contact_reuse_angle_rad, 0.0f, 0.5f)) != Error::none) return e;
  if ((e = check_range(def.max_angular_speed, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.max_linear_speed, 0.0f, 1.0e5f)) != Error::none) return e;
  if (!(def.max_angular_speed > 0.0f) || !(def.max_linear_speed > 0.0f)) {
    return Error::invalid_argument;
  }
  if ((e = check_range(def.max_input_linear_impulse, 0.0f, 1.0e9f)) != Error::none) return e;
  if ((e = check_range(def.max_input_angular_impulse, 0.0f, 1.0e9f)) != Error::none) return e;
  if ((e = check_range(def.max_input_linear_velocity, 0.0f, 1.0e5f)) != Error::none) return e;
  if ((e = check_range(def.max_input_angular_velocity, 0.0f, 1.0e4f)) != Error::none) return e;
  if ((e = check_range(def.sleep_speed_threshold_mps, 0.0f, 1.0e3f)) != Error::none) return e;
  // > 0: a body must be at rest for at least one step (island.cpp caps the timer at this value).
  if ((e = check_range(def.time_to_sleep_s, 0.0f, kMaxTimeToSleep)) != Error::none) return e;
  if (!(def.time_to_sleep_s > 0.0f)) return Error::invalid_argument;
  if ((e = check_capacity(def.max_bodies, kMaxBodiesLimit)) != Error::none) return e;
  // The contact capacities as the world would use them (0: derived from max_bodies).
  const ContactCapacities c = derive_capacities(def);
  if ((e = check_capacity(c.pairs, kMaxContactPairsLimit)) != Error::none) return e;
  if ((e = check_capacity(c.points, kMaxContactPointsLimit)) != Error::none) return e;
  if ((e = check_capacity(c.candidates, kMaxCandidatePairsLimit)) != Error::none) return e;
  if ((e = check_capacity(c.events, kMaxEventsLimit)) != Error::none) return e;
  if ((e = check_capacity(def.max_inputs_per_tick, kMaxInputsLimit)) != Error::none) return e;
  if ((e = check_capacity(def.max_commands_per_tick, kMaxCommandsLimit)) != Error::none) return e;
  if ((e = build_world_hulls(def, hulls)) != Error::none) return e;
  if ((e = build_world_compounds(def, *hulls, compounds)) != Error::none) return e;
  const ShapeLibrary library{hulls->data(), static_cast<uint32_t>(hulls->size()), compounds->data(),
                             static_cast<uint32_t>(compounds->size())};
  return validate_templates(def, library);
}

}  // namespace lockstep::sim
