#include "capped_file.h"

#include <fstream>

namespace lockstep::schema::detail {

bool read_capped_file(const std::string& path, size_t max_bytes, const char* cap_name,
                      std::string* bytes, std::string* error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    *error = path + ": cannot open the file";
    return false;
  }
  std::string content;
  char buffer[1 << 14];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    content.append(buffer, static_cast<size_t>(file.gcount()));
    if (content.size() > max_bytes) {
      *error = path + ": larger than " + cap_name + " of " + std::to_string(max_bytes) + " bytes";
      return false;
    }
  }
  if (file.bad()) {
    *error = path + ": read error (a directory?)";
    return false;
  }
  *bytes = std::move(content);
  return true;
}

}  // namespace lockstep::schema::detail
