// The world codec (world_codec.h): WorldDef and commands to and from world.fbs, shared by the
// wire protocol and replay files.
#include "lockstep/schema/world_codec.h"

#include <cmath>
#include <cstring>

#include "lockstep/schema/level_file.h"
#include "lockstep/sim/fields.h"
#include "lockstep/sim/world.h"

namespace lockstep::schema {
namespace fb = flatbuffers;

fb::Offset<wire::WorldDef> encode_world_def(fb::FlatBufferBuilder& b, const sim::WorldDef& d) {
  fb::Offset<fb::Vector<fb::Offset<wire::BodyTemplate>>> templates;
  const uint32_t template_count =
      d.template_count <= sim::kMaxBodyTemplates ? d.template_count : sim::kMaxBodyTemplates;
  if (template_count > 0) {
    std::vector<fb::Offset<wire::BodyTemplate>> list;
    for (uint32_t i = 0; i < template_count; ++i) {
      const sim::BodyTemplate& t = d.templates[i];
      const auto name = b.CreateString(t.name, strnlen(t.name, sizeof(t.name)));
      const sim::ShapeDef& s = t.shape;
      list.push_back(wire::CreateBodyTemplate(
          b, name, static_cast<uint8_t>(t.type), static_cast<uint8_t>(s.type), s.radius,
          s.half_extents.x, s.half_extents.y, s.half_extents.z, s.half_height, s.plane_normal.x,
          s.plane_normal.y, s.plane_normal.z, s.plane_offset, s.density, s.friction, s.restitution,
          s.category, s.mask, s.sensor, t.linear_damping, t.angular_damping, t.allow_sleep,
          t.bullet, s.hull, s.compound, s.mesh));
    }
    templates = b.CreateVector(list);
  }
  fb::Offset<fb::Vector<fb::Offset<wire::Hull>>> hulls;
  const uint32_t hull_count = d.hull_count <= sim::kMaxHulls ? d.hull_count : sim::kMaxHulls;
  if (hull_count > 0) {
    std::vector<fb::Offset<wire::Hull>> list;
    for (uint32_t i = 0; i < hull_count; ++i) {
      const sim::HullDef& h = d.hulls[i];
      const uint32_t n = h.point_count <= sim::kMaxHullPoints ? h.point_count : 0;
      std::vector<float> values;
      for (uint32_t k = 0; k < n; ++k) {
        values.push_back(h.points[k].x);
        values.push_back(h.points[k].y);
        values.push_back(h.points[k].z);
      }
      list.push_back(wire::CreateHull(b, b.CreateVector(values)));
    }
    hulls = b.CreateVector(list);
  }
  fb::Offset<fb::Vector<fb::Offset<wire::Compound>>> compounds;
  const uint32_t compound_count =
      d.compound_count <= sim::kMaxCompounds ? d.compound_count : sim::kMaxCompounds;
  if (compound_count > 0) {
    std::vector<fb::Offset<wire::Compound>> list;
    for (uint32_t i = 0; i < compound_count; ++i) {
      const sim::CompoundDef& c = d.compounds[i];
      const uint32_t n = c.child_count <= sim::kMaxCompoundChildren ? c.child_count : 0;
      std::vector<fb::Offset<wire::CompoundChild>> children;
      for (uint32_t k = 0; k < n; ++k) {
        const sim::CompoundChild& h = c.children[k];
        children.push_back(wire::CreateCompoundChild(
            b, static_cast<uint8_t>(h.type), h.radius, h.half_extents.x, h.half_extents.y,
            h.half_extents.z, h.half_height, h.hull, h.position.x, h.position.y, h.position.z,
            h.orientation.x, h.orientation.y, h.orientation.z, h.orientation.w));
      }
      const auto name = b.CreateString(c.name, strnlen(c.name, sizeof(c.name)));
      list.push_back(wire::CreateCompound(b, name, b.CreateVector(children)));
    }
    compounds = b.CreateVector(list);
  }
  wire::WorldDefBuilder w(b);
  w.add_max_commands_per_tick(d.max_commands_per_tick);
  if (template_count > 0) w.add_templates(templates);
  if (hull_count > 0) w.add_hulls(hulls);
  if (compound_count > 0) w.add_compounds(compounds);
  w.add_dt_s(d.dt_s);
  w.add_gravity_x(d.gravity.x);
  w.add_gravity_y(d.gravity.y);
  w.add_gravity_z(d.gravity.z);
  w.add_velocity_iterations(d.velocity_iterations);
  w.add_relax_iterations(d.relax_iterations);
  w.add_substeps(d.substeps);
  w.add_contact_hertz(d.contact_hertz);
  w.add_contact_damping_ratio(d.contact_damping_ratio);
  w.add_linear_slop_m(d.linear_slop_m);
  w.add_max_bias_velocity(d.max_bias_velocity);
  w.add_restitution_threshold(d.restitution_threshold);
  w.add_contact_margin_m(d.contact_margin_m);
  w.add_max_speculative_margin_m(d.max_speculative_margin_m);
  w.add_max_angular_speed(d.max_angular_speed);
  w.add_max_linear_speed(d.max_linear_speed);
  w.add_max_input_linear_impulse(d.max_input_linear_impulse);
  w.add_max_input_angular_impulse(d.max_input_angular_impulse);
  w.add_max_bodies(d.max_bodies);
  w.add_max_contact_pairs(d.max_contact_pairs);
  w.add_max_contact_points(d.max_contact_points);
  w.add_max_candidate_pairs(d.max_candidate_pairs);
  w.add_max_events(d.max_events);
  w.add_max_inputs_per_tick(d.max_inputs_per_tick);
  w.add_measure_stage_times(d.measure_stage_times);
  w.add_enable_sleep(d.enable_sleep);
  w.add_sleep_speed_threshold_mps(d.sleep_speed_threshold_mps);
  w.add_time_to_sleep_s(d.time_to_sleep_s);
  w.add_contact_reuse_distance_m(d.contact_reuse_distance_m);
  w.add_contact_reuse_angle_rad(d.contact_reuse_angle_rad);
  w.add_max_input_linear_velocity(d.max_input_linear_velocity);
  w.add_max_input_angular_velocity(d.max_input_angular_velocity);
  return w.Finish();
}

// Absent fields read as the schema default (0), which is what was written: the builder leaves
// out fields equal to their default, and every default here is 0.
// Templates beyond the capacity, bad names or enum values: false with *error set.
bool decode_world_def(const wire::WorldDef& w, sim::WorldDef* out, std::string* error) {
  sim::WorldDef& d = *out;
  d = sim::WorldDef{};
  d.dt_s = w.dt_s();
  d.gravity = {w.gravity_x(), w.gravity_y(), w.gravity_z()};
  d.velocity_iterations = w.velocity_iterations();
  d.relax_iterations = w.relax_iterations();
  d.substeps = w.substeps();
  d.contact_hertz = w.contact_hertz();
  d.contact_damping_ratio = w.contact_damping_ratio();
  d.linear_slop_m = w.linear_slop_m();
  d.max_bias_velocity = w.max_bias_velocity();
  d.restitution_threshold = w.restitution_threshold();
  d.contact_margin_m = w.contact_margin_m();
  d.max_speculative_margin_m = w.max_speculative_margin_m();
  d.max_angular_speed = w.max_angular_speed();
  d.max_linear_speed = w.max_linear_speed();
  d.max_input_linear_impulse = w.max_input_linear_impulse();
  d.max_input_angular_impulse = w.max_input_angular_impulse();
  d.max_bodies = w.max_bodies();
  d.max_contact_pairs = w.max_contact_pairs();
  d.max_contact_points = w.max_contact_points();
  d.max_candidate_pairs = w.max_candidate_pairs();
  d.max_events = w.max_events();
  d.max_inputs_per_tick = w.max_inputs_per_tick();
  d.measure_stage_times = w.measure_stage_times();
  d.enable_sleep = w.enable_sleep();
  d.sleep_speed_threshold_mps = w.sleep_speed_threshold_mps();
  d.time_to_sleep_s = w.time_to_sleep_s();
  d.contact_reuse_distance_m = w.contact_reuse_distance_m();
  d.contact_reuse_angle_rad = w.contact_reuse_angle_rad();
  d.max_input_linear_velocity = w.max_input_linear_velocity();
  d.max_input_angular_velocity = w.max_input_angular_velocity();
  // 0 is no valid capacity: a file written before the field carries the default.
  d.max_commands_per_tick = w.max_commands_per_tick() != 0 ? w.max_commands_per_tick()
                                                           : sim::WorldDef{}.max_commands_per_tick;
  d.template_count = 0;
  if (const auto* templates = w.templates()) {
    if (templates->size() > sim::kMaxBodyTemplates) {
      *error = "WorldDef with " + std::to_string(templates->size()) + " templates (at most " +
               std::to_string(sim::kMaxBodyTemplates) + ")";
      return false;
    }
    for (const wire::BodyTemplate* t : *templates) {
      sim::BodyTemplate& o = d.templates[d.template_count];
      const std::string_view name = t->name() ? t->name()->string_view() : std::string_view();
      if (!sim::set_template_name(&o, name) || !sim::valid_enum_value<sim::BodyType>(t->type()) ||
          !sim::valid_enum_value<sim::ShapeType>(t->shape_type())) {
        *error = "WorldDef template " + std::to_string(d.template_count) +
                 " has a bad name, body type or shape type";
        return false;
      }
      o.type = static_cast<sim::BodyType>(t->type());
      sim::ShapeDef& s = o.shape;
      s.type = static_cast<sim::ShapeType>(t->shape_type());
      s.radius = t->radius();
      s.half_extents = {t->half_x(), t->half_y(), t->half_z()};
      s.half_height = t->half_height();
      s.plane_normal = {t->plane_normal_x(), t->plane_normal_y(), t->plane_normal_z()};
      s.plane_offset = t->plane_offset();
      s.density = t->density();
      s.friction = t->friction();
      s.restitution = t->restitution();
      s.category = t->category();
      s.mask = t->mask();
      s.sensor = t->sensor();
      o.linear_damping = t->linear_damping();
      o.angular_damping = t->angular_damping();
      o.allow_sleep = t->allow_sleep();
      o.bullet = t->bullet();
      s.hull = t->hull();
      s.compound = t->compound();
      s.mesh = t->mesh();
      ++d.template_count;
    }
  }
  d.hull_count = 0;
  if (const auto* hulls = w.hulls()) {
    if (hulls->size() > sim::kMaxHulls) {
      *error = "WorldDef with " + std::to_string(hulls->size()) + " hulls (at most " +
               std::to_string(sim::kMaxHulls) + ")";
      return false;
    }
    for (const wire::Hull* h : *hulls) {
      const auto* points = h->points();
      const uint32_t values = points != nullptr ? points->size() : 0;
      if (values % 3 != 0 || values / 3 < sim::kMinHullPoints || values / 3 > sim::kMaxHullPoints) {
        *error = "WorldDef hull " + std::to_string(d.hull_count) + " has " +
                 std::to_string(values) + " coordinates (x, y, z for 4 to " +
                 std::to_string(sim::kMaxHullPoints) + " points)";
        return false;
      }
      sim::HullDef& o = d.hulls[d.hull_count];
      o = sim::HullDef{};
      o.point_count = values / 3;
      for (uint32_t k = 0; k < o.point_count; ++k)
        o.points[k] = {points->Get(3 * k), points->Get(3 * k + 1), points->Get(3 * k + 2)};
      ++d.hull_count;
    }
  }
  d.compound_count = 0;
  if (const auto* compounds = w.compounds()) {
    if (compounds->size() > sim::kMaxCompounds) {
      *error = "WorldDef with " + std::to_string(compounds->size()) + " compounds (at most " +
               std::to_string(sim::kMaxCompounds) + ")";
      return false;
    }
    for (const wire::Compound* c : *compounds) {
      sim::CompoundDef& o = d.compounds[d.compound_count];
      o = sim::CompoundDef{};
      const auto* name = c->name();
      if (name == nullptr || !sim::set_compound_name(&o, name->string_view())) {
        *error = "WorldDef compound " + std::to_string(d.compound_count) +
                 " has no valid name (1 to " + std::to_string(sim::kMaxCompoundNameBytes) +
                 " bytes of [A-Za-z0-9_.-])";
        return false;
      }
      const auto* children = c->children();
      const uint32_t n = children != nullptr ? children->size() : 0;
      if (n < 1 || n > sim::kMaxCompoundChildren) {
        *error = "WorldDef compound " + std::to_string(d.compound_count) + " has " +
                 std::to_string(n) + " children (1 to " +
                 std::to_string(sim::kMaxCompoundChildren) + ")";
        return false;
      }
      o.child_count = n;
      for (uint32_t k = 0; k < n; ++k) {
        const wire::CompoundChild* h = children->Get(k);
        if (!sim::valid_enum_value<sim::ShapeType>(h->shape_type())) {
          *error = "WorldDef compound " + std::to_string(d.compound_count) + " child " +
                   std::to_string(k) + " has shape type " + std::to_string(h->shape_type());
          return false;
        }
        sim::CompoundChild& x = o.children[k];
        x.type = static_cast<sim::ShapeType>(h->shape_type());
        x.radius = h->radius();
        x.half_extents = {h->half_x(), h->half_y(), h->half_z()};
        x.half_height = h->half_height();
        x.hull = h->hull();
        x.position = {h->position_x(), h->position_y(), h->position_z()};
        x.orientation = {h->orientation_x(), h->orientation_y(), h->orientation_z(),
                         h->orientation_w()};
      }
      ++d.compound_count;
    }
  }
  return true;
}

bool from_world_command(const wire::WorldCommand& in, sim::Command* out, std::string* error) {
  if (in.type() > static_cast<uint32_t>(sim::kLastCommandType)) {
    *error = "type " + std::to_string(in.type()) + " is not a command type";
    return false;
  }
  const float floats[] = {in.position_x(),        in.position_y(),         in.position_z(),
                          in.orientation_x(),     in.orientation_y(),      in.orientation_z(),
                          in.orientation_w(),     in.linear_velocity_x(),  in.linear_velocity_y(),
                          in.linear_velocity_z(), in.angular_velocity_x(), in.angular_velocity_y(),
                          in.angular_velocity_z()};
  for (float f : floats) {
    if (!std::isfinite(f)) {
      *error = "a pose or velocity is not finite";
      return false;
    }
  }
  sim::Command c;
  c.type = static_cast<sim::CommandType>(in.type());
  c.sequence = in.sequence();
  c.template_index = in.template_index();
  c.position = {in.position_x(), in.position_y(), in.position_z()};
  c.orientation = {in.orientation_x(), in.orientation_y(), in.orientation_z(), in.orientation_w()};
  c.linear_velocity = {in.linear_velocity_x(), in.linear_velocity_y(), in.linear_velocity_z()};
  c.angular_velocity = {in.angular_velocity_x(), in.angular_velocity_y(), in.angular_velocity_z()};
  c.owner_player = in.owner_player();
  c.body = sim::BodyId{in.body_index1(), in.body_generation()};
  c.score_delta = in.score_delta();
  *out = c;
  return true;
}

bool read_world_commands(const fb::Vector<const wire::WorldCommand*>* commands,
                         std::vector<sim::Command>* out, std::string* error) {
  out->clear();
  if (commands == nullptr) return true;
  out->reserve(commands->size());
  for (fb::uoffset_t i = 0; i < commands->size(); ++i) {
    sim::Command c;
    std::string why;
    if (!from_world_command(*commands->Get(i), &c, &why)) {
      *error = "command " + std::to_string(i) + ": " + why;
      return false;
    }
    out->push_back(c);
  }
  return true;
}

fb::Offset<wire::Level> encode_level_table(
    fb::FlatBufferBuilder& builder, uint64_t digest, bool carried,
    const std::vector<sim::SceneMesh>& level_meshes,
    const std::vector<sim::SceneHeightfield>& level_heightfields) {
  std::vector<fb::Offset<wire::LevelMesh>> meshes;
  std::vector<fb::Offset<wire::LevelHeightfield>> heightfields;
  if (carried) {
    for (const sim::SceneMesh& mesh : level_meshes) {
      std::vector<float> xyz;
      xyz.reserve(mesh.vertices.size() * 3);
      for (const sim::Vec3& v : mesh.vertices) {
        xyz.push_back(v.x);
        xyz.push_back(v.y);
        xyz.push_back(v.z);
      }
      auto vertices = builder.CreateVector(xyz);
      auto indices = builder.CreateVector(mesh.indices);
      meshes.push_back(wire::CreateLevelMesh(builder, vertices, indices));
    }
    for (const sim::SceneHeightfield& h : level_heightfields) {
      auto heights = builder.CreateVector(h.heights);
      heightfields.push_back(wire::CreateLevelHeightfield(builder, heights, h.columns, h.rows,
                                                          h.spacing_x, h.spacing_z));
    }
  }
  auto mesh_vector = meshes.empty() ? 0 : builder.CreateVector(meshes);
  auto heightfield_vector = heightfields.empty() ? 0 : builder.CreateVector(heightfields);
  return wire::CreateLevel(builder, digest, carried, mesh_vector, heightfield_vector);
}

namespace {
bool all_finite(const fb::Vector<float>* values) {
  if (values == nullptr) return true;
  for (const float v : *values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}
}  // namespace

bool decode_level_table(const wire::Level& in, uint64_t* digest_out, bool* carried_out,
                        std::vector<sim::SceneMesh>* meshes_out,
                        std::vector<sim::SceneHeightfield>* heightfields_out, std::string* why) {
  *digest_out = in.digest();
  *carried_out = in.carried();
  meshes_out->clear();
  heightfields_out->clear();
  const auto* meshes = in.meshes();
  const auto* heightfields = in.heightfields();
  const uint32_t mesh_count = meshes != nullptr ? meshes->size() : 0;
  const uint32_t heightfield_count = heightfields != nullptr ? heightfields->size() : 0;
  if (!*carried_out) {
    if (mesh_count != 0 || heightfield_count != 0) {
      *why = "geometry in a level marked as not carried";
      return false;
    }
    return true;
  }
  if (mesh_count > sim::kMaxMeshes || heightfield_count > sim::kMaxHeightfields) {
    *why = std::to_string(mesh_count) + " meshes and " + std::to_string(heightfield_count) +
           " heightfields, over " + std::to_string(sim::kMaxMeshes) + " and " +
           std::to_string(sim::kMaxHeightfields);
    return false;
  }
  uint64_t triangles = 0;
  (*meshes_out).resize(mesh_count);
  for (uint32_t i = 0; i < mesh_count; ++i) {
    const wire::LevelMesh* mesh = meshes->Get(i);
    const auto* vertices = mesh->vertices();
    const auto* indices = mesh->indices();
    const uint32_t floats = vertices != nullptr ? vertices->size() : 0;
    const uint32_t corners = indices != nullptr ? indices->size() : 0;
    if (floats % 3 != 0 || corners % 3 != 0 || !all_finite(vertices)) {
      *why = "mesh " + std::to_string(i) + ": " + std::to_string(floats) + " coordinates and " +
             std::to_string(corners) + " indices (multiples of 3, finite, are needed)";
      return false;
    }
    triangles += corners / 3;
    sim::SceneMesh& out = (*meshes_out)[i];
    out.vertices.resize(floats / 3);
    for (uint32_t k = 0; k < floats / 3; ++k)
      out.vertices[k] =
          sim::Vec3{vertices->Get(3 * k), vertices->Get(3 * k + 1), vertices->Get(3 * k + 2)};
    if (indices != nullptr) out.indices.assign(indices->begin(), indices->end());
    for (const uint32_t index : out.indices) {
      if (index >= out.vertices.size()) {
        *why = "mesh " + std::to_string(i) + ": index " + std::to_string(index) + " past its " +
               std::to_string(out.vertices.size()) + " vertices";
        return false;
      }
    }
  }
  (*heightfields_out).resize(heightfield_count);
  for (uint32_t i = 0; i < heightfield_count; ++i) {
    const wire::LevelHeightfield* h = heightfields->Get(i);
    const uint64_t samples = h->heights() != nullptr ? h->heights()->size() : 0;
    if (h->columns() < 2 || h->rows() < 2 || uint64_t{h->columns()} * h->rows() != samples ||
        !all_finite(h->heights()) || !(h->spacing_x() > 0.0f) || !(h->spacing_z() > 0.0f) ||
        !std::isfinite(h->spacing_x()) || !std::isfinite(h->spacing_z())) {
      *why = "heightfield " + std::to_string(i) + ": " + std::to_string(h->columns()) + " x " +
             std::to_string(h->rows()) + " with " + std::to_string(samples) +
             " heights (at least 2 x 2, one finite height each, positive spacing)";
      return false;
    }
    triangles += 2 * uint64_t{h->columns() - 1} * (h->rows() - 1);
    sim::SceneHeightfield& out = (*heightfields_out)[i];
    out.heights.assign(h->heights()->begin(), h->heights()->end());
    out.columns = h->columns();
    out.rows = h->rows();
    out.spacing_x = h->spacing_x();
    out.spacing_z = h->spacing_z();
  }
  if (triangles > sim::kMaxLevelTriangles) {
    *why =
        std::to_string(triangles) + " triangles, over " + std::to_string(sim::kMaxLevelTriangles);
    return false;
  }
  const uint64_t digest = sim::level_digest(view_level((*meshes_out), (*heightfields_out)).def());
  if (digest != *digest_out) {
    *why = "the carried level does not hash to its digest";
    return false;
  }
  return true;
}

}  // namespace lockstep::schema
