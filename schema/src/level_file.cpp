// Level files (level_file.h): OBJ meshes through tinyobjloader, 16-bit gray PGM by hand (a
// header of four numbers), 16-bit gray PNG through libpng. Every refusal names the file and, where
// one line is at fault, the line.
#include "lockstep/schema/level_file.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capped_file.h"
#include "lockstep/sim/level.h"

#if LOCKSTEP_HAVE_TINYOBJLOADER
#include <tiny_obj_loader.h>
#endif
#if LOCKSTEP_HAVE_PNG
#include <png.h>
#endif

namespace lockstep::schema {
namespace {

bool read_level_file(const std::string& path, std::string* bytes, std::string* error) {
  return detail::read_capped_file(path, kMaxLevelFileBytes, "the level file budget", bytes, error);
}

// The whitespace-separated words of one line (space, tab), '\r' and a '#' comment removed.
void split_words(std::string_view line, std::vector<std::string_view>* words) {
  words->clear();
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t hash = line.find('#');
  if (hash != std::string_view::npos) line = line.substr(0, hash);
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t')
      ++i;
    words->push_back(line.substr(start, i - start));
  }
}

// A decimal number as the nearest float (std::from_chars rounds correctly and ignores the
// locale); an optional leading '+'. False for anything else, and for inf and nan.
bool parse_coordinate(std::string_view word, float* out) {
  if (!word.empty() && word.front() == '+') word.remove_prefix(1);
  if (word.empty()) return false;
  float value = 0;
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) return false;
#else
  // The libc++ of Debian's emscripten has no floating-point from_chars; its C library (musl)
  // rounds strtof correctly, and a wasm module's locale is always "C". Only what from_chars
  // takes goes through: digits, one '.', an exponent (no hex, inf, nan or spaces).
  if (word.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return false;
  const std::string text(word);
  char* end = nullptr;
  errno = 0;
  value = std::strtof(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size()) return false;
#endif
  if (!std::isfinite(value)) return false;
  *out = value;
  return true;
}

std::string at_line(const std::string& source, size_t line) {
  return source + ": line " + std::to_string(line) + ": ";
}

// The `v` lines' first three numbers, read exactly, with each one's line for messages.
[[maybe_unused]] bool read_obj_vertices(std::string_view text, const std::string& source,
                                        std::vector<sim::Vec3>* out, std::vector<uint32_t>* lines,
                                        std::vector<uint32_t>* face_lines, std::string* error) {
  std::vector<std::string_view> words;
  size_t line = 0;
  while (!text.empty()) {
    ++line;
    const size_t newline = text.find('\n');
    const std::string_view row = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    split_words(row, &words);
    if (words.empty()) continue;
    if (words[0] == "f") {
      // The reader skips a face of fewer corners without a word; it is an error in a level.
      if (words.size() < 4) {
        *error = at_line(source, line) + "a face needs at least 3 corners, got " +
                 std::to_string(words.size() - 1);
        return false;
      }
      face_lines->push_back(static_cast<uint32_t>(line));
    }
    if (words[0] != "v") continue;
    if (words.size() < 4) {
      *error = at_line(source, line) + "a vertex needs three coordinates";
      return false;
    }
    float c[3];
    for (size_t i = 0; i < 3; ++i) {
      if (!parse_coordinate(words[1 + i], &c[i])) {
        *error = at_line(source, line) + "vertex coordinate '" + std::string(words[1 + i]) +
                 "' is not a finite number";
        return false;
      }
    }
    out->push_back(sim::Vec3{c[0], c[1], c[2]});
    lines->push_back(static_cast<uint32_t>(line));
  }
  return true;
}

[[maybe_unused]] bool in_level_range(sim::Vec3 p) {
  constexpr float m = sim::kMaxLevelCoordinate;
  return p.x >= -m && p.x <= m && p.y >= -m && p.y <= m && p.z >= -m && p.z <= m;
}

}  // namespace

LevelView view_level(const std::vector<sim::SceneMesh>& meshes,
                     const std::vector<sim::SceneHeightfield>& heightfields) {
  LevelView view;
  for (const sim::SceneMesh& m : meshes)
    view.meshes.push_back(sim::MeshDef{m.vertices, m.indices});
  for (const sim::SceneHeightfield& h : heightfields) {
    view.heightfields.push_back(
        sim::HeightfieldDef{h.heights, h.columns, h.rows, h.spacing_x, h.spacing_z});
  }
  return view;
}

