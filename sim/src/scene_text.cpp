// The text scene format (docs/scene-format.md): one directive per line (`scene`, `world`,
// `body`) followed by key=value tokens, `#` comments, blank lines ignored.
//
// Parsing is strict so that a typo is an error, never a silently different simulation: every
// key must be known and apply to the directive (and shape), every number must parse completely
// and be finite, vectors have exactly their arity, and each failure names the line, the column
// and the key. Floats go through std::strtof on a NUL-terminated copy (our programs keep the
// "C" locale); they are written back with the fewest of 6..9 significant digits that read back
// to the same bits, so format -> parse is exact.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "lockstep/sim/fields.h"
#include "lockstep/sim/level.h"
#include "lockstep/sim/scene.h"
#include "shape.h"
#include "world_data.h"

namespace lockstep::sim {
namespace {

constexpr uint32_t kFormatVersion = 1;

struct Token {
  std::string_view key;
  std::string_view value;
  size_t column = 0;  // 1-based column of the key
  bool used = false;
};

std::string quoted(std::string_view s) {
  std::string out = "'";
  out.append(s);
  out += '\'';
  return out;
}

/// Reads one float; false when `text` is not entirely a finite number.
bool read_float(std::string_view text, float* out) {
  char buffer[64];
  if (text.empty() || text.size() >= sizeof(buffer)) return false;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  // strtof would skip leading white space (e.g. a vertical tab inside a token): refuse it.
  char first = buffer[0];
  if (!((first >= '0' && first <= '9') || first == '-' || first == '+' || first == '.')) {
    return false;
  }
  char* end = nullptr;
  float value = std::strtof(buffer, &end);
  if (end != buffer + text.size()) return false;
  if (!std::isfinite(value)) return false;
  *out = value;
  return true;
}

/// Reads a decimal unsigned 32-bit integer: digits only, no sign, no overflow.
bool read_u32(std::string_view text, uint32_t* out) {
  if (text.empty() || text.size() > 10) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(value);
  return true;
}

// Bit sets (collision category and mask): decimal, or hexadecimal with 0x (1 to 8 digits).
bool read_bits(std::string_view text, uint32_t* out) {
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return read_u32(text, out);
  }
  text.remove_prefix(2);
  if (text.size() > 8) return false;
  uint32_t value = 0;
  for (char c : text) {
    uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
    value = value * 16 + digit;
  }
  *out = value;
  return true;
}

/// The key=value tokens of one line, with lookups that mark tokens used and build errors that
/// name the line, the column and the key.
class LineReader {
 public:
  LineReader(size_t line, std::string_view directive, std::vector<Token>* tokens,
             std::string* error)
      : line_(line), directive_(directive), tokens_(*tokens), error_(*error) {}

  bool fail(size_t column, const std::string& message) {
    error_ = "line " + std::to_string(line_);
    if (column != 0) error_ += " col " + std::to_string(column);
    error_ += ": ";
    error_.append(directive_);
    error_ += ": " + message;
    return false;
  }
  bool fail(const Token& token, const std::string& message) {
    return fail(token.column, "key " + quoted(token.key) + ": " + message);
  }

  /// The token for `key`, marked used; null when absent.
  Token* find(std::string_view key) {
    for (Token& token : tokens_) {
      if (token.key == key) {
        token.used = true;
        return &token;
      }
    }
    return nullptr;
  }

  bool require(std::string_view key, const char* why = nullptr) {
    for (const Token& token : tokens_) {
      if (token.key == key) return true;
    }
    std::string message = "missing key " + quoted(key);
    if (why != nullptr) message += std::string(" (") + why + ")";
    return fail(0, message);
  }

  bool get_float(std::string_view key, float* out) {
    Token* token = find(key);
    if (token == nullptr) return true;
    if (!read_float(token->value, out)) {
      return fail(*token, quoted(token->value) + " is not a finite number");
    }
    return true;
  }

  bool get_floats(std::string_view key, float* out, size_t arity) {
    Token* token = find(key);
    if (token == nullptr) return true;
    float values[4] = {};
    std::string_view rest = token->value;
    size_t count = 0;
    for (;;) {
      size_t comma = rest.find(',');
      std::string_view part = rest.substr(0, comma);
      if (count < arity && !read_float(part, &values[count])) {
        return fail(*token,
                    quoted(part) + " is not a finite number (in " + quoted(token->value) + ")");
      }
      ++count;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (count != arity) {
      return fail(*token, "needs " + std::to_string(arity) + " comma-separated numbers, got " +
                              std::to_string(count));
    }
    for (size_t i = 0; i < arity; ++i)
      out[i] = values[i];
    return true;
  }

  bool get_vec3(std::string_view key, Vec3* out) {
    float v[3] = {out->x, out->y, out->z};
    if (!get_floats(key, v, 3)) return false;
    *out = {v[0], v[1], v[2]};
    return true;
  }

  bool get_quat(std::string_view key, Quat* out) {
    float v[4] = {out->x, out->y, out->z, out->w};
    if (!get_floats(key, v, 4)) return false;
    *out = {v[0], v[1], v[2], v[3]};
    return true;
  }

  bool get_u32(std::string_view key, uint32_t* out) {
    Token* token = find(key);
    if (token == nullptr) return true;
    if (!read_u32(token->value, out)) {
      return fail(*token, quoted(token->value) + " is not an unsigned 32-bit integer");
    }
    return true;
  }

  bool get_bits(std::string_view key, uint32_t* out) {
    Token* token = find(key);
    if (token == nullptr) return true;
    if (!read_bits(token->value, out)) {
      return fail(*token, quoted(token->value) +
                              " is not a 32-bit bit set (decimal, or 0x and 1 to 8 hex digits)");
    }
    return true;
  }

  bool get_bool(std::string_view key, bool* out) {
    Token* token = find(key);
    if (token == nullptr) return true;
    if (token->value == "1" || token->value == "true") {
      *out = true;
    } else if (token->value == "0" || token->value == "false") {
      *out = false;
    } else {
      return fail(*token, quoted(token->value) + " is not a boolean (expected 0, 1, true, false)");
    }
    return true;
  }

  /// One of `names` (index written to *out); an error lists the accepted names.
  bool get_enum(std::string_view key, std::span<const std::string_view> names, size_t* out) {
    Token* token = find(key);
    if (token == nullptr) return true;
    for (size_t i = 0; i < names.size(); ++i) {
      if (token->value == names[i]) {
        *out = i;
        return true;
      }
    }
    std::string expected;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i != 0) expected += ", ";
      expected.append(names[i]);
    }
    return fail(token->column, "unknown " + std::string(key) + " " + quoted(token->value) +
                                   " (expected " + expected + ")");
  }

  /// Fails on the first token nobody asked for; `known` keys are reported as not applying.
  bool finish(std::string_view context, std::span<const std::string_view> known) {
    for (const Token& token : tokens_) {
      if (token.used) continue;
      for (std::string_view k : known) {
        if (token.key == k) {
          return fail(token.column,
                      "key " + quoted(token.key) + " does not apply to " + std::string(context));
        }
      }
      return fail(token.column, "unknown key " + quoted(token.key));
    }
    return true;
  }

