// Scene files: read, parse (sim::parse_scene_text, the one parser), then build the world once,
// so a file the sim would refuse is reported at load time with its line, not when a room opens.
#include "lockstep/schema/scene_file.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>

#include "capped_file.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/messages.h"
#include "lockstep/sim/world.h"

namespace lockstep::schema {
namespace {

// 1-based line of the `index`-th (0-based) body directive in `text`, 0 when there is none. Only
// locates the line for an error message; the parser is the one in sim/.
size_t body_line(std::string_view text, size_t index) {
  size_t line = 0;
  size_t bodies = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line;
    std::string_view content = text.substr(start, end - start);
    content = content.substr(0, content.find('#'));
    const size_t first = content.find_first_not_of(" \t\r");
    if (first != std::string_view::npos) {
      content = content.substr(first);
      if (content.substr(0, 4) == "body" &&
          (content.size() == 4 || content[4] == ' ' || content[4] == '\t' || content[4] == '\r')) {
        if (bodies++ == index) return line;
      }
    }
    start = end + 1;
  }
  return 0;
}

// The file's name without its folders and its last extension.
std::string file_stem(const std::string& path) {
  const size_t slash = path.find_last_of("/\\");
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

bool read_file(const std::string& path, std::string* text, std::string* error) {
  return detail::read_capped_file(path, kMaxSceneFileBytes, "the scene file cap", text, error);
}

}  // namespace

bool valid_scene_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

namespace {

// Parses, reads the level files relative to `base_dir`, and test-builds.
bool load_scene_text_in(std::string_view text, const std::string& source,
                        const std::string& base_dir, sim::Scene* out, std::string* error) {
  sim::Scene scene;
  std::string problem;
  if (!sim::parse_scene_text(text, &scene, &problem)) {
    *error = source + ": " + problem;
    return false;
  }
  if (!load_scene_level(base_dir, source, &scene, error)) return false;
  sim::Error world_error = sim::Error::none;
  size_t failed_body = SIZE_MAX;
  if (sim::build_world(scene, &world_error, &failed_body) == nullptr) {
    const size_t line = failed_body == SIZE_MAX ? 0 : body_line(text, failed_body);
    *error = source + ": " +
             (line != 0 ? "line " + std::to_string(line) + ": body refused: "
                        : std::string("world refused: ")) +
             sim::error_message(world_error);
    return false;
  }
  *out = std::move(scene);
  return true;
}

}  // namespace

bool load_scene_text(std::string_view text, const std::string& source, sim::Scene* out,
                     std::string* error) {
  return load_scene_text_in(text, source, std::string(), out, error);
}

bool load_scene_file(const std::string& path, sim::Scene* out, std::string* error) {
  const std::string stem = file_stem(path);
  if (!valid_scene_name(stem)) {
    *error = path + ": the file name must be 1.." + std::to_string(kMaxNameBytes) +
             " letters, digits, '_', '-' or '.' (it names the scene)";
    return false;
  }
  std::string text;
  if (!read_file(path, &text, error)) return false;
  sim::Scene scene;
  if (!load_scene_text_in(text, path, folder_of(path), &scene, error)) return false;
  scene.name = stem;
  *out = std::move(scene);
  return true;
}

bool load_scene(const std::string& name_or_path, sim::Scene* out, std::string* error) {
  if (sim::make_builtin_scene(name_or_path, out)) return true;
  if (!std::ifstream(name_or_path, std::ios::binary)) {
    std::string names;
    for (std::string_view name : sim::builtin_scene_names())
      names += (names.empty() ? "" : ", ") + std::string(name);
    *error = "unknown scene '" + name_or_path + "': neither a built-in scene (" + names +
             ") nor a readable file";
    return false;
  }
  return load_scene_file(name_or_path, out, error);
}

}  // namespace lockstep::schema