uint64_t level_content_bytes(const std::vector<sim::SceneMesh>& meshes,
                             const std::vector<sim::SceneHeightfield>& heightfields) {
  uint64_t bytes = 0;
  for (const sim::SceneMesh& m : meshes)
    bytes += m.vertices.size() * sizeof(sim::Vec3) + m.indices.size() * sizeof(uint32_t);
  for (const sim::SceneHeightfield& h : heightfields)
    bytes += h.heights.size() * sizeof(float);
  return bytes;
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

bool parse_obj_mesh(std::string_view text, const std::string& source,
                    const sim::SceneLevelFile& line, uint32_t max_triangles, sim::SceneMesh* out,
                    std::string* error) {
#if LOCKSTEP_HAVE_TINYOBJLOADER
  std::vector<sim::Vec3> vertices;
  std::vector<uint32_t> vertex_lines, face_lines;
  if (!read_obj_vertices(text, source, &vertices, &vertex_lines, &face_lines, error)) return false;

  tinyobj::ObjReaderConfig config;
  config.triangulate = false;  // fans are cut below, in integers
  config.vertex_color = false;
  config.mtl_search_path = "";
  tinyobj::ObjReader reader;
  // No material file is read: the level needs only the shape, and a scene never reaches beyond
  // its own files.
  if (!reader.ParseFromString(std::string(text), std::string(), config)) {
    std::string why = reader.Error();
    while (!why.empty() && (why.back() == '\n' || why.back() == '\r'))
      why.pop_back();
    *error = source + ": malformed OBJ: " + (why.empty() ? "unreadable" : why);
    return false;
  }
  const tinyobj::attrib_t& attrib = reader.GetAttrib();
  if (attrib.vertices.size() != 3 * vertices.size()) {
    *error = source + ": malformed OBJ: " + std::to_string(vertices.size()) +
             " 'v' lines but the reader found " + std::to_string(attrib.vertices.size() / 3) +
             " vertices (a line continued with '\\'?)";
    return false;
  }

  // Faces in file order: the shapes (o/g) follow each other, their faces in order.
  std::vector<uint32_t> indices;
  size_t face = 0;
  for (const tinyobj::shape_t& shape : reader.GetShapes()) {
    size_t corner = 0;
    for (const unsigned char count : shape.mesh.num_face_vertices) {
      const std::string where =
          face < face_lines.size() ? at_line(source, face_lines[face]) : source + ": ";
      if (count < 3) {
        *error = where + "a face needs at least 3 corners, got " + std::to_string(count);
        return false;
      }
      if (corner + count > shape.mesh.indices.size()) {
        *error = where + "malformed OBJ: a face's corners are missing";
        return false;
      }
      for (size_t k = 0; k < count; ++k) {
        const int v = shape.mesh.indices[corner + k].vertex_index;
        if (v < 0 || static_cast<size_t>(v) >= vertices.size()) {
          *error = where + "vertex index out of range (the file has " +
                   std::to_string(vertices.size()) + " vertices)";
          return false;
        }
      }
      // A fan from the first corner: (0, k, k + 1).
      const uint32_t first = static_cast<uint32_t>(shape.mesh.indices[corner].vertex_index);
      for (size_t k = 1; k + 1 < count; ++k) {
        if (indices.size() / 3 >= max_triangles) {
          *error = where + "more than the level's capacity of " + std::to_string(max_triangles) +
                   " triangles";
          return false;
        }
        indices.push_back(first);
        indices.push_back(static_cast<uint32_t>(shape.mesh.indices[corner + k].vertex_index));
        indices.push_back(static_cast<uint32_t>(shape.mesh.indices[corner + k + 1].vertex_index));
      }
      corner += count;
      ++face;
    }
  }
  if (indices.empty()) {
    *error = source + ": the OBJ has no faces";
    return false;
  }
  // Scale, rotate, translate: one float operation at a time (no contraction, see sim/).
  for (size_t i = 0; i < vertices.size(); ++i) {
    const sim::Vec3 v = vertices[i];
    const sim::Vec3 scaled{v.x * line.scale, v.y * line.scale, v.z * line.scale};
    const sim::Vec3 placed = sim::rotate(line.orientation, scaled) + line.position;
    if (!in_level_range(placed)) {
      *error = at_line(source, vertex_lines[i]) +
               "vertex out of range once scaled and placed (|coordinate| <= 1e5 m)";
      return false;
    }
    vertices[i] = placed;
  }
  out->vertices = std::move(vertices);
  out->indices = std::move(indices);
  return true;
#else
  (void)text, (void)line, (void)max_triangles, (void)out;
  *error = source + ": this build has no OBJ reader (tinyobjloader was not found)";
  return false;
#endif
}

bool load_obj_mesh(const std::string& path, const sim::SceneLevelFile& line, uint32_t max_triangles,
                   sim::SceneMesh* out, std::string* error) {
  std::string text;
  if (!read_level_file(path, &text, error)) return false;
  return parse_obj_mesh(text, path, line, max_triangles, out, error);
}

namespace {

// Checks an image's size against the grid's limits and the triangle capacity.
bool check_grid(uint64_t columns, uint64_t rows, const std::string& source, uint32_t max_triangles,
                std::string* error) {
  if (columns < 2 || rows < 2) {
    *error = source + ": a heightfield needs at least 2 x 2 samples, the image is " +
             std::to_string(columns) + " x " + std::to_string(rows);
    return false;
  }
  const uint64_t triangles = 2 * (columns - 1) * (rows - 1);
  if (triangles > max_triangles) {
    *error = source + ": " + std::to_string(columns) + " x " + std::to_string(rows) +
             " samples make " + std::to_string(triangles) +
             " triangles, more than the level's capacity of " + std::to_string(max_triangles);
    return false;
  }
  if (columns * rows * sizeof(float) > kMaxLevelMemoryBytes) {
    *error = source + ": " + std::to_string(columns) + " x " + std::to_string(rows) +
             " samples are over the level memory budget of " +
             std::to_string(kMaxLevelMemoryBytes) + " bytes";
    return false;
  }
  return true;
}

// Samples (row by row) to heights: s · (height / maxval), two float operations in that order.
void fill_heights(const std::vector<uint16_t>& samples, uint32_t columns, uint32_t rows,
                  uint32_t maxval, const sim::SceneLevelFile& line, sim::SceneHeightfield* out) {
  const float per_level = line.height / static_cast<float>(maxval);
  out->heights.resize(samples.size());
  for (size_t i = 0; i < samples.size(); ++i)
    out->heights[i] = static_cast<float>(samples[i]) * per_level;
  out->columns = columns;
  out->rows = rows;
  out->spacing_x = line.spacing_x;
  out->spacing_z = line.spacing_z;
}

// A binary PGM's header: "P5", width, height, maxval, separated by whitespace and '#' comments,
// then one whitespace byte. *pos ends at the first sample byte.
bool read_pgm_number(std::string_view bytes, size_t* pos, uint64_t* out) {
  for (;;) {
    while (*pos < bytes.size() && (bytes[*pos] == ' ' || bytes[*pos] == '\t' ||
                                   bytes[*pos] == '\n' || bytes[*pos] == '\r')) {
      ++*pos;
    }
    if (*pos < bytes.size() && bytes[*pos] == '#') {
      while (*pos < bytes.size() && bytes[*pos] != '\n')
        ++*pos;
      continue;
    }
    break;
  }
  uint64_t value = 0;
  size_t digits = 0;
  while (*pos < bytes.size() && bytes[*pos] >= '0' && bytes[*pos] <= '9' && digits < 10) {
    value = value * 10 + static_cast<uint64_t>(bytes[*pos] - '0');
    ++*pos;
    ++digits;
  }
  if (digits == 0 || digits == 10) return false;
  *out = value;
  return true;
}

bool parse_pgm(std::string_view bytes, const std::string& source, const sim::SceneLevelFile& line,
               uint32_t max_triangles, sim::SceneHeightfield* out, std::string* error) {
  size_t pos = 2;
  uint64_t width = 0, height = 0, maxval = 0;
  if (!read_pgm_number(bytes, &pos, &width) || !read_pgm_number(bytes, &pos, &height) ||
      !read_pgm_number(bytes, &pos, &maxval) || pos >= bytes.size() ||
      !(bytes[pos] == ' ' || bytes[pos] == '\t' || bytes[pos] == '\n' || bytes[pos] == '\r')) {
    *error = source + ": malformed PGM header (expected P5, width, height, maxval)";
    return false;
  }
  ++pos;
  if (maxval < 256 || maxval > 65535) {
    *error = source + ": PGM maxval " + std::to_string(maxval) +
             " is not 16-bit (256..65535; 8-bit images are too coarse for terrain)";
    return false;
  }
  if (!check_grid(width, height, source, max_triangles, error)) return false;
  const uint64_t data_bytes = width * height * 2;
  if (bytes.size() - pos != data_bytes) {
    *error = source + ": PGM data is " + std::to_string(bytes.size() - pos) + " bytes, " +
             std::to_string(width) + " x " + std::to_string(height) + " 16-bit samples need " +
             std::to_string(data_bytes);
    return false;
  }
  // width · height · 2 is the data left in the file (checked above), so it fits a size_t.
  std::vector<uint16_t> samples(static_cast<size_t>(width * height));
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto hi = static_cast<unsigned char>(bytes[pos + 2 * i]);
    const auto lo = static_cast<unsigned char>(bytes[pos + 2 * i + 1]);
    samples[i] = static_cast<uint16_t>((hi << 8) | lo);
    if (samples[i] > maxval) {
      *error = source + ": PGM sample " + std::to_string(i) + " is " + std::to_string(samples[i]) +
               ", above maxval " + std::to_string(maxval);
      return false;
    }
  }
  fill_heights(samples, static_cast<uint32_t>(width), static_cast<uint32_t>(height),
               static_cast<uint32_t>(maxval), line, out);
  return true;
}

#if LOCKSTEP_HAVE_PNG
// libpng reports errors by longjmp; the stages below own no C++ objects across setjmp.
struct PngInput {
  std::string_view bytes;
  size_t pos = 0;
  char message[160] = {};
};

void png_read_bytes(png_structp png, png_bytep data, png_size_t length) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (in->bytes.size() - in->pos < length) png_error(png, "the file is truncated");
  std::memcpy(data, in->bytes.data() + in->pos, length);
  in->pos += length;
}