 private:
  size_t line_;
  std::string_view directive_;
  std::vector<Token>& tokens_;
  std::string& error_;
};

// Names of scene bodies and rules: 1..kMaxTemplateNameBytes of [A-Za-z0-9_.-], like templates.
bool valid_scene_label(std::string_view name) {
  if (name.empty() || name.size() > kMaxTemplateNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool parse_scene_line(LineReader& reader, Scene* scene) {
  uint32_t version = kFormatVersion;
  if (!reader.get_u32("version", &version)) return false;
  if (version != kFormatVersion) {
    return reader.fail(0, "format version " + std::to_string(version) +
                              " is not supported (this "
                              "build reads version " +
                              std::to_string(kFormatVersion) + ")");
  }
  if (Token* name = reader.find("name")) scene->name = std::string(name->value);
  return reader.finish("a scene line", {});
}

// Whether a line carries the field: it has a key, describes the shape type being read or written
// (when there is one), and is no spawn argument unless those are wanted.
bool on_the_line(const Field& field, const ShapeType* shape, bool spawn_arguments) {
  return !field.key.empty() && (shape == nullptr || (field.shapes & shape_bit(*shape)) != 0) &&
         (spawn_arguments || (field.flags & field_spawn_argument) == 0);
}

// One field's key: floats and vectors as numbers, u32 in decimal (bit sets also in hex), bools as
// 0/1/true/false, enums by name.
template <class T>
bool get_field(LineReader& reader, const Field& field, T* value) {
  if constexpr (std::is_same_v<T, float>) {
    return reader.get_float(field.key, value);
  } else if constexpr (std::is_same_v<T, Vec3>) {
    return reader.get_vec3(field.key, value);
  } else if constexpr (std::is_same_v<T, Quat>) {
    return reader.get_quat(field.key, value);
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return (field.flags & field_text_hex) != 0 ? reader.get_bits(field.key, value)
                                               : reader.get_u32(field.key, value);
  } else if constexpr (std::is_same_v<T, bool>) {
    return reader.get_bool(field.key, value);
  } else {
    static_assert(std::is_enum_v<T>, "a field type the scene text does not know");
    size_t index = static_cast<size_t>(*value);
    if (!reader.get_enum(field.key, enum_names(*value), &index)) return false;
    *value = static_cast<T>(index);
    return true;
  }
}

// Reads the key of every field of *object's list that the line may carry, a nested definition in
// place: fields of another shape type than the one being read are left to finish() (which names
// them as not applying), spawn arguments too when `spawn_arguments` is false.
template <class T>
bool get_fields(LineReader& reader, T* object, const ShapeType* shape, bool spawn_arguments) {
  if constexpr (std::is_same_v<T, ShapeDef> || std::is_same_v<T, CompoundChild>) {
    shape = &object->type;
  }
  bool ok = true;
  Fields<T>::visit([&](const Field& field, auto member) {
    auto& value = object->*member;
    using M = std::remove_cvref_t<decltype(value)>;
    if (!ok) return;
    if constexpr (kHasFields<M>) {
      ok = get_fields(reader, &value, shape, spawn_arguments);
    } else if constexpr (std::is_array_v<M>) {
      // Template names and the templates have lines of their own.
    } else {
      if (!on_the_line(field, shape, spawn_arguments)) return;
      if ((field.flags & field_text_required) != 0) {
        const std::string why =
            field.shapes == kEveryShape || shape == nullptr
                ? std::string()
                : "shape " + std::string(enum_names(*shape)[static_cast<size_t>(*shape)]) +
                      " needs it";
        ok = reader.require(field.key, why.empty() ? nullptr : why.c_str());
        if (!ok) return;
      }
      ok = get_field(reader, field, &value);
    }
  });
  return ok;
}

bool parse_world_line(LineReader& reader, WorldDef* def) {
  bool ok = get_fields(reader, def, nullptr, true) && reader.finish("a world line", {});
  if (!ok) return false;
  Error e = validate_world_def(*def);
  if (e != Error::none) return reader.fail(0, std::string("invalid world: ") + error_message(e));
  return true;
}

// Every key a body line may carry (of any shape), so that one of another shape is named as such.
std::vector<std::string_view> body_keys() {
  std::vector<std::string_view> keys = {"name"};
  const auto add = [&keys](const Field& field, auto) {
    if (!field.key.empty()) keys.push_back(field.key);
  };
  Fields<BodyDef>::visit(add);
  Fields<ShapeDef>::visit(add);
  keys.push_back("points");
  keys.push_back("compound");
  keys.push_back("mesh");
  keys.push_back("heightfield");
  return keys;
}

// Index of the level file named `name` among `files`, -1 when there is none.
int find_level_file(const std::vector<SceneLevelFile>* files, std::string_view name) {
  if (files == nullptr) return -1;
  for (size_t i = 0; i < files->size(); ++i) {
    if ((*files)[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// A level file's path as a scene may write it: 1..kMaxLevelPathBytes of [A-Za-z0-9_.-/], relative
// (no leading '/'), and no empty, "." or ".." part, so a scene only reaches files in its own
// folder and below it.
constexpr size_t kMaxLevelPathBytes = 255;
bool valid_level_path(std::string_view path) {
  if (path.empty() || path.size() > kMaxLevelPathBytes) return false;
  for (char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-' || c == '/';
    if (!ok) return false;
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    const std::string_view part = path.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

// A `mesh` (`is_mesh`) or `heightfield` line: a named level file, kept for the loader above the
// sim (SceneLevelFile). Only its own fields are checked here; the file's content is the loader's.
bool parse_level_file_line(LineReader& reader, bool is_mesh, size_t line, Scene* scene) {
  std::vector<SceneLevelFile>& files = is_mesh ? scene->mesh_files : scene->heightfield_files;
  const char* what = is_mesh ? "mesh" : "heightfield";
  if (!reader.require("name", "body lines name it") ||
      !reader.require("file", is_mesh ? "a Wavefront OBJ file" : "a 16-bit gray PGM or PNG")) {
    return false;
  }
  const Token* name = reader.find("name");
  if (!valid_scene_label(name->value)) {
    return reader.fail(*name, "a name is 1 to " + std::to_string(kMaxTemplateNameBytes) +
                                  " bytes of [A-Za-z0-9_.-]");
  }
  if (find_level_file(&files, name->value) >= 0) {
    return reader.fail(*name, std::string("a second ") + what + " named " + quoted(name->value));
  }
  const uint32_t capacity = is_mesh ? kMaxMeshes : kMaxHeightfields;
  if (files.size() >= capacity) {
    return reader.fail(0, "more than " + std::to_string(capacity) + " " + what + " lines");
  }
  const Token* file = reader.find("file");
  if (!valid_level_path(file->value)) {
    return reader.fail(*file, quoted(file->value) +
                                  " is not a relative path of [A-Za-z0-9_.-/] without '..' (at "
                                  "most " +
                                  std::to_string(kMaxLevelPathBytes) + " bytes)");
  }
  SceneLevelFile level;
  level.name = std::string(name->value);
  level.file = std::string(file->value);
  level.line = static_cast<uint32_t>(line);
  if (is_mesh) {
    if (!reader.get_float("scale", &level.scale) || !reader.get_vec3("pos", &level.position) ||
        !reader.get_quat("rot", &level.orientation) || !reader.finish("a mesh line", {})) {
      return false;
    }
    if (!(level.scale > 0.0f && level.scale <= kMaxLevelCoordinate)) {
      return reader.fail(*reader.find("scale"), "must be in (0, 1e5]");
    }
    const Vec3 p = level.position;
    if (!(p.x >= -kMaxLevelCoordinate && p.x <= kMaxLevelCoordinate &&
          p.y >= -kMaxLevelCoordinate && p.y <= kMaxLevelCoordinate &&
          p.z >= -kMaxLevelCoordinate && p.z <= kMaxLevelCoordinate)) {
      return reader.fail(0, "key 'pos' is out of range (|component| <= 1e5 m)");
    }
    const float len_sq = dot(level.orientation, level.orientation);
    if (!(len_sq > 0.999f && len_sq < 1.001f)) {
      return reader.fail(0, "key 'rot' is not a unit quaternion (x,y,z,w with |q| = 1)");
    }
  } else {
    if (!reader.require("height", "metres at the brightest sample") ||
        !reader.get_float("spacing_x", &level.spacing_x) ||
        !reader.get_float("spacing_z", &level.spacing_z) ||
        !reader.get_float("height", &level.height) || !reader.finish("a heightfield line", {})) {
      return false;
    }
    if (!(level.spacing_x > 0.0f && level.spacing_x <= kMaxLevelCoordinate) ||
        !(level.spacing_z > 0.0f && level.spacing_z <= kMaxLevelCoordinate)) {
      return reader.fail(0, "spacing_x and spacing_z must be in (0, 1e5] m");
    }
    if (!(level.height >= 0.0f && level.height <= kMaxLevelCoordinate)) {
      return reader.fail(*reader.find("height"), "must be in [0, 1e5] m");
    }
  }
  files.push_back(std::move(level));
  return true;
}

// The scene's hulls and compounds as the lines so far made them (scene.def's, by index): each
// built once, to check it and to give the bodies that use it their mass.
struct BuiltShapes {
  std::vector<HullGeometry> hulls;
  std::vector<CompoundGeometry> compounds;
  // The scene's `mesh` and `heightfield` lines so far, which body lines name.
  const std::vector<SceneLevelFile>* mesh_files = nullptr;
  const std::vector<SceneLevelFile>* heightfield_files = nullptr;
  ShapeLibrary library() const {
    return ShapeLibrary{hulls.data(), static_cast<uint32_t>(hulls.size()), compounds.data(),
                        static_cast<uint32_t>(compounds.size())};
  }
};

// A hull shape's `points=x,y,z,x,y,z,...` key: found among the WorldDef's hulls (shapes with the
// same points share one hull), or built to check it and added; the shape names it. `built` holds
// the built hulls by index (so a hull used by many lines is built once).
bool get_hull_points(LineReader& reader, WorldDef* def, std::vector<HullGeometry>* built,
                     ShapeDef* shape) {
  if (!reader.require("points", "a hull shape lists its points")) return false;
  Token* token = reader.find("points");
  HullDef hull;
  std::string_view rest = token->value;
  float values[3 * kMaxHullPoints];
  size_t count = 0;
  for (;;) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    if (count == 3 * kMaxHullPoints) {
      return reader.fail(*token, "more than " + std::to_string(kMaxHullPoints) + " points");
    }
    if (!read_float(part, &values[count])) {
      return reader.fail(*token, quoted(part) + " is not a finite number");
    }
    ++count;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (count % 3 != 0) {
    return reader.fail(*token, "needs x,y,z for every point: " + std::to_string(count) +
                                   " numbers is not a multiple of 3");
  }
  hull.point_count = static_cast<uint32_t>(count / 3);
  for (uint32_t i = 0; i < hull.point_count; ++i)
    hull.points[i] = Vec3{values[3 * i], values[3 * i + 1], values[3 * i + 2]};
  if (hull.point_count < kMinHullPoints) {
    return reader.fail(*token, "a hull needs at least " + std::to_string(kMinHullPoints) +
                                   " points, got " + std::to_string(hull.point_count));
  }
  for (uint32_t i = 0; i < def->hull_count && i < built->size(); ++i) {
    const HullDef& known = def->hulls[i];
    if (known.point_count == hull.point_count &&
        std::memcmp(known.points, hull.points, sizeof(Vec3) * hull.point_count) == 0) {
      shape->hull = i;
      return true;
    }
  }
  HullGeometry geometry;
  const Error e = build_hull(hull, &geometry);
  if (e == Error::degenerate_hull) {
    return reader.fail(*token, "the " + std::to_string(hull.point_count) +
                                   " points are coplanar, or too close together, to span a solid");
  }
  if (e != Error::none) {
    return reader.fail(*token, std::to_string(hull.point_count) + " points: " + error_message(e));
  }
  if (def->hull_count >= kMaxHulls) {
    return reader.fail(*token,
                       "more than " + std::to_string(kMaxHulls) + " different hulls in one scene");
  }
  def->hulls[def->hull_count] = hull;
  built->resize(def->hull_count);
  built->push_back(geometry);
  shape->hull = def->hull_count++;
  return true;
}

// A body (or template) line's keys into *body; a hull shape's points go to def's hulls (`built`
// holds them built, by index).
bool parse_body_line(LineReader& reader, WorldDef* def, BuiltShapes* built, BodyDef* body) {
  if (!get_fields(reader, body, nullptr, true)) return false;
  ShapeDef& shape = body->shape;
  if (shape.type == ShapeType::hull && !get_hull_points(reader, def, &built->hulls, &shape)) {
    return false;
  }
  if (shape.type == ShapeType::compound) {
    if (!reader.require("compound", "a compound shape names a compound line")) return false;
    const Token* name = reader.find("compound");
    const int index = find_compound(*def, name->value);
    if (index < 0 || static_cast<size_t>(index) >= built->compounds.size()) {
      return reader.fail(*name, "no compound named " + quoted(name->value) +
                                    " (a compound line and its child lines come first)");
    }
    shape.compound = static_cast<uint32_t>(index);
  }
  const bool level_shape = shape.type == ShapeType::mesh || shape.type == ShapeType::heightfield;
  if (level_shape) {
    const bool is_mesh = shape.type == ShapeType::mesh;
    const char* key = is_mesh ? "mesh" : "heightfield";
    if (!reader.require(key, is_mesh ? "a mesh shape names a mesh line"
                                     : "a heightfield shape names a heightfield line")) {
      return false;
    }
    const Token* name = reader.find(key);
    const int index =
        find_level_file(is_mesh ? built->mesh_files : built->heightfield_files, name->value);
    if (index < 0) {
      return reader.fail(*name, std::string("no ") + key + " named " + quoted(name->value) +
                                    " (its " + key + " line comes first)");
    }
    shape.mesh = static_cast<uint32_t>(index);
    if (body->type != BodyType::static_body) {
      return reader.fail(0, std::string(key) + " shapes are only allowed on static bodies");
    }
  }
  const ShapeDef& checked = shape;
  const ShapeLibrary library = built->library();
  const std::string context =
      "shape " + std::string(kShapeTypeNames[static_cast<size_t>(shape.type)]);
  if (shape.type == ShapeType::plane && body->type != BodyType::static_body) {
    return reader.fail(0, "plane shapes are only allowed on static bodies (type=" +
                              std::string(kBodyTypeNames[static_cast<size_t>(body->type)]) + ")");
  }
  if (!reader.finish(context, body_keys())) return false;

  // Values that parse but a world would refuse; named here so the message points at the line.
  // A level shape's geometry is not known yet (the loader reads its file), only its name is.
  Error e = level_shape ? Error::none : validate_shape(checked, library);
  if (e != Error::none) {
    return reader.fail(0, "invalid " + context + ": " + error_message(e));
  }
  float len_sq = dot(body->orientation, body->orientation);
  if (!(len_sq > 0.999f && len_sq < 1.001f)) {
    return reader.fail(0, "key 'rot' is not a unit quaternion (x,y,z,w with |q| = 1)");
  }
  const Vec3 p = body->position;
  if (!(p.x >= -kMaxCoordinate && p.x <= kMaxCoordinate && p.y >= -kMaxCoordinate &&
        p.y <= kMaxCoordinate && p.z >= -kMaxCoordinate && p.z <= kMaxCoordinate)) {
    return reader.fail(0, "key 'pos' is out of range (|component| <= 1e5 m)");
  }
  if (!(body->linear_damping >= 0 && body->linear_damping <= kMaxDamping) ||
      !(body->angular_damping >= 0 && body->angular_damping <= kMaxDamping)) {
    return reader.fail(0, "damping must be in [0, 1000] 1/s");
  }
  return true;
}

// A `template` line: a body line with a name and without pose, velocity or owner (a spawn
// command gives those), appended to def->templates.
bool parse_template_line(LineReader& reader, WorldDef* def, BuiltShapes* built) {
  if (!reader.require("name", "templates need a name")) return false;
  const Token* name = reader.find("name");
  const Token* spawn_argument = nullptr;
  Fields<BodyDef>::visit([&reader, &spawn_argument](const Field& field, auto) {
    if ((field.flags & field_spawn_argument) != 0 && spawn_argument == nullptr) {
      spawn_argument = reader.find(field.key);
    }
  });
  if (spawn_argument != nullptr) {
    return reader.fail(*spawn_argument,
                       "templates take no pose, velocity or owner (the spawn command gives them)");
  }
  if (def->template_count >= kMaxBodyTemplates) {
    return reader.fail(0, "more than " + std::to_string(kMaxBodyTemplates) + " templates");
  }
  BodyTemplate t;
  if (!set_template_name(&t, name->value)) {
    return reader.fail(*name, "a name is 1 to " + std::to_string(kMaxTemplateNameBytes) +
                                  " bytes of [A-Za-z0-9_.-]");
  }
  if (find_template(*def, name->value) >= 0) {
    return reader.fail(*name, "a second template named " + quoted(name->value));
  }
  BodyDef body = default_body_def();
  if (!parse_body_line(reader, def, built, &body)) return false;
  set_template_properties(&t, body);
  if (t.type == BodyType::dynamic) {
    const MassProperties m = compute_mass_properties(t.shape, built->library());
    if (!(m.mass > 0.0f) || !std::isfinite(m.mass)) {
      return reader.fail(0, "a dynamic template needs a positive mass (density)");
    }
  }
  def->templates[def->template_count++] = t;
  return true;
}

// A `compound` line: a named compound, whose children are the `child` lines right after it.
bool parse_compound_line(LineReader& reader, WorldDef* def) {
  if (!reader.require("name", "compounds need a name")) return false;
  const Token* name = reader.find("name");
  if (def->compound_count >= kMaxCompounds) {
    return reader.fail(0, "more than " + std::to_string(kMaxCompounds) + " compounds");
  }
  CompoundDef compound;
  if (!set_compound_name(&compound, name->value)) {
    return reader.fail(*name, "a name is 1 to " + std::to_string(kMaxCompoundNameBytes) +
                                  " bytes of [A-Za-z0-9_.-]");
  }
  if (find_compound(*def, name->value) >= 0) {
    return reader.fail(*name, "a second compound named " + quoted(name->value));
  }
  if (!reader.finish("a compound line", {})) return false;
  def->compounds[def->compound_count++] = compound;
  return true;
}

// Every key a child line may carry (of any shape), so that one of another shape is named as such.
std::vector<std::string_view> child_keys() {
  std::vector<std::string_view> keys = {"points"};
  Fields<CompoundChild>::visit([&keys](const Field& field, auto) {
    if (!field.key.empty()) keys.push_back(field.key);
  });
  return keys;
}

// A `child` line: one more child of the compound being read, checked with the children before
// it (so a bad child is named on its own line).
bool parse_child_line(LineReader& reader, WorldDef* def, BuiltShapes* built) {
  CompoundDef& compound = def->compounds[def->compound_count - 1];
  if (compound.child_count >= kMaxCompoundChildren) {
    return reader.fail(
        0, "more than " + std::to_string(kMaxCompoundChildren) + " children in one compound");
  }
  CompoundChild child;
  if (!get_fields(reader, &child, nullptr, true)) return false;
  if (child.type == ShapeType::plane || child.type == ShapeType::compound) {
    return reader.fail(*reader.find("shape"),
                       "a child is a sphere, box, capsule or hull (compounds do not nest)");
  }
  if (child.type == ShapeType::hull) {
    ShapeDef hull_shape;
    if (!get_hull_points(reader, def, &built->hulls, &hull_shape)) return false;
    child.hull = hull_shape.hull;
  }
  const std::string context =
      "child shape " + std::string(kShapeTypeNames[static_cast<size_t>(child.type)]);
  if (!reader.finish(context, child_keys())) return false;
  CompoundDef grown = compound;
  grown.children[grown.child_count++] = child;
  CompoundGeometry geometry;
  const Error e = build_compound(grown, built->hulls.data(),
                                 static_cast<uint32_t>(built->hulls.size()), &geometry);
  if (e != Error::none) return reader.fail(0, "invalid " + context + ": " + error_message(e));
  compound = grown;
  built->compounds.resize(def->compound_count - 1);
  built->compounds.push_back(geometry);
  return true;
}

// A `player` line: the template each joining player's body is spawned from.
bool parse_player_line(LineReader& reader, Scene* scene) {
  if (!reader.require("template", "say which template players' bodies are spawned from")) {
    return false;
  }
  const Token* name = reader.find("template");
  const int index = find_template(scene->def, name->value);
  if (index < 0) {
    return reader.fail(
        *name, "no template named " + quoted(name->value) + " (template lines must come before)");
  }
  if (scene->def.templates[index].type != BodyType::dynamic) {
    return reader.fail(*name, "players' bodies must be dynamic (inputs steer them)");
  }
  if (!reader.finish("a player line", {})) return false;
  scene->player_template = index;
  return true;
}

// A `spawn` line: one place a player's body may appear.
bool parse_spawn_line(LineReader& reader, Scene* scene) {
  if (!reader.require("pos", "spawn points need a position")) return false;
  SpawnPoint point;
  if (!reader.get_vec3("pos", &point.position) || !reader.get_quat("rot", &point.orientation) ||
      !reader.finish("a spawn line", {})) {
    return false;
  }
  const Vec3 p = point.position;
  if (!(p.x >= -kMaxCoordinate && p.x <= kMaxCoordinate && p.y >= -kMaxCoordinate &&
        p.y <= kMaxCoordinate && p.z >= -kMaxCoordinate && p.z <= kMaxCoordinate)) {
    return reader.fail(0, "key 'pos' is out of range (|component| <= 1e5 m)");
  }
  const float len_sq = dot(point.orientation, point.orientation);
  if (!(len_sq > 0.999f && len_sq < 1.001f)) {
    return reader.fail(0, "key 'rot' is not a unit quaternion (x,y,z,w with |q| = 1)");
  }
  scene->spawn_points.push_back(point);
  return true;
}

// A `rules` line: the built-in game rules a server runs for the scene (the server checks the
// name is one it has).
bool parse_rules_line(LineReader& reader, Scene* scene) {
  if (!reader.require("name", "say which rules")) return false;
  const Token* name = reader.find("name");
  if (!valid_scene_label(name->value)) {
    return reader.fail(*name, "a name is 1 to " + std::to_string(kMaxTemplateNameBytes) +
                                  " bytes of [A-Za-z0-9_.-]");
  }
  if (!reader.finish("a rules line", {})) return false;
  scene->rules = std::string(name->value);
  return true;
}

// A `state` line: one game state field, `state name=N scope=room|player type=int|fixed
// default=V`. An int default is a decimal int32; a fixed one a number whose value · 2^16 is an
// integer that fits an int32 (the raw value).
bool parse_state_line(LineReader& reader, Scene* scene) {
  if (!reader.require("name", "name the field")) return false;
  const Token* name = reader.find("name");
  if (!valid_scene_label(name->value)) {
    return reader.fail(
        *name, "a name is 1 to " + std::to_string(kMaxStateNameBytes) + " bytes of [A-Za-z0-9_.-]");
  }
  if (name->value == "score") {
    return reader.fail(*name, "'score' is the players' scores, a field every world has");
  }
  for (const StateFieldDef& other : scene->state_fields) {
    if (std::string_view(other.name, strnlen(other.name, sizeof(other.name))) == name->value) {
      return reader.fail(*name, "a second state field named " + quoted(name->value));
    }
  }
  if (scene->state_fields.size() >= kMaxStateFields) {
    return reader.fail(0, "more than " + std::to_string(kMaxStateFields) + " state fields");
  }
  StateFieldDef field;
  std::memcpy(field.name, name->value.data(), name->value.size());
  constexpr std::string_view kScopes[] = {"room", "player"};
  constexpr std::string_view kTypes[] = {"int", "fixed"};
  size_t scope = 0, type = 0;
  if (!reader.require("scope", "room or player") || !reader.get_enum("scope", kScopes, &scope) ||
      !reader.require("type", "int or fixed") || !reader.get_enum("type", kTypes, &type)) {
    return false;
  }
  field.scope = static_cast<StateScope>(scope);
  field.type = static_cast<StateType>(type);
  if (Token* token = reader.find("default")) {
    std::string_view text = token->value;
    int64_t raw = 0;
    bool ok = false;
    if (field.type == StateType::int32) {
      const bool negative = !text.empty() && text[0] == '-';
      if (negative) text.remove_prefix(1);
      uint32_t magnitude = 0;
      ok = read_u32(text, &magnitude);
      raw = negative ? -int64_t{magnitude} : int64_t{magnitude};
    } else {
      float value = 0;
      if (read_float(text, &value)) {
        const double scaled = static_cast<double>(value) * 65536.0;  // exact
        ok = scaled >= -2147483648.0 && scaled <= 2147483647.0;
        raw = ok ? static_cast<int64_t>(scaled) : 0;
        ok = ok && static_cast<double>(raw) == scaled;
      }
    }
    if (!ok || raw < INT32_MIN || raw > INT32_MAX) {
      return reader.fail(
          *token, quoted(token->value) + (field.type == StateType::int32
                                              ? " is not a 32-bit integer"
                                              : " is not a multiple of 1/65536 within +-32768"));
    }
    field.default_value = static_cast<int32_t>(raw);
  }
  if (!reader.finish("a state line", {})) return false;
  scene->state_fields.push_back(field);
  return true;
}

// A float in input fixed point (value · 2^kInputScaleLog2): exact multiples of 2^-10 only, so
// the file says exactly what crosses the wire.
bool get_fixed3(LineReader& reader, std::string_view key, int32_t out[3]) {
  Token* token = reader.find(key);
  if (token == nullptr) return true;
  token->used = false;
  Vec3 v{};
  if (!reader.get_vec3(key, &v)) return false;
  const float f[3] = {v.x, v.y, v.z};
  for (int i = 0; i < 3; ++i) {
    const float scaled = f[i] * static_cast<float>(1 << kInputScaleLog2);  // exact
    if (!(scaled >= -2147483648.0f && scaled < 2147483648.0f) ||
        static_cast<float>(static_cast<int32_t>(scaled)) != scaled) {
      return reader.fail(*token, "needs multiples of 1/1024 within the int32 fixed-point range");
    }
    out[i] = static_cast<int32_t>(scaled);
  }
  return true;
}

// `at tick=N spawn|destroy|input ...`: a scheduled command or input (docs/scene-format.md).
bool parse_at_line(LineReader& reader, const WorldDef& def, size_t line, ScriptedAction* action) {
  if (!reader.require("tick") || !reader.require("do", "say spawn, destroy or input")) {
    return false;
  }
  uint32_t tick = 0;
  if (!reader.get_u32("tick", &tick)) return false;
  if (tick == 0) return reader.fail(*reader.find("tick"), "ticks start at 1 (the first step)");
  action->tick = tick;
  action->line = static_cast<uint32_t>(line);
  const std::string_view what = reader.find("do")->value;
  uint32_t sequence = static_cast<uint32_t>(line);  // default: file order
  uint32_t generation = 0;
  if (!reader.get_u32("seq", &sequence) || !reader.get_u32("gen", &generation)) return false;
  if (what == "spawn") {
    if (!reader.require("template", "spawns name a template")) return false;
    const Token* name = reader.find("template");
    const int index = find_template(def, name->value);
    if (index < 0) {
      return reader.fail(
          *name, "no template named " + quoted(name->value) + " (template lines must come before)");
    }
    Command& c = action->command;
    c.type = CommandType::spawn;
    c.sequence = sequence;
    c.template_index = static_cast<uint32_t>(index);
    if (!reader.get_vec3("pos", &c.position) || !reader.get_quat("rot", &c.orientation) ||
        !reader.get_vec3("vel", &c.linear_velocity) ||
        !reader.get_vec3("angvel", &c.angular_velocity) ||
        !reader.get_u32("owner", &c.owner_player) || !reader.finish("at ... spawn", {})) {
      return false;
    }
    const Error e = check_command_fields(def, c);
    if (e != Error::none) return reader.fail(0, std::string("invalid spawn: ") + error_message(e));
    return true;
  }
  if (what == "destroy") {
    if (!reader.require("body", "destroys name a body (index1, and gen=)")) return false;
    Command& c = action->command;
    c.type = CommandType::destroy;
    c.sequence = sequence;
    if (!reader.get_u32("body", &c.body.index1) || !reader.finish("at ... destroy", {})) {
      return false;
    }
    c.body.generation = generation;
    if (c.body.index1 == 0) return reader.fail(*reader.find("body"), "body indices start at 1");
    return true;
  }
  action->is_command = false;
  Input& in = action->input;
  if (!reader.require("body", "inputs name a body (index1, and gen=)") ||
      !reader.require("player")) {
    return false;
  }
  in.sequence = sequence;
  if (!reader.get_u32("player", &in.player) || !reader.get_u32("body", &in.body.index1) ||
      !reader.get_u32("buttons", &in.buttons) || !get_fixed3(reader, "vel", in.linear_velocity) ||
      !get_fixed3(reader, "angvel", in.angular_velocity) ||
      !get_fixed3(reader, "impulse", in.linear_impulse) ||
      !get_fixed3(reader, "angular_impulse", in.angular_impulse)) {
    return false;
  }
  if (reader.find("vel") != nullptr) in.flags |= input_sets_linear_velocity;
  if (reader.find("angvel") != nullptr) in.flags |= input_sets_angular_velocity;
  in.body.generation = generation;
  if (in.body.index1 == 0) return reader.fail(*reader.find("body"), "body indices start at 1");
  return reader.finish("at ... input", {});
}

/// Splits `line` (comment already removed) into the directive and key=value tokens.
bool tokenize(std::string_view line, size_t line_number, std::string_view* directive,
              size_t* directive_column, std::vector<Token>* tokens, std::string* error) {
  tokens->clear();
  *directive = {};
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    std::string_view word = line.substr(start, i - start);
    if (directive->empty()) {
      *directive = word;
      *directive_column = start + 1;
      continue;
    }
    size_t eq = word.find('=');
    // `at` lines name their action with a bare word (spawn, destroy, input), kept as key "do".
    if (*directive == "at" && eq == std::string_view::npos &&
        (word == "spawn" || word == "destroy" || word == "input")) {
      tokens->push_back(Token{"do", word, start + 1, false});
      continue;
    }
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == word.size()) {
      *error = "line " + std::to_string(line_number) + " col " + std::to_string(start + 1) + ": " +
               std::string(*directive) + ": expected key=value, got " + quoted(word);
      return false;
    }
    Token token;
    token.key = word.substr(0, eq);
    token.value = word.substr(eq + 1);
    token.column = start + 1;
    for (const Token& other : *tokens) {
      if (other.key == token.key) {
        *error = "line " + std::to_string(line_number) + " col " + std::to_string(start + 1) +
                 ": " + std::string(*directive) + ": key " + quoted(token.key) + " given twice";
        return false;
      }
    }
    tokens->push_back(token);
  }
  return true;
}

/// Shortest of %.6g .. %.9g that reads back to the same float (%.9g always does).
void append_float(std::string* out, float value) {
  char buffer[32];
  for (int digits = 6; digits <= 9; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, static_cast<double>(value));
    float back = 0;
    if (digits == 9 || (read_float(buffer, &back) && std::memcmp(&back, &value, 4) == 0)) break;
  }
  out->append(buffer);
}

void append_key_float(std::string* out, std::string_view key, float value) {
  *out += ' ';
  out->append(key);
  *out += '=';
  append_float(out, value);
}

void append_key_floats(std::string* out, std::string_view key, const float* values, size_t count) {
  *out += ' ';
  out->append(key);
  *out += '=';
  for (size_t i = 0; i < count; ++i) {
    if (i != 0) *out += ',';
    append_float(out, values[i]);
  }
}

void append_key_vec3(std::string* out, std::string_view key, Vec3 v) {
  float values[3] = {v.x, v.y, v.z};
  append_key_floats(out, key, values, 3);
}

void append_key_u32(std::string* out, std::string_view key, uint32_t value) {
  *out += ' ';
  out->append(key);
  *out += '=';
  *out += std::to_string(value);
}

void append_key_bits(std::string* out, std::string_view key, uint32_t value) {
  static constexpr char kHex[] = "0123456789abcdef";
  char text[11] = {'0', 'x'};
  for (int i = 0; i < 8; ++i)
    text[2 + i] = kHex[(value >> (28 - 4 * i)) & 0xfu];
  text[10] = '\0';
  *out += ' ';
  out->append(key);
  *out += '=';
  out->append(text);
}

// A field's key=value, as get_field reads it back.
template <class T>
void append_field(std::string* out, const Field& field, const T& value) {
  if constexpr (std::is_same_v<T, float>) {
    append_key_float(out, field.key, value);
  } else if constexpr (std::is_same_v<T, Vec3>) {
    append_key_vec3(out, field.key, value);
  } else if constexpr (std::is_same_v<T, Quat>) {
    const float values[4] = {value.x, value.y, value.z, value.w};
    append_key_floats(out, field.key, values, 4);
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    if ((field.flags & field_text_hex) != 0) {
      append_key_bits(out, field.key, value);
    } else {
      append_key_u32(out, field.key, value);
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    *out += ' ';
    out->append(field.key);
    *out += value ? "=1" : "=0";
  } else {
    static_assert(std::is_enum_v<T>, "a field type the scene text does not know");
    *out += ' ';
    out->append(field.key);
    *out += '=';
    out->append(enum_names(value)[static_cast<size_t>(value)]);
  }
}

// The keys of *object's fields that apply to the shape type being written (a nested definition
// in place), in list order: those marked field_text_if_changed only when they differ from
// `defaults` bit for bit (parsing starts from the same defaults, so the round trip is exact),
// spawn arguments only when `spawn_arguments`.
template <class T>
void append_fields(std::string* out, const T& object, const T& defaults, const ShapeType* shape,
                   bool spawn_arguments) {
  if constexpr (std::is_same_v<T, ShapeDef> || std::is_same_v<T, CompoundChild>) {
    shape = &object.type;
  }
  Fields<T>::visit([&](const Field& field, auto member) {
    const auto& value = object.*member;
    using M = std::remove_cvref_t<decltype(value)>;
    if constexpr (kHasFields<M>) {
      append_fields(out, value, defaults.*member, shape, spawn_arguments);
    } else if constexpr (std::is_array_v<M>) {
      // Template names and the templates have lines of their own.
    } else {
      if (!on_the_line(field, shape, spawn_arguments)) return;
      if ((field.flags & field_text_if_changed) != 0 &&
          std::memcmp(&value, &(defaults.*member), sizeof(M)) == 0) {
        return;
      }
      append_field(out, field, value);
    }
  });
}

}  // namespace

namespace {

// The end of a compound's child lines: a compound with none is refused on its own line.
bool close_compound(const WorldDef& def, const BuiltShapes& built, size_t line,
                    std::string* message) {
  const CompoundDef& compound = def.compounds[def.compound_count - 1];
  if (compound.child_count > 0 && built.compounds.size() == def.compound_count) return true;
  *message =
      "line " + std::to_string(line) + ": compound: " +
      quoted(std::string_view(compound.name, strnlen(compound.name, sizeof(compound.name)))) +
      " has no child lines (a compound has 1 to " + std::to_string(kMaxCompoundChildren) +
      " children)";
  return false;
}

}  // namespace

bool parse_scene_text(std::string_view text, Scene* out, std::string* error) {
  std::string scratch_error;
  std::string& message = error != nullptr ? *error : scratch_error;
  Scene scene;
  scene.def = default_world_def();
  BuiltShapes built;  // scene.def's hulls and compounds, built once each
  built.mesh_files = &scene.mesh_files;
  built.heightfield_files = &scene.heightfield_files;
  // The compound line whose child lines may follow (0: none), and whether it has one yet.
  size_t compound_line = 0;
  size_t first_body_line = 0;  // the first template or body line
  size_t world_line = 0, scene_line = 0, player_line = 0, first_spawn_line = 0, rules_line = 0;
  std::vector<Token> tokens;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);

    std::string_view directive;
    size_t directive_column = 0;
    if (!tokenize(line, line_number, &directive, &directive_column, &tokens, &message)) {
      return false;
    }
    if (directive.empty()) continue;
    LineReader reader(line_number, directive, &tokens, &message);
    if (directive != "child" && compound_line != 0) {
      if (!close_compound(scene.def, built, compound_line, &message)) return false;
      compound_line = 0;
    }
    if (directive == "scene") {
      if (scene_line != 0) {
        return reader.fail(directive_column, "a second scene line (the first is line " +
                                                 std::to_string(scene_line) + ")");
      }
      scene_line = line_number;
      if (!parse_scene_line(reader, &scene)) return false;
    } else if (directive == "world") {
      if (world_line != 0) {
        return reader.fail(directive_column, "a second world line (the first is line " +
                                                 std::to_string(world_line) + ")");
      }
      world_line = line_number;
      if (!parse_world_line(reader, &scene.def)) return false;
    } else if (directive == "body") {
      if (first_body_line == 0) first_body_line = line_number;
      BodyDef body = default_body_def();
      if (Token* name = reader.find("name")) {
        if (!valid_scene_label(name->value)) {
          return reader.fail(*name, "a name is 1 to " + std::to_string(kMaxTemplateNameBytes) +
                                        " bytes of [A-Za-z0-9_.-]");
        }
        if (!find_scene_body(scene, name->value).is_null()) {
          return reader.fail(*name, "a second body named " + quoted(name->value));
        }
        scene.named_bodies.push_back(
            NamedBody{std::string(name->value), static_cast<uint32_t>(scene.bodies.size())});
      }
      if (!parse_body_line(reader, &scene.def, &built, &body)) return false;
      scene.bodies.push_back(body);
    } else if (directive == "player") {
      if (player_line != 0) {
        return reader.fail(directive_column, "a second player line (the first is line " +
                                                 std::to_string(player_line) + ")");
      }
      player_line = line_number;
      if (!parse_player_line(reader, &scene)) return false;
    } else if (directive == "spawn") {
      if (!parse_spawn_line(reader, &scene)) return false;
      if (first_spawn_line == 0) first_spawn_line = line_number;
    } else if (directive == "rules") {
      if (rules_line != 0) {
        return reader.fail(directive_column, "a second rules line (the first is line " +
                                                 std::to_string(rules_line) + ")");
      }
      rules_line = line_number;
      if (!parse_rules_line(reader, &scene)) return false;
    } else if (directive == "state") {
      if (!parse_state_line(reader, &scene)) return false;
    } else if (directive == "template") {
      if (first_body_line == 0) first_body_line = line_number;
      if (!parse_template_line(reader, &scene.def, &built)) return false;
    } else if (directive == "compound") {
      if (first_body_line != 0) {
        // Hulls are numbered in the order lines name them; compounds first keeps the order the
        // scene writer gives them, so a scene written and read back is the same bit for bit.
        return reader.fail(directive_column,
                           "compound lines come before template and body lines (line " +
                               std::to_string(first_body_line) + " is one)");
      }
      if (!parse_compound_line(reader, &scene.def)) return false;
      compound_line = line_number;
    } else if (directive == "child") {
      if (compound_line == 0) {
        return reader.fail(directive_column,
                           "a child line belongs right after a compound line "
                           "or another child line");
      }
      if (!parse_child_line(reader, &scene.def, &built)) return false;
    } else if (directive == "mesh" || directive == "heightfield") {
      if (first_body_line != 0) {
        // Like compounds: what body lines name comes first, so written text reads back the same.
        return reader.fail(directive_column,
                           std::string(directive) +
                               " lines come before template and body lines (line " +
                               std::to_string(first_body_line) + " is one)");
      }
      if (!parse_level_file_line(reader, directive == "mesh", line_number, &scene)) return false;
    } else if (directive == "at") {
      ScriptedAction action;
      if (!parse_at_line(reader, scene.def, line_number, &action)) return false;
      scene.actions.push_back(action);
    } else {
      message = "line " + std::to_string(line_number) + " col " + std::to_string(directive_column) +
                ": unknown directive " + quoted(directive) +
                " (expected scene, world, mesh, heightfield, body, template, compound, child, "
                "player, spawn, rules, state, at)";
      return false;
    }
  }
  if (compound_line != 0 && !close_compound(scene.def, built, compound_line, &message)) {
    return false;
  }
  if (player_line != 0 && scene.spawn_points.empty()) {
    message = "line " + std::to_string(player_line) +
              ": player: the scene has no spawn line (players' bodies need a place to appear)";
    return false;
  }
  if (player_line == 0 && !scene.spawn_points.empty()) {
    message = "line " + std::to_string(first_spawn_line) +
              ": spawn: spawn points need a player line (which template to spawn)";
    return false;
  }
  if (scene.bodies.size() > scene.def.max_bodies) {
    message = (world_line != 0 ? "line " + std::to_string(world_line) + ": world: "
                               : std::string("no world line: default ")) +
              "max_bodies=" + std::to_string(scene.def.max_bodies) + " but the scene has " +
              std::to_string(scene.bodies.size()) + " bodies";
    return false;
  }
  std::stable_sort(
      scene.actions.begin(), scene.actions.end(),
      [](const ScriptedAction& a, const ScriptedAction& b) { return a.tick < b.tick; });
  *out = std::move(scene);
  return true;
}

namespace {

// The `world` line: every WorldDef field, always (so a file says what it runs).
void append_world_line(std::string* out, const WorldDef& def) {
  *out += "world";
  append_fields(out, def, def, nullptr, true);
  *out += '\n';
}

// A hull's `points=` key (the hull WorldDef::hulls[index]).
void append_hull_points(std::string* out, const WorldDef& def, uint32_t index) {
  if (index >= def.hull_count || index >= kMaxHulls) return;
  const HullDef& hull = def.hulls[index];
  const uint32_t n = hull.point_count <= kMaxHullPoints ? hull.point_count : kMaxHullPoints;
  float values[3 * kMaxHullPoints];
  for (uint32_t i = 0; i < n; ++i) {
    values[3 * i] = hull.points[i].x;
    values[3 * i + 1] = hull.points[i].y;
    values[3 * i + 2] = hull.points[i].z;
  }
  append_key_floats(out, "points", values, 3 * n);
}

// One body (with pose, velocity and owner: `pose`) or template (without) line's keys after its
// name; optional keys equal to default_body_def()'s are left out.
void append_body_keys(std::string* out, const Scene& scene, const BodyDef& body, bool pose) {
  const WorldDef& def = scene.def;
  append_fields(out, body, default_body_def(), nullptr, pose);
  const std::vector<SceneLevelFile>* files = body.shape.type == ShapeType::mesh ? &scene.mesh_files
                                             : body.shape.type == ShapeType::heightfield
                                                 ? &scene.heightfield_files
                                                 : nullptr;
  if (files != nullptr && body.shape.mesh < files->size()) {
    *out += body.shape.type == ShapeType::mesh ? " mesh=" : " heightfield=";
    *out += (*files)[body.shape.mesh].name;
  }
  if (body.shape.type == ShapeType::hull) append_hull_points(out, def, body.shape.hull);
  if (body.shape.type == ShapeType::compound && body.shape.compound < def.compound_count &&
      body.shape.compound < kMaxCompounds) {
    const CompoundDef& c = def.compounds[body.shape.compound];
    *out += " compound=";
    out->append(c.name, strnlen(c.name, sizeof(c.name)));
  }
  *out += '\n';
}

// The `compound` lines, each with its `child` lines.
void append_compound_lines(std::string* out, const WorldDef& def) {
  for (uint32_t i = 0; i < def.compound_count && i < kMaxCompounds; ++i) {
    const CompoundDef& c = def.compounds[i];
    *out += "compound name=";
    out->append(c.name, strnlen(c.name, sizeof(c.name)));
    *out += '\n';
    for (uint32_t k = 0; k < c.child_count && k < kMaxCompoundChildren; ++k) {
      *out += "child";
      append_fields(out, c.children[k], CompoundChild{}, nullptr, true);
      if (c.children[k].type == ShapeType::hull) append_hull_points(out, def, c.children[k].hull);
      *out += '\n';
    }
  }
}

// The `mesh` and `heightfield` lines, every key written (so a file says what it loads).
void append_level_file_lines(std::string* out, const Scene& scene) {
  for (const SceneLevelFile& mesh : scene.mesh_files) {
    *out += "mesh name=" + mesh.name + " file=" + mesh.file;
    append_key_float(out, "scale", mesh.scale);
    append_key_vec3(out, "pos", mesh.position);
    const float rot[4] = {mesh.orientation.x, mesh.orientation.y, mesh.orientation.z,
                          mesh.orientation.w};
    append_key_floats(out, "rot", rot, 4);
    *out += '\n';
  }
  for (const SceneLevelFile& field : scene.heightfield_files) {
    *out += "heightfield name=" + field.name + " file=" + field.file;
    append_key_float(out, "spacing_x", field.spacing_x);
    append_key_float(out, "spacing_z", field.spacing_z);
    append_key_float(out, "height", field.height);
    *out += '\n';
  }
}

// The `player` and `spawn` lines: what a server spawns for each joining player, and where.
void append_player_lines(std::string* out, const Scene& scene) {
  if (scene.player_template >= 0 &&
      static_cast<uint32_t>(scene.player_template) < scene.def.template_count) {
    const BodyTemplate& t = scene.def.templates[scene.player_template];
    *out += "player template=";
    out->append(t.name, strnlen(t.name, sizeof(t.name)));
    *out += '\n';
  }
  for (const SpawnPoint& point : scene.spawn_points) {
    *out += "spawn";
    append_key_vec3(out, "pos", point.position);
    float rot[4] = {point.orientation.x, point.orientation.y, point.orientation.z,
                    point.orientation.w};
    append_key_floats(out, "rot", rot, 4);
    *out += '\n';
  }
}

}  // namespace

std::string format_scene_text(const Scene& scene) {
  std::string out = "# lockstep scene (format: docs/scene-format.md)\n";
  out += "scene version=" + std::to_string(kFormatVersion);
  // Names are single tokens: characters the parser would split on become '_'.
  std::string name = scene.name;
  for (char& c : name) {
    if (c == ' ' || c == '\t' || c == '#' || c == '\n' || c == '\r') c = '_';
  }
  if (!name.empty()) out += " name=" + name;
  out += '\n';

  append_world_line(&out, scene.def);
  append_compound_lines(&out, scene.def);
  append_level_file_lines(&out, scene);
  for (uint32_t i = 0; i < scene.def.template_count && i < kMaxBodyTemplates; ++i) {
    const BodyTemplate& t = scene.def.templates[i];
    out += "template name=";
    out.append(t.name, strnlen(t.name, sizeof(t.name)));
    append_body_keys(&out, scene, template_body_def(t), false);
  }
  for (size_t i = 0; i < scene.bodies.size(); ++i) {
    out += "body";
    for (const NamedBody& named : scene.named_bodies) {
      if (named.index == i) out += " name=" + named.name;
    }
    append_body_keys(&out, scene, scene.bodies[i], true);
  }
  append_player_lines(&out, scene);
  if (!scene.rules.empty()) out += "rules name=" + scene.rules + "\n";
  for (const StateFieldDef& field : scene.state_fields) {
    out += "state name=";
    out.append(field.name, strnlen(field.name, sizeof(field.name)));
    out += field.scope == StateScope::room ? " scope=room" : " scope=player";
    if (field.type == StateType::int32) {
      out += " type=int default=" + std::to_string(field.default_value) + "\n";
    } else {
      out += " type=fixed default=";
      append_float(&out, static_cast<float>(fixed_state_value(field.default_value)));
      out += "\n";
    }
  }
  return out;
}

BodyId find_scene_body(const Scene& scene, std::string_view name) {
  for (const NamedBody& named : scene.named_bodies) {
    if (named.name == name) return BodyId{named.index + 1, 0};
  }
  return BodyId{};
}

}  // namespace lockstep::sim
