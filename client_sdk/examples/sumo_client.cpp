// sumo_client: play the `sumo` example game in a terminal (tmux-friendly, plain ANSI escapes).
//
//   sumo_client [--host 127.0.0.1] [--port 7777] [--room default] [--name NAME]
//               [--scene-file sumo.scene] [--scene NAME] [--speed M_PER_S]
//
// It joins a room as a lockstep player, verifies every tick like any SDK client, and draws a
// top-down view of the verified world: the platform (found by casting rays down through the
// world, so any shape of platform draws), every player's sphere labelled by its player id (ours
// highlighted), the scores, the tick and the desync count. The arrow keys steer: our sphere gets
// a target velocity towards the last arrow pressed, sent once per tick while it stands on the
// platform; space lets go (no input: the sphere rolls freely), q quits.
//
// Screen axes: x to the right, z downwards (looking down the y axis from above).
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lockstep/client_sdk/client.h"
#include "lockstep/sim/query.h"

namespace {

namespace sdk = lockstep::client_sdk;
namespace sim = lockstep::sim;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};

void on_signal(int) {
  g_stop = true;
}

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 7777;
  std::string room = "default";
  std::string name = "player";
  std::string scene_file;
  std::string scene_name;
  float speed_mps = 4.0f;
};

const char* const kUsage =
    "usage: sumo_client [--host H] [--port P] [--room R] [--name N] [--scene-file FILE]\n"
    "                   [--scene NAME] [--speed M_PER_S]\n"
    "Plays sumo in this terminal: arrow keys steer, space lets go, q quits.\n";

bool parse_uint16(const char* text, uint16_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > 65535) return false;
  *out = static_cast<uint16_t>(v);
  return true;
}

bool parse_speed(const char* text, float* out) {
  char* end = nullptr;
  const float v = std::strtof(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 1000) return false;
  *out = v;
  return true;
}

// 0: parsed; 1: --help printed; 2: bad arguments (message printed).
int parse_options(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 1;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "sumo_client: '%s' needs a value\n%s", argv[i], kUsage);
      return 2;
    }
    const char* value = argv[++i];
    bool ok = true;
    if (arg == "--host") {
      o->host = value;
    } else if (arg == "--port") {
      ok = parse_uint16(value, &o->port) && o->port != 0;
    } else if (arg == "--room") {
      o->room = value;
    } else if (arg == "--name") {
      o->name = value;
    } else if (arg == "--scene-file") {
      o->scene_file = value;
    } else if (arg == "--scene") {
      o->scene_name = value;
    } else if (arg == "--speed") {
      ok = parse_speed(value, &o->speed_mps);
    } else {
      std::fprintf(stderr, "sumo_client: unknown option '%s'\n%s", argv[i], kUsage);
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "sumo_client: bad value '%s' for %s\n", value, argv[i - 1]);
      return 2;
    }
  }
  return 0;
}

// ---- terminal ---------------------------------------------------------------------------------

/// Raw keyboard input and the alternate screen for the life of the object; the terminal is put
/// back as it was however the program leaves the main loop.
class Terminal final {
 public:
  bool enter(std::string* error) {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) {
      *error = std::string("cannot read the terminal's settings: ") + std::strerror(errno);
      return false;
    }
    termios raw = saved_;
    raw.c_iflag &= ~static_cast<tcflag_t>(ICRNL | IXON | INLCR | IGNCR);
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | IEXTEN);  // ISIG kept: Ctrl-C quits
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0) {
      *error = std::string("cannot put the terminal in raw mode: ") + std::strerror(errno);
      return false;
    }
    active_ = true;
    write_all("\x1b[?1049h\x1b[?25l\x1b[2J");  // alternate screen, hide the cursor, clear
    return true;
  }
  void leave() {
    if (!active_) return;
    write_all("\x1b[0m\x1b[?25h\x1b[?1049l");
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
    active_ = false;
  }
  ~Terminal() { leave(); }

  static void write_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(STDOUT_FILENO, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the terminal went away: nothing left to draw on
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }
  /// Columns and rows, or 80×24 when the terminal does not say.
  static std::pair<int, int> size() {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0)
      return {ws.ws_col, ws.ws_row};
    return {80, 24};
  }

 private:
  termios saved_{};
  bool active_ = false;
};

enum class Key { none, up, down, left, right, space, quit };