void png_on_error(png_structp png, png_const_charp message) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(in->message, sizeof(in->message), "%s", message);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

bool png_read_header(png_structp png, png_infop info, png_uint_32* width, png_uint_32* height,
                     int* depth, int* color, int* interlace) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  png_get_IHDR(png, info, width, height, depth, color, interlace, nullptr, nullptr);
  return true;
}

bool png_read_rows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

bool parse_png(std::string_view bytes, const std::string& source, const sim::SceneLevelFile& line,
               uint32_t max_triangles, sim::SceneHeightfield* out, std::string* error) {
  PngInput input;
  input.bytes = bytes;
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, png_on_error, png_on_warning);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    *error = source + ": out of memory for the PNG reader";
    return false;
  }
  png_set_read_fn(png, &input, png_read_bytes);
  png_set_user_limits(png, 1u << 16, 1u << 16);
  png_uint_32 width = 0, height = 0;
  int depth = 0, color = 0, interlace = 0;
  bool ok = png_read_header(png, info, &width, &height, &depth, &color, &interlace);
  std::vector<uint16_t> samples;
  if (!ok) {
    *error = source + ": malformed PNG: " + input.message;
  } else if (color != PNG_COLOR_TYPE_GRAY || depth != 16) {
    *error = source + ": the PNG is not 16-bit gray (bit depth " + std::to_string(depth) +
             ", color type " + std::to_string(color) + ")";
    ok = false;
  } else if (interlace != PNG_INTERLACE_NONE) {
    *error = source + ": interlaced PNGs are not read (save it without interlacing)";
    ok = false;
  } else if (!check_grid(width, height, source, max_triangles, error)) {
    ok = false;
  } else {
    std::vector<png_byte> raw(size_t{width} * height * 2);
    std::vector<png_bytep> rows(height);
    for (png_uint_32 r = 0; r < height; ++r)
      rows[r] = raw.data() + size_t{r} * width * 2;
    if (!png_read_rows(png, info, rows.data())) {
      *error = source + ": malformed PNG: " + input.message;
      ok = false;
    } else {
      samples.resize(size_t{width} * height);
      for (size_t i = 0; i < samples.size(); ++i)
        samples[i] = static_cast<uint16_t>((raw[2 * i] << 8) | raw[2 * i + 1]);
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  if (!ok) return false;
  fill_heights(samples, width, height, 65535, line, out);
  return true;
}
#endif

}  // namespace