/// Turns the bytes typed into keys: arrows come as ESC [ A..D, or ESC O A..D in the terminal's
/// application cursor mode (tmux sends either); anything else is ignored.
class KeyReader final {
 public:
  /// Reads what is waiting (never blocks) and returns the keys it completes.
  std::vector<Key> read() {
    std::vector<Key> keys;
    char chunk[64];
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n <= 0) break;
      pending_.append(chunk, static_cast<size_t>(n));
      if (pending_.size() > 256) pending_.erase(0, pending_.size() - 16);  // a paste storm
    }
    size_t i = 0;
    while (i < pending_.size()) {
      const char c = pending_[i];
      if (c == '\x1b') {
        if (i + 2 >= pending_.size()) {
          // A lone ESC (or the start of a sequence not complete yet): keep it one round.
          if (stale_escape_) {
            i = pending_.size();
            stale_escape_ = false;
          } else {
            stale_escape_ = true;
          }
          break;
        }
        const char kind = pending_[i + 1];
        const char code = pending_[i + 2];
        if (kind == '[' || kind == 'O') {
          if (code == 'A') keys.push_back(Key::up);
          if (code == 'B') keys.push_back(Key::down);
          if (code == 'C') keys.push_back(Key::right);
          if (code == 'D') keys.push_back(Key::left);
          i += 3;
        } else {
          i += 1;
        }
        continue;
      }
      if (c == 'q' || c == 'Q' || c == '\x03') keys.push_back(Key::quit);
      if (c == ' ') keys.push_back(Key::space);
      ++i;
    }
    pending_.erase(0, i);
    if (pending_.empty()) stale_escape_ = false;
    return keys;
  }

 private:
  std::string pending_;
  bool stale_escape_ = false;
};

// ---- reading the arena from the world ----------------------------------------------------------

bool is_ground(const sim::BodyView& v) {
  return v.type == sim::BodyType::static_body && !v.shape.sensor &&
         v.shape.type != sim::ShapeType::plane;
}

/// Half the extent of a body's shape along the world axes (a box's rotated bounds).
sim::Vec3 half_extent(const sim::BodyView& v) {
  const sim::ShapeDef& s = v.shape;
  if (s.type == sim::ShapeType::sphere) return {s.radius, s.radius, s.radius};
  if (s.type == sim::ShapeType::capsule) {
    const sim::Vec3 axis = sim::rotate(v.orientation, sim::Vec3{0, s.half_height, 0});
    return {std::fabs(axis.x) + s.radius, std::fabs(axis.y) + s.radius,
            std::fabs(axis.z) + s.radius};
  }
  if (s.type == sim::ShapeType::box) {
    const sim::Vec3 ex = sim::rotate(v.orientation, sim::Vec3{s.half_extents.x, 0, 0});
    const sim::Vec3 ey = sim::rotate(v.orientation, sim::Vec3{0, s.half_extents.y, 0});
    const sim::Vec3 ez = sim::rotate(v.orientation, sim::Vec3{0, 0, s.half_extents.z});
    return {std::fabs(ex.x) + std::fabs(ey.x) + std::fabs(ez.x),
            std::fabs(ex.y) + std::fabs(ey.y) + std::fabs(ez.y),
            std::fabs(ex.z) + std::fabs(ey.z) + std::fabs(ez.z)};
  }
  return {0, 0, 0};
}

/// The first solid static body straight below `from` within `depth` metres (sensors, players
/// and `exclude` skipped); its hit, or nothing.
std::optional<sim::RayHit> ground_below(const sim::World& world, sim::Vec3 from, float depth,
                                        sim::BodyId exclude = {}) {
  std::array<sim::RayHit, 8> hits{};
  sim::QueryFilter filter;
  filter.category_bits = 0xffffffffu;  // be seen by every mask
  filter.exclude = exclude;
  const sim::QueryResult r = sim::ray_cast_all(world, from, sim::Vec3{0, -depth, 0}, filter, hits);
  if (!r.ok()) return std::nullopt;
  for (uint32_t i = 0; i < r.count; ++i) {
    sim::BodyView view;
    if (world.get_body(hits[i].body, &view) == sim::Error::none && is_ground(view)) return hits[i];
  }
  return std::nullopt;
}

/// The platform seen from above at one terminal size: which cells have ground under them.
struct ArenaMap {
  int cols = 0, rows = 0;
  uint32_t static_bodies = 0;
  float centre_x = 0, centre_z = 0;
  float metres_per_row = 1;  // a cell is twice as tall as it is wide: metres_per_col = half
  float top_y = 0;           // the highest point of the ground (m)
  std::vector<uint8_t> ground;

  float col_x(int c) const { return centre_x + (c + 0.5f - cols * 0.5f) * metres_per_row * 0.5f; }
  float row_z(int r) const { return centre_z + (r + 0.5f - rows * 0.5f) * metres_per_row; }
  int to_col(float x) const {
    return static_cast<int>(std::floor((x - centre_x) / (metres_per_row * 0.5f) + cols * 0.5f));
  }
  int to_row(float z) const {
    return static_cast<int>(std::floor((z - centre_z) / metres_per_row + rows * 0.5f));
  }
  bool ground_at(int c, int r) const {
    return c >= 0 && r >= 0 && c < cols && r < rows && ground[static_cast<size_t>(r * cols + c)];
  }
};

/// Lays the map over the static bodies' bounds and casts one ray down per cell.
void build_arena_map(const sim::World& world, int cols, int rows, uint32_t static_bodies,
                     ArenaMap* map) {
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  float lo_x = 1e30f, hi_x = -1e30f, lo_z = 1e30f, hi_z = -1e30f, lo_y = 1e30f, hi_y = -1e30f;
  for (sim::BodyId id : ids) {
    sim::BodyView v;
    if (world.get_body(id, &v) != sim::Error::none || !is_ground(v)) continue;
    const sim::Vec3 h = half_extent(v);
    lo_x = std::min(lo_x, v.position.x - h.x);
    hi_x = std::max(hi_x, v.position.x + h.x);
    lo_y = std::min(lo_y, v.position.y - h.y);
    hi_y = std::max(hi_y, v.position.y + h.y);
    lo_z = std::min(lo_z, v.position.z - h.z);
    hi_z = std::max(hi_z, v.position.z + h.z);
  }
  if (lo_x > hi_x) {  // no platform at all: a 20 m square around the origin
    lo_x = lo_z = -10;
    hi_x = hi_z = 10;
    lo_y = hi_y = 0;
  }
  map->cols = cols;
  map->rows = rows;
  map->static_bodies = static_bodies;
  map->centre_x = 0.5f * (lo_x + hi_x);
  map->centre_z = 0.5f * (lo_z + hi_z);
  map->top_y = hi_y;
  // 10 % margin around the platform so its rim is drawn inside the view.
  const float span_x = 1.2f * (hi_x - lo_x), span_z = 1.2f * (hi_z - lo_z);
  map->metres_per_row = std::max(
      {span_z / static_cast<float>(rows), 2.0f * span_x / static_cast<float>(cols), 0.01f});
  map->ground.assign(static_cast<size_t>(cols * rows), 0);
  const float depth = (hi_y - lo_y) + 2.0f;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const sim::Vec3 from{map->col_x(c), hi_y + 1.0f, map->row_z(r)};
      map->ground[static_cast<size_t>(r * cols + c)] =
          ground_below(world, from, depth).has_value() ? 1 : 0;
    }
  }
}

uint32_t count_static_bodies(const sim::World& world) {
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  uint32_t n = 0;
  for (sim::BodyId id : ids) {
    sim::BodyView v;
    if (world.get_body(id, &v) == sim::Error::none && is_ground(v)) ++n;
  }
  return n;
}

// ---- drawing ----------------------------------------------------------------------------------

struct Cell {
  char ch = ' ';
  uint8_t style = 0;  // 0 plain, 1 rim, 2 other player, 3 our player
};

const char* style_code(uint8_t style) {
  switch (style) {
    case 1:
      return "\x1b[0;33m";  // rim: yellow
    case 2:
      return "\x1b[0;1;36m";  // other players: bold cyan
    case 3:
      return "\x1b[0;1;7;32m";  // us: bold, reversed, green
    default:
      return "\x1b[0m";
  }
}

struct Status {
  std::string room;
  uint32_t player_id = 0;
  uint64_t tick = 0;
  uint64_t desyncs = 0;
  uint64_t ticks_verified = 0;
  double rtt_ms = 0;
  const char* heading = "none";
  std::string message;  // the last error or notice, one line
};

std::string fit(std::string line, int cols) {
  if (static_cast<int>(line.size()) > cols) line.resize(static_cast<size_t>(std::max(cols, 0)));
  return line;
}