bool parse_heightfield_image(std::string_view bytes, const std::string& source,
                             const sim::SceneLevelFile& line, uint32_t max_triangles,
                             sim::SceneHeightfield* out, std::string* error) {
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] == '5') {
    return parse_pgm(bytes, source, line, max_triangles, out, error);
  }
  static constexpr unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPngSignature, 8) == 0) {
#if LOCKSTEP_HAVE_PNG
    return parse_png(bytes, source, line, max_triangles, out, error);
#else
    *error = source + ": this build has no PNG reader (libpng was not found)";
    return false;
#endif
  }
  *error = source + ": not a binary PGM (P5) or a PNG";
  return false;
}

bool load_heightfield_image(const std::string& path, const sim::SceneLevelFile& line,
                            uint32_t max_triangles, sim::SceneHeightfield* out,
                            std::string* error) {
  std::string bytes;
  if (!read_level_file(path, &bytes, error)) return false;
  return parse_heightfield_image(bytes, path, line, max_triangles, out, error);
}

bool load_scene_level(const std::string& base_dir, const std::string& source, sim::Scene* scene,
                      std::string* error) {
  if (scene->mesh_files.empty() && scene->heightfield_files.empty()) return true;
  std::vector<sim::SceneMesh> meshes(scene->mesh_files.size());
  std::vector<sim::SceneHeightfield> heightfields(scene->heightfield_files.size());
  const uint32_t capacity = sim::LevelDef{}.max_triangles;
  uint64_t triangles = 0;
  uint64_t memory_bytes = 0;
  const auto prefix = [&source](const sim::SceneLevelFile& line, const char* what) {
    return source + ": line " + std::to_string(line.line) + ": " + what + ": ";
  };
  for (size_t i = 0; i < meshes.size(); ++i) {
    const sim::SceneLevelFile& line = scene->mesh_files[i];
    std::string problem;
    const uint32_t left = static_cast<uint32_t>(capacity - triangles);
    if (!load_obj_mesh(base_dir + line.file, line, left, &meshes[i], &problem)) {
      *error = prefix(line, "mesh") + problem;
      return false;
    }
    triangles += meshes[i].indices.size() / 3;
    memory_bytes +=
        meshes[i].vertices.size() * sizeof(sim::Vec3) + meshes[i].indices.size() * sizeof(uint32_t);
    if (memory_bytes > kMaxLevelMemoryBytes) {
      *error = prefix(line, "mesh") + base_dir + line.file + ": the level is over its memory " +
               "budget of " + std::to_string(kMaxLevelMemoryBytes) + " bytes";
      return false;
    }
  }
  for (size_t i = 0; i < heightfields.size(); ++i) {
    const sim::SceneLevelFile& line = scene->heightfield_files[i];
    std::string problem;
    const uint32_t left = static_cast<uint32_t>(capacity - triangles);
    if (!load_heightfield_image(base_dir + line.file, line, left, &heightfields[i], &problem)) {
      *error = prefix(line, "heightfield") + problem;
      return false;
    }
    const sim::SceneHeightfield& h = heightfields[i];
    triangles += 2 * uint64_t{h.columns - 1} * (h.rows - 1);
    memory_bytes += h.heights.size() * sizeof(float);
    if (memory_bytes > kMaxLevelMemoryBytes) {
      *error = prefix(line, "heightfield") + base_dir + line.file +
               ": the level is over its memory budget of " + std::to_string(kMaxLevelMemoryBytes) +
               " bytes";
      return false;
    }
  }
  scene->meshes = std::move(meshes);
  scene->heightfields = std::move(heightfields);
  return true;
}

}  // namespace lockstep::schema