/// One whole frame: header lines, the arena, the footer; written with a single write().
std::string render(const sim::World& world, const ArenaMap& map, int cols, int total_rows,
                   const Status& st) {
  std::vector<Cell> cells(static_cast<size_t>(map.cols * map.rows));
  auto at = [&](int c, int r) -> Cell& { return cells[static_cast<size_t>(r * map.cols + c)]; };
  for (int r = 0; r < map.rows; ++r) {
    for (int c = 0; c < map.cols; ++c) {
      if (!map.ground_at(c, r)) continue;
      const bool rim = !map.ground_at(c - 1, r) || !map.ground_at(c + 1, r) ||
                       !map.ground_at(c, r - 1) || !map.ground_at(c, r + 1);
      at(c, r) = rim ? Cell{'#', 1} : Cell{'.', 0};
    }
  }

  // Players: every dynamic body with an owner, a disc of its radius with the id in the middle.
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  std::vector<uint32_t> players;
  for (sim::BodyId id : ids) {
    sim::BodyView v;
    if (world.get_body(id, &v) != sim::Error::none || v.type != sim::BodyType::dynamic) continue;
    const bool ours = v.owner_player != 0 && v.owner_player == st.player_id;
    const uint8_t style = v.owner_player == 0 ? 0 : (ours ? 3 : 2);
    const char fill = v.owner_player == 0 ? '*' : (ours ? '@' : 'o');
    const float radius = v.shape.type == sim::ShapeType::box ? half_extent(v).x : v.shape.radius;
    const int cc = map.to_col(v.position.x), cr = map.to_row(v.position.z);
    const int reach_c = static_cast<int>(radius / (map.metres_per_row * 0.5f)) + 1;
    const int reach_r = static_cast<int>(radius / map.metres_per_row) + 1;
    for (int r = cr - reach_r; r <= cr + reach_r; ++r) {
      for (int c = cc - reach_c; c <= cc + reach_c; ++c) {
        if (c < 0 || r < 0 || c >= map.cols || r >= map.rows) continue;
        const float dx = map.col_x(c) - v.position.x, dz = map.row_z(r) - v.position.z;
        if (dx * dx + dz * dz <= radius * radius) at(c, r) = Cell{fill, style};
      }
    }
    if (v.owner_player != 0) {
      if (std::find(players.begin(), players.end(), v.owner_player) == players.end())
        players.push_back(v.owner_player);
      // The id in the middle; a ball beyond the view (falling far out) keeps its id on the edge.
      const std::string label = std::to_string(v.owner_player);
      const int width = static_cast<int>(label.size());
      const int row = std::clamp(cr, 0, map.rows - 1);
      const int start = std::clamp(cc - (width - 1) / 2, 0, std::max(map.cols - width, 0));
      for (int i = 0; i < width && start + i < map.cols; ++i)
        at(start + i, row) = Cell{label[static_cast<size_t>(i)], style};
    }
  }
  // Players who left keep their score in the world: list them too.
  for (uint32_t p = 1; p <= sim::kMaxPlayers; ++p) {
    if (world.score(p) != 0 && std::find(players.begin(), players.end(), p) == players.end())
      players.push_back(p);
  }
  std::sort(players.begin(), players.end());

  std::string header = "sumo  room " + st.room + "  you: player " + std::to_string(st.player_id) +
                       " (@)  tick " + std::to_string(st.tick) + "  desyncs " +
                       std::to_string(st.desyncs);
  char rtt[32];
  std::snprintf(rtt, sizeof rtt, "  rtt %.1f ms", st.rtt_ms);
  header += rtt;
  std::string scores = "scores:";
  for (uint32_t p : players) {
    scores += "  P" + std::to_string(p) + " " + std::to_string(world.score(p));
  }
  if (players.empty()) scores += "  (no players yet)";

  std::string out = "\x1b[H";
  auto line = [&](const std::string& text) {
    out += fit(text, cols);
    out += "\x1b[K\r\n";
  };
  line(header);
  line(scores);
  for (int r = 0; r < map.rows; ++r) {
    uint8_t style = 0;
    out += "\x1b[0m";
    for (int c = 0; c < map.cols && c < cols; ++c) {
      const Cell& cell = at(c, r);
      if (cell.style != style) {
        out += style_code(cell.style);
        style = cell.style;
      }
      out += cell.ch;
    }
    out += "\x1b[0m\x1b[K\r\n";
  }
  line(std::string("arrows: steer  space: let go  q: quit   heading: ") + st.heading);
  // The last line has no newline, so the screen never scrolls.
  out += fit(st.message, cols);
  out += "\x1b[K";
  (void)total_rows;
  return out;
}

// ---- steering ---------------------------------------------------------------------------------

int32_t to_fixed(float value, float limit) {
  const float clamped = std::clamp(value, -limit, limit);
  return static_cast<int32_t>(std::lround(clamped * (1 << sim::kInputScaleLog2)));
}

// One velocity input per ball of `player` standing on the platform, towards the heading (x, z in
// −1, 0, 1) at `speed` m/s. Our balls are the dynamic bodies we own: the rules spawn them after
// the Welcome (and again after a fall), so the world knows them, not the Welcome's list.
std::vector<sim::Input> steering_inputs(const sim::World& world, uint32_t player, int heading_x,
                                        int heading_z, float speed, uint32_t* sequence) {
  const float limit = world.def().max_input_linear_velocity;
  std::vector<sim::Input> inputs;
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  for (sim::BodyId body : ids) {
    sim::BodyView v;
    if (world.get_body(body, &v) != sim::Error::none || v.type != sim::BodyType::dynamic ||
        v.owner_player != player)
      continue;
    // Steer only while standing on the platform: a sphere that went over the edge falls.
    if (!ground_below(world, v.position, v.shape.radius + 0.25f, body)) continue;
    const float norm = (heading_x != 0 && heading_z != 0) ? 0.70710678f : 1.0f;
    sim::Input in;
    in.body = body;
    in.sequence = (*sequence)++;
    in.flags = sim::input_sets_linear_velocity;
    in.linear_velocity[0] = to_fixed(static_cast<float>(heading_x) * norm * speed, limit);
    in.linear_velocity[1] = to_fixed(v.linear_velocity.y, limit);  // gravity keeps acting
    in.linear_velocity[2] = to_fixed(static_cast<float>(heading_z) * norm * speed, limit);
    inputs.push_back(in);
  }
  return inputs;
}

// ---- keys ---------------------------------------------------------------------------------------

// Arrow keys set the heading, space clears it, q quits.
void apply_key(Key key, int* heading_x, int* heading_z, const char** heading, bool* quit) {
  switch (key) {
    case Key::up:
      *heading_x = 0, *heading_z = -1, *heading = "up";
      break;
    case Key::down:
      *heading_x = 0, *heading_z = 1, *heading = "down";
      break;
    case Key::left:
      *heading_x = -1, *heading_z = 0, *heading = "left";
      break;
    case Key::right:
      *heading_x = 1, *heading_z = 0, *heading = "right";
      break;
    case Key::space:
      *heading_x = 0, *heading_z = 0, *heading = "none";
      break;
    case Key::quit:
      *quit = true;
      break;
    case Key::none:
      break;
  }
}

// Why the connection ended, in one line: the server's fatal error if it sent one, else the
// disconnect's code and reason.
std::string disconnect_reason(const sdk::DisconnectedEvent& gone, const std::string& fatal_error) {
  if (!fatal_error.empty()) return fatal_error;
  std::string code;
  if (gone.code != sdk::ErrorCode::none)
    code = std::string(lockstep::schema::error_code_name(gone.code)) + ": ";
  return gone.reason.empty() ? code + "the server closed the connection" : code + gone.reason;
}

// One screen: the arena and the status lines, or "connecting" before the join snapshot.
void draw(sdk::Client& client, const Options& options, ArenaMap* map, Status* status) {
  const sim::World* world = client.world();
  if (world == nullptr) {
    Terminal::write_all("\x1b[H\x1b[2Jconnecting to " + options.host + ":" +
                        std::to_string(options.port) + ", room '" + options.room +
                        "'...  (q: quit)");
    return;
  }
  const auto [cols, rows] = Terminal::size();
  const int arena_rows = std::max(rows - 4, 4);
  const uint32_t statics = count_static_bodies(*world);
  if (map->cols != cols || map->rows != arena_rows || map->static_bodies != statics)
    build_arena_map(*world, cols, arena_rows, statics, map);
  const sdk::ClientStats stats = client.stats();
  status->desyncs = stats.desyncs;
  status->ticks_verified = stats.ticks_verified;
  status->rtt_ms = static_cast<double>(stats.rtt_smoothed.count()) / 1e6;
  Terminal::write_all(render(*world, *map, cols, rows, *status));
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (const int rc = parse_options(argc, argv, &options); rc != 0) return rc == 1 ? 0 : 2;
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
    std::fprintf(stderr,
                 "sumo_client: stdin and stdout must be a terminal (it reads arrow keys and draws "
                 "the arena); run it in a terminal or a tmux pane\n");
    return 2;
  }

  sdk::ClientOptions client_options;
  client_options.scene_file = options.scene_file;
  client_options.scene_name = options.scene_name;
  sdk::Client client;
  if (!client.connect(options.host, options.port, options.room, options.name, "", client_options)) {
    std::fprintf(stderr, "sumo_client: %s\n", client.last_error().c_str());
    return 2;
  }
  client.run_thread();

  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    sigaction(sig, &action, nullptr);

  Terminal terminal;
  std::string error;
  if (!terminal.enter(&error)) {
    std::fprintf(stderr, "sumo_client: %s\n", error.c_str());
    return 2;
  }

  KeyReader keys;
  Status status;
  status.room = options.room;
  int heading_x = 0, heading_z = 0;
  std::optional<uint64_t> last_sent_tick;
  uint32_t sequence = 0;
  bool joined = false;
  std::optional<sdk::DisconnectedEvent> gone;
  std::string fatal_error;  // the server's reason for ending the connection, if it gave one
  ArenaMap map;
  Clock::time_point last_frame{};
  const Clock::time_point started = Clock::now();
  const auto join_timeout = std::chrono::seconds(15);

  auto handler = [&](const sdk::Event& event) {
    if (const auto* j = std::get_if<sdk::JoinedEvent>(&event)) {
      joined = true;
      status.player_id = j->player_id;
      status.message = "joined room '" + options.room + "' (scene " + j->scene + ") as player " +
                       std::to_string(j->player_id);
    } else if (const auto* t = std::get_if<sdk::TickAppliedEvent>(&event)) {
      status.tick = t->tick;
      if (heading_x == 0 && heading_z == 0) return;
      // One input frame per server tick (a poll may apply several ticks at once).
      const std::optional<uint64_t> next = client.next_input_tick();
      if (!next || (last_sent_tick && *next <= *last_sent_tick)) return;
      const std::vector<sim::Input> inputs = steering_inputs(
          t->world(), client.player_id(), heading_x, heading_z, options.speed_mps, &sequence);
      if (!inputs.empty()) last_sent_tick = client.send_input(inputs);
    } else if (const auto* s = std::get_if<sdk::SnapshotEvent>(&event)) {
      status.tick = s->tick;
      if (s->resync) status.message = "resynced at tick " + std::to_string(s->tick);
    } else if (const auto* d = std::get_if<sdk::DesyncEvent>(&event)) {
      status.message = "DESYNC at tick " + std::to_string(d->tick) + " (resyncing)";
    } else if (const auto* e = std::get_if<sdk::ErrorEvent>(&event)) {
      status.message = std::string("server: ") + (e->fatal ? "fatal: " : "") + e->message;
      if (e->fatal) fatal_error = e->message;  // the SDK's message names the code
    } else if (const auto* c = std::get_if<sdk::DisconnectedEvent>(&event)) {
      gone = *c;
    }
  };

  bool quit = false;
  while (!quit && !g_stop && !gone) {
    client.poll(std::chrono::milliseconds(10), handler);
    for (Key key : keys.read())
      apply_key(key, &heading_x, &heading_z, &status.heading, &quit);
    if (!joined && Clock::now() - started > join_timeout) {
      gone =
          sdk::DisconnectedEvent{sdk::ErrorCode::timeout, "no Welcome from the server within 15 s"};
      break;
    }
    const Clock::time_point now = Clock::now();
    if (now - last_frame < std::chrono::milliseconds(50)) continue;
    last_frame = now;
    draw(client, options, &map, &status);
  }

  const sdk::ClientStats stats = client.stats();
  const uint32_t player = client.player_id();
  std::string score = "-";
  if (const sim::World* world = client.world(); world != nullptr && player != 0)
    score = std::to_string(world->score(player));
  if (!gone) {
    client.close();
    client.poll(std::chrono::milliseconds(100), nullptr);
  }
  terminal.leave();

  if (joined) {
    std::printf(
        "sumo_client: player %u, %llu ticks verified, %llu desyncs, %llu inputs sent, score %s\n",
        player, static_cast<unsigned long long>(stats.ticks_verified),
        static_cast<unsigned long long>(stats.desyncs),
        static_cast<unsigned long long>(stats.inputs_sent), score.c_str());
  }
  if (gone) {
    std::fprintf(stderr, "sumo_client: disconnected from %s:%u: %s\n", options.host.c_str(),
                 options.port, disconnect_reason(*gone, fatal_error).c_str());
    return 1;
  }
  return 0;
}
