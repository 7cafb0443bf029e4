// docs/protocol.md is the wire contract for clients in other languages. This test keeps it
// honest: the messages and fields it lists are exactly those of schema/protocol.fbs and of the
// codec, and every listed message, built with every field set, survives encode → frame →
// FrameDecoder → decode field by field. kDocumented below is the list; it must match the doc's
// "## Messages" section (headings and field tables) and the schema's tables.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "field_lists.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/config.h"
#include "lockstep/sim/world.h"

namespace {

using namespace lockstep;
using namespace lockstep::schema;

// Sample values are arbitrary (versions included): only the round trip is checked here.
// One documented field: its name and how to compare it between two messages.
struct Field {
  std::string name;
  std::function<bool(const Message&, const Message&)> equal;
};
struct Documented {
  std::string name;  // as in the doc, the schema and message_name()
  Message sample;    // every field different from its default
  std::vector<Field> fields;
  // A compact body (TickFrame, InputFrame since protocol 4): the fields are its parts in byte
  // order, and the schema keeps the unsent v3 table only for the union's numbering.
  bool compact = false;
};

template <class T, class Get>
Field field(std::string name, Get get) {
  return Field{std::move(name), [get](const Message& a, const Message& b) {
                 return get(std::get<T>(a)) == get(std::get<T>(b));
               }};
}

sim::Input sample_input(uint32_t seed) {
  sim::Input in;
  in.player = 1 + seed;
  in.sequence = 7 + seed;
  in.body = sim::BodyId{3 + seed, 2};
  in.linear_impulse[0] = -1024;
  in.linear_impulse[1] = 600 << 10;
  in.linear_impulse[2] = static_cast<int32_t>(seed);
  in.angular_impulse[0] = 5;
  in.angular_impulse[1] = -6;
  in.angular_impulse[2] = 7;
  in.buttons = 0x80u | seed;
  if (seed % 2 == 0) {  // a target velocity on every other input: input_velocities is present
    in.flags = sim::input_sets_linear_velocity | sim::input_sets_angular_velocity;
    in.linear_velocity[0] = 3 << 10;
    in.linear_velocity[2] = -static_cast<int32_t>(seed) - 1;
    in.angular_velocity[1] = 512;
  }
  return in;
}

// The part of the inputs that travels in `input_velocities` (flags and target velocities).
bool same_velocities(const std::vector<sim::Input>& a, const std::vector<sim::Input>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].flags != b[i].flags) return false;
    for (int k = 0; k < 3; ++k) {
      if (a[i].linear_velocity[k] != b[i].linear_velocity[k]) return false;
      if (a[i].angular_velocity[k] != b[i].angular_velocity[k]) return false;
    }
  }
  return true;
}

bool same_inputs(const std::vector<sim::Input>& a, const std::vector<sim::Input>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const sim::Input &x = a[i], &y = b[i];
    if (x.player != y.player || x.sequence != y.sequence || x.body != y.body ||
        x.buttons != y.buttons) {
      return false;
    }
    for (int k = 0; k < 3; ++k) {
      if (x.linear_impulse[k] != y.linear_impulse[k]) return false;
      if (x.angular_impulse[k] != y.angular_impulse[k]) return false;
    }
  }
  return true;
}

// A WorldDef with every kind of field away from its default, and a template.
sim::WorldDef sample_world_def() {
  sim::WorldDef def = sim::default_world_def();
  def.dt_s = 1.0f / 120.0f;
  def.gravity = {0.5f, -3.0f, 0};
  def.max_bodies = 77;
  def.max_commands_per_tick = 9;
  def.enable_sleep = false;
  sim::BodyTemplate& t = def.templates[0];
  EXPECT_TRUE(sim::set_template_name(&t, "player"));
  t.type = sim::BodyType::dynamic;
  t.shape.type = sim::ShapeType::sphere;
  t.shape.radius = 0.25f;
  t.shape.category = 0x2;
  t.allow_sleep = false;
  def.template_count = 1;
  return def;
}

std::vector<sim::Command> sample_commands() {
  sim::Command spawn;
  spawn.type = sim::CommandType::spawn;
  spawn.sequence = 4;
  spawn.template_index = 0;
  spawn.position = {1.5f, 0.5f, -2};
  spawn.orientation = {0, 0.6f, 0, 0.8f};
  spawn.linear_velocity = {0, 0, 3};
  spawn.angular_velocity = {0.25f, 0, 0};
  spawn.owner_player = 2;
  sim::Command destroy;
  destroy.type = sim::CommandType::destroy;
  destroy.sequence = 5;
  destroy.body = sim::BodyId{7, 3};
  sim::Command score;
  score.type = sim::CommandType::add_score;
  score.sequence = 6;
  score.owner_player = 2;
  score.score_delta = -3;
  return {spawn, destroy, score};
}

bool same_commands(const std::vector<sim::Command>& a, const std::vector<sim::Command>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // command_less is a total order over every field: neither less means equal.
    if (sim::command_less(a[i], b[i]) || sim::command_less(b[i], a[i])) return false;
  }
  return true;
}

uint64_t fingerprint_or_zero(const std::optional<sim::WorldDef>& def) {
  return def ? sim::world_def_fingerprint(*def) : 0;
}

// The messages docs/protocol.md lists, in its order, with the fields of each.
std::vector<Documented> documented() {
  std::vector<Documented> list;
  {
    Hello m{6, 1, "lobby", "ada", "token", ClientMode::thin, 7, "arena", 77};
    list.push_back(
        {"Hello",
         m,
         {field<Hello>("protocol_version", [](auto& x) { return x.protocol_version; }),
          field<Hello>("min_protocol_version", [](auto& x) { return x.min_protocol_version; }),
          field<Hello>("room", [](auto& x) { return x.room; }),
          field<Hello>("player_name", [](auto& x) { return x.player_name; }),
          field<Hello>("auth_token", [](auto& x) { return x.auth_token; }),
          field<Hello>("mode", [](auto& x) { return x.mode; }),
          field<Hello>("snapshot_rate_hz", [](auto& x) { return x.snapshot_rate_hz; }),
          field<Hello>("scene", [](auto& x) { return x.scene; }),
          field<Hello>("physics_revision", [](auto& x) { return x.physics_revision; })}});
  }
  {
    Welcome m;
    m.protocol_version = 7;
    m.player_id = 3;
    m.tick_rate_hz = 120;
    m.input_delay_ticks = 5;
    m.scene = "arena";
    m.world_def_fingerprint = 0x0123'4567'89AB'CDEFull;
    m.current_tick = 1ull << 35;
    m.ns_into_tick = 1'234'567;
    m.owned_bodies = {sim::BodyId{2, 1}, sim::BodyId{9, 4}};
    m.snapshot_rate_hz = 6;
    m.snapshot_interval_ticks = 9;
    m.input_window_ticks = 64;
    m.schedule_moved_ns = 250'000'000;
    m.physics_revision = 78;
    m.world_def = sample_world_def();
    m.world_def_fingerprint = sim::world_def_fingerprint(*m.world_def);  // checked on decode
    sim::SceneMesh level_mesh;
    level_mesh.vertices = {{0, 0, 0}, {1, 0, 0}, {0, 0, 1}};
    level_mesh.indices = {0, 2, 1};
    m.level_meshes = {level_mesh};
    m.level_carried = true;
    m.level_digest = sim::level_digest(schema::view_level(m.level_meshes, {}).def());
    const auto owned = [](auto& x) { return x.owned_bodies; };
    list.push_back(
        {"Welcome",
         m,
         {field<Welcome>("protocol_version", [](auto& x) { return x.protocol_version; }),
          field<Welcome>("player_id", [](auto& x) { return x.player_id; }),
          field<Welcome>("tick_rate_hz", [](auto& x) { return x.tick_rate_hz; }),
          field<Welcome>("input_delay_ticks", [](auto& x) { return x.input_delay_ticks; }),
          field<Welcome>("scene", [](auto& x) { return x.scene; }),
          field<Welcome>("world_def_fingerprint", [](auto& x) { return x.world_def_fingerprint; }),
          field<Welcome>("current_tick", [](auto& x) { return x.current_tick; }),
          field<Welcome>("ns_into_tick", [](auto& x) { return x.ns_into_tick; }),
          field<Welcome>("owned_bodies", owned),  // index1 and generation travel apart
          field<Welcome>("owned_generations", owned),
          field<Welcome>("snapshot_rate_hz", [](auto& x) { return x.snapshot_rate_hz; }),
          field<Welcome>("snapshot_interval_ticks",
                         [](auto& x) { return x.snapshot_interval_ticks; }),
          field<Welcome>("world_def", [](auto& x) { return fingerprint_or_zero(x.world_def); }),
          field<Welcome>("input_window_ticks", [](auto& x) { return x.input_window_ticks; }),
          field<Welcome>("schedule_moved_ns", [](auto& x) { return x.schedule_moved_ns; }),
          field<Welcome>("physics_revision", [](auto& x) { return x.physics_revision; }),
          field<Welcome>("level", [](auto& x) { return x.level_digest; })}});
  }
  list.push_back({"Snapshot",
                  Snapshot{41, {1, 2, 3, 250, 0, 7}, 0xFEEDull},
                  {field<Snapshot>("tick", [](auto& x) { return x.tick; }),
                   field<Snapshot>("state", [](auto& x) { return x.state; }),
                   field<Snapshot>("state_hash", [](auto& x) { return x.state_hash; })}});
  list.push_back({"InputFrame",
                  InputFrame{90, 17, {sample_input(0), sample_input(1)}},
                  {field<InputFrame>("target_tick", [](auto& x) { return x.target_tick; }),
                   field<InputFrame>("sequence", [](auto& x) { return x.sequence; }),
                   Field{"inputs",
                         [](const Message& a, const Message& b) {
                           const auto& x = std::get<InputFrame>(a).inputs;
                           const auto& y = std::get<InputFrame>(b).inputs;
                           return same_inputs(x, y) && same_velocities(x, y);
                         }}},
                  true});
  list.push_back({"TickFrame",
                  TickFrame{90, {sample_input(2), sample_input(3)}, 0xABCDull, sample_commands()},
                  {field<TickFrame>("tick", [](auto& x) { return x.tick; }),
                   field<TickFrame>("state_hash", [](auto& x) { return x.state_hash; }),
                   Field{"commands",
                         [](const Message& a, const Message& b) {
                           return same_commands(std::get<TickFrame>(a).commands,
                                                std::get<TickFrame>(b).commands);
                         }},
                   Field{"inputs",
                         [](const Message& a, const Message& b) {
                           const auto& x = std::get<TickFrame>(a).inputs;
                           const auto& y = std::get<TickFrame>(b).inputs;
                           return same_inputs(x, y) && same_velocities(x, y);
                         }}},
                  true});
  list.push_back({"DesyncReport",
                  DesyncReport{77, 0x1111ull, 0x2222ull},
                  {field<DesyncReport>("tick", [](auto& x) { return x.tick; }),
                   field<DesyncReport>("client_hash", [](auto& x) { return x.client_hash; }),
                   field<DesyncReport>("server_hash", [](auto& x) { return x.server_hash; })}});
  list.push_back({"ResyncRequest",
                  ResyncRequest{"hash mismatch"},
                  {field<ResyncRequest>("reason", [](auto& x) { return x.reason; })}});
  list.push_back({"Ping", Ping{123'456'789}, {field<Ping>("client_time_ns", [](auto& x) {
                    return x.client_time_ns;
                  })}});
  list.push_back({"Pong",
                  Pong{123'456'789, 88, 4'000, 3'000'000},
                  {field<Pong>("client_time_ns", [](auto& x) { return x.client_time_ns; }),
                   field<Pong>("server_tick", [](auto& x) { return x.server_tick; }),
                   field<Pong>("ns_into_tick", [](auto& x) { return x.ns_into_tick; }),
                   field<Pong>("schedule_moved_ns", [](auto& x) { return x.schedule_moved_ns; })}});
  list.push_back(
      {"Error",
       ErrorMessage{ErrorCode::unknown_scene, "scene 'x' is not served here", true, 7, 6},
       {field<ErrorMessage>("code", [](auto& x) { return x.code; }),
        field<ErrorMessage>("reason", [](auto& x) { return x.reason; }),
        field<ErrorMessage>("fatal", [](auto& x) { return x.fatal; }),
        field<ErrorMessage>("server_protocol_version",
                            [](auto& x) { return x.server_protocol_version; }),
        field<ErrorMessage>("server_min_protocol_version",
                            [](auto& x) { return x.server_min_protocol_version; })}});
  list.push_back({"Disconnect",
                  Disconnect{ErrorCode::server_shutdown, "bye"},
                  {field<Disconnect>("code", [](auto& x) { return x.code; }),
                   field<Disconnect>("reason", [](auto& x) { return x.reason; })}});
  list.push_back({"GameMessage",
                  GameMessage{{'r', 'e', 'a', 'd', 'y'}},
                  {field<GameMessage>("data", [](auto& x) { return x.data; })}});
  return list;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file) << "cannot read " << path;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  for (std::string line; std::getline(stream, line);)
    lines.push_back(line);
  return lines;
}

// The doc's "## Messages" section: "### Name" headings (one word; the struct and enum
// sections carry more) and the first column of their field tables.
std::vector<std::pair<std::string, std::vector<std::string>>> doc_messages(const std::string& md) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  bool in_messages = false;
  bool in_message = false;
  for (const std::string& line : lines_of(md)) {
    if (line.rfind("## ", 0) == 0) {
      in_messages = line == "## Messages";
      in_message = false;
      continue;
    }
    if (!in_messages) continue;
    if (line.rfind("### ", 0) == 0) {
      const std::string title = line.substr(4);
      in_message = title.find(' ') == std::string::npos && title != "ErrorCode";
      if (in_message) out.push_back({title, {}});
      continue;
    }
    if (in_message && line.rfind("| `", 0) == 0) {
      const size_t end = line.find('`', 3);
      out.back().second.push_back(line.substr(3, end - 3));
    }
  }
  return out;
}

// protocol.fbs's tables and their fields, in order (a small reader for our own schema file).
std::map<std::string, std::vector<std::string>> schema_tables(const std::string& fbs) {
  std::map<std::string, std::vector<std::string>> tables;
  std::string current;
  for (std::string line : lines_of(fbs)) {
    line = line.substr(0, line.find("//"));
    const bool table = line.rfind("table ", 0) == 0;
    if (table || line.rfind("struct ", 0) == 0) {
      const size_t at = table ? 6 : 7;
      current = line.substr(at, line.find_first_of(" {", at) - at);
      tables[current];
      continue;
    }
    if (current.empty()) continue;
    if (line.find('}') != std::string::npos) {
      current.clear();
      continue;
    }
    // Fields, several to a line in structs ("linear_x: int; linear_y: int;").
    std::stringstream fields(line);
    for (std::string part; std::getline(fields, part, ';');) {
      const size_t colon = part.find(':');
      const size_t start = part.find_first_not_of(' ');
      if (colon != std::string::npos && start < colon) {
        std::string name = part.substr(start, colon - start);
        name.erase(name.find_last_not_of(' ') + 1);
        tables[current].push_back(name);
      }
    }
  }
  return tables;
}

TEST(SchemaProtocol, DocListsExactlyTheMessagesAndFieldsOfTheTest) {
  const auto doc = doc_messages(read_text(LOCKSTEP_PROTOCOL_DOC));
  const std::vector<Documented> list = documented();
  ASSERT_EQ(doc.size(), list.size()) << "docs/protocol.md lists another set of messages";
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(doc[i].first, list[i].name);
    std::vector<std::string> names;
    for (const Field& f : list[i].fields)
      names.push_back(f.name);
    EXPECT_EQ(doc[i].second, names) << list[i].name << ": the doc's fields";
  }
}

TEST(SchemaProtocol, TestListsEveryMessageOfTheCodecAndTheSchema) {
  const std::vector<Documented> list = documented();
  ASSERT_EQ(list.size(), std::variant_size_v<Message>);
  const auto tables = schema_tables(read_text(LOCKSTEP_PROTOCOL_FBS));
  for (size_t i = 0; i < list.size(); ++i) {
    SCOPED_TRACE(list[i].name);
    EXPECT_EQ(list[i].sample.index(), i);  // in union order
    EXPECT_STREQ(message_name(list[i].sample), list[i].name.c_str());
    const auto table = tables.find(list[i].name);
    ASSERT_NE(table, tables.end()) << "no table in protocol.fbs";
    const std::vector<uint8_t> frame = encode_frame(list[i].sample);
    EXPECT_EQ((frame.at(kFrameHeaderBytes) & 3) != 0, list[i].compact) << "a compact body";
    if (list[i].compact) continue;  // its table is the unsent v3 one
    std::vector<std::string> names;
    for (const Field& f : list[i].fields)
      names.push_back(f.name);
    EXPECT_EQ(table->second, names) << "protocol.fbs's fields";
  }
}

// A "### Name (…)" section of the doc (the structs and tables inside messages): the first
// column of its field table.
std::vector<std::string> doc_section_fields(const std::string& md, const std::string& title) {
  std::vector<std::string> out;
  bool inside = false;
  for (const std::string& line : lines_of(md)) {
    if (line.rfind("#", 0) == 0) {
      inside = line.rfind("### " + title + " (", 0) == 0;
      continue;
    }
    if (inside && line.rfind("| `", 0) == 0) {
      const size_t end = line.find('`', 3);
      out.push_back(line.substr(3, end - 3));
    }
  }
  return out;
}

TEST(SchemaProtocol, DocListsTheWorldTablesFieldForField) {
  const std::string md = read_text(LOCKSTEP_PROTOCOL_DOC);
  const auto tables = schema_tables(read_text(LOCKSTEP_WORLD_FBS));
  for (const char* name : {"WorldCommand", "WorldDef", "BodyTemplate", "Hull", "Compound",
                           "CompoundChild", "Level", "LevelMesh", "LevelHeightfield"}) {
    SCOPED_TRACE(name);
    const auto table = tables.find(name);
    ASSERT_NE(table, tables.end()) << "not in world.fbs";
    EXPECT_EQ(doc_section_fields(md, name), table->second);
  }
}

TEST(SchemaProtocol, MalformedCommandsAndWorldDefsAreBadValues) {
  const auto decode = [](const Message& message) {
    const std::vector<uint8_t> frame = encode_frame(message);
    Message out;
    return decode_body(std::span<const uint8_t>(frame).subspan(kFrameHeaderBytes), &out);
  };
  TickFrame frame{5, {}, 1, sample_commands()};
  frame.commands[0].position.y = std::numeric_limits<float>::quiet_NaN();
  DecodeResult r = decode(frame);
  EXPECT_EQ(r.error, DecodeError::malformed);
  EXPECT_NE(r.detail.find("TickFrame: command 0: a pose or velocity is not finite"),
            std::string::npos)
      << r.detail;
  frame.commands = sample_commands();
  // One past the last command type (emit_event, 10).
  frame.commands[2].type = static_cast<sim::CommandType>(11);
  r = decode(frame);
  EXPECT_EQ(r.error, DecodeError::malformed);
  EXPECT_NE(r.detail.find("command 2: type 11 is not a command type"), std::string::npos)
      << r.detail;

  Welcome welcome;
  welcome.world_def = sample_world_def();
  welcome.world_def_fingerprint = sim::world_def_fingerprint(*welcome.world_def) + 1;
  r = decode(welcome);
  EXPECT_EQ(r.error, DecodeError::bad_value);
  EXPECT_NE(r.detail.find("does not hash to Welcome.world_def_fingerprint"), std::string::npos)
      << r.detail;
  welcome.world_def->dt_s = 0;  // no world can be made from it
  welcome.world_def_fingerprint = sim::world_def_fingerprint(*welcome.world_def);
  r = decode(welcome);
  EXPECT_EQ(r.error, DecodeError::bad_value);
  EXPECT_NE(r.detail.find("Welcome.world_def is not valid"), std::string::npos) << r.detail;
  welcome.world_def = sample_world_def();
  welcome.world_def->templates[0].name[0] = '/';  // not a template name
  welcome.world_def_fingerprint = sim::world_def_fingerprint(*welcome.world_def);
  r = decode(welcome);
  EXPECT_EQ(r.error, DecodeError::bad_value);
  EXPECT_NE(r.detail.find("template 0 has a bad name"), std::string::npos) << r.detail;
  // A Welcome without one (an older server) still decodes: the SDK refuses it itself.
  welcome.world_def.reset();
  EXPECT_TRUE(decode(welcome).ok());
}

TEST(SchemaProtocol, EveryDocumentedMessageRoundTripsThroughAFrame) {
  for (const Documented& doc : documented()) {
    SCOPED_TRACE(doc.name);
    const std::vector<uint8_t> frame = encode_frame(doc.sample);
    // The frame is what the doc says: a 4-byte little-endian length, then the "LSW1" body, or
    // a compact body whose first byte's low two bits are not 00.
    ASSERT_GT(frame.size(), kFrameHeaderBytes + 8);
    EXPECT_EQ(decode_frame_header(std::span<const uint8_t, 4>(frame.data(), 4)),
              frame.size() - kFrameHeaderBytes);
    if (doc.compact) {
      EXPECT_NE(frame[kFrameHeaderBytes] & 3, 0);
    } else {
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(frame.data()) + 8, 4), "LSW1");
    }
    FrameDecoder decoder(kMaxServerFrameBytes);
    ASSERT_EQ(decoder.feed(frame), frame.size());
    ASSERT_TRUE(decoder.has_frame());
    Message decoded;
    const DecodeResult result = decode_body(decoder.frame(), &decoded);
    ASSERT_TRUE(result.ok()) << result.detail;
    ASSERT_EQ(decoded.index(), doc.sample.index());
    for (const Field& f : doc.fields)
      EXPECT_TRUE(f.equal(doc.sample, decoded)) << f.name;
    // Every field was set: a default-constructed message differs in each one.
    Message empty = doc.sample;
    std::visit([](auto& m) { m = std::remove_reference_t<decltype(m)>{}; }, empty);
    for (const Field& f : doc.fields)
      EXPECT_FALSE(f.equal(doc.sample, empty)) << f.name << " is left at its default";
  }
}

// ---- the doc's numbers against the code's constants -------------------------------------------

// `text` with line breaks as spaces and runs of spaces as one, so a phrase can be found wherever
// the doc wraps it.
std::string collapsed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') c = ' ';
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(c);
  }
  return out;
}

// A "## Title" section of the doc, collapsed().
std::string doc_section_text(const std::string& md, const std::string& title) {
  std::string out;
  bool inside = false;
  for (const std::string& line : lines_of(md)) {
    if (line.rfind("## ", 0) == 0) inside = line == "## " + title;
    if (inside) out += line + "\n";
  }
  return collapsed(out);
}

// Every number the pattern's first group captures in `text` ("65,536" reads as 65536).
std::vector<uint64_t> numbers_after(const std::string& text, const std::string& pattern) {
  std::vector<uint64_t> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    std::string digits;
    for (char c : (*it)[1].str())
      if (c != ',') digits.push_back(c);
    out.push_back(std::stoull(digits));
  }
  return out;
}

// One number the doc must state exactly once, at `pattern`.
uint64_t stated_once(const std::string& text, const std::string& pattern) {
  const std::vector<uint64_t> found = numbers_after(text, pattern);
  EXPECT_EQ(found.size(), 1u) << "the doc should state /" << pattern << "/ once";
  return found.empty() ? UINT64_MAX : found.front();
}

std::string snake_case(const std::string& camel) {
  std::string out;
  for (char c : camel) {
    if (c >= 'A' && c <= 'Z') {
      if (!out.empty()) out.push_back('_');
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

TEST(SchemaProtocolDoc, VersionsAreTheCodes) {
  const std::string md = read_text(LOCKSTEP_PROTOCOL_DOC);
  const std::string versions = doc_section_text(md, "Versions");
  EXPECT_EQ(stated_once(versions, R"(speaks protocol versions \*\*(\d+)\*\* to)"),
            kMinProtocolVersion);
  EXPECT_EQ(stated_once(versions, R"(speaks protocol versions \*\*\d+\*\* to \*\*(\d+)\*\*)"),
            kProtocolVersion);
  // The table of versions ends at the current one.
  const std::vector<uint64_t> rows = numbers_after(versions, R"(\| (\d+) \| )");
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back(), kProtocolVersion);
  // Every quoted refusal names the versions this build speaks.
  const std::string whole = collapsed(md);
  const std::regex refusal(R"(server speaks (\d+)\.\.(\d+))");
  size_t refusals = 0;
  for (auto it = std::sregex_iterator(whole.begin(), whole.end(), refusal);
       it != std::sregex_iterator(); ++it, ++refusals) {
    EXPECT_EQ(std::stoul((*it)[1].str()), kMinProtocolVersion) << it->str();
    EXPECT_EQ(std::stoul((*it)[2].str()), kProtocolVersion) << it->str();
  }
  EXPECT_GE(refusals, 1u);
  // The Hello table says what to put in the two version fields.
  const std::string messages = doc_section_text(md, "Messages");
  EXPECT_EQ(
      stated_once(
          messages,
          R"(\| `protocol_version` \| ushort \| newest version the client speaks \((\d+) for this server\))"),
      kProtocolVersion);
  EXPECT_EQ(
      stated_once(
          messages,
          R"(\| `min_protocol_version` \| ushort \| oldest version the client speaks \((\d+) for this server\))"),
      kMinProtocolVersion);
}

TEST(SchemaProtocolDoc, ErrorCodeTableListsEveryCodeByValue) {
  const std::string md = read_text(LOCKSTEP_PROTOCOL_DOC);
  std::vector<std::string> names(kErrorCodeCount);
  bool inside = false;
  const std::regex row(R"(^\| (\d+) \| `(\w+)` \| (.*) \| (.*) \|$)");
  for (const std::string& line : lines_of(md)) {
    if (line.rfind("#", 0) == 0) inside = line == "### ErrorCode";
    std::smatch m;
    if (!inside || !std::regex_match(line, m, row)) continue;
    const size_t value = std::stoul(m[1].str());
    ASSERT_LT(value, kErrorCodeCount) << line << ": no such code";
    EXPECT_TRUE(names[value].empty()) << line << ": listed twice";
    names[value] = m[2].str();
    EXPECT_EQ(m[3].str().find("reserved"), std::string::npos)
        << line << ": every code is in use; say when it is sent";
  }
  for (size_t value = 0; value < kErrorCodeCount; ++value) {
    EXPECT_EQ(snake_case(names[value]), error_code_name(static_cast<ErrorCode>(value)))
        << "ErrorCode " << value;
  }
}

TEST(SchemaProtocolDoc, FrameLimitsAreTheCodes) {
  const std::string frames = doc_section_text(read_text(LOCKSTEP_PROTOCOL_DOC), "Frames");
  EXPECT_EQ(stated_once(frames, R"(a client may send bodies of at most \*\*([\d,]+) bytes\*\*)"),
            kMaxClientFrameBytes);
  EXPECT_EQ(stated_once(frames, R"(the server sends bodies of at most \*\*(\d+) MiB\*\*)") << 20,
            kMaxServerFrameBytes);
  EXPECT_EQ(stated_once(frames, R"(depth ≤ (\d+))"), kVerifierMaxDepth);
  EXPECT_EQ(uint64_t{1} << stated_once(frames, R"(tables ≤ 2\^(\d+))"), kVerifierMaxTables);
  EXPECT_EQ(stated_once(frames, R"(room, player and scene names (\d+) bytes)"), kMaxNameBytes);
  EXPECT_EQ(stated_once(frames, R"(`auth_token` ([\d,]+))"), kMaxTokenBytes);
  EXPECT_EQ(stated_once(frames, R"(reasons ([\d,]+))"), kMaxReasonBytes);
}

TEST(SchemaProtocolDoc, ServerDefaultsAreTheConfigs) {
  const std::string md = read_text(LOCKSTEP_PROTOCOL_DOC);
  const server::ServerConfig defaults;
  const std::string order = doc_section_text(md, "Order on a connection");
  EXPECT_EQ(stated_once(order, R"(Hello\*\*, within (\d+) seconds of connecting)") * 1000,
            static_cast<uint64_t>(defaults.hello_timeout.count()));
  EXPECT_EQ(stated_once(order, R"(`--hello-timeout-ms`, (\d+) by default)"),
            static_cast<uint64_t>(defaults.hello_timeout.count()));
  EXPECT_EQ(stated_once(order, R"(at least every read timeout \((\d+) s by default\))") * 1000,
            static_cast<uint64_t>(defaults.read_timeout.count()));
  EXPECT_EQ(stated_once(order, R"(at most its flush timeout \((\d+) s by default\))") * 1000,
            static_cast<uint64_t>(defaults.flush_timeout.count()));
  const std::string inputs = doc_section_text(md, "Inputs");
  EXPECT_EQ(stated_once(inputs, R"(the input window, (\d+) by default)"),
            defaults.input_window_ticks);
  EXPECT_EQ(stated_once(inputs, R"(at most (\d+) ticks after the next tick to step)"),
            defaults.input_window_ticks - 1);
  EXPECT_EQ(stated_once(inputs, R"(At most (\d+) inputs per player per tick \(default\))"),
            defaults.max_inputs_per_player_per_tick);
  const std::string messages = doc_section_text(md, "Messages");
  EXPECT_EQ(stated_once(messages, R"(`--max-frames-per-s`, (\d+) by default)"),
            defaults.max_frames_per_s);
  EXPECT_EQ(stated_once(messages, R"(`--max-bytes-per-s`, (\d+) MiB/s)") << 20,
            defaults.max_bytes_per_s);
  EXPECT_EQ(stated_once(messages, R"(`--max-game-message-bytes`, (\d+) by default)"),
            defaults.max_game_message_bytes);
  EXPECT_EQ(stated_once(messages, R"(`--max-game-messages-per-s` per player, (\d+) by default)"),
            defaults.max_game_messages_per_s);
  EXPECT_EQ(stated_once(messages, R"(Over (\d+) bytes \(`schema::kMaxGameMessageBytes`\))"),
            kMaxGameMessageBytes);
}

// world.fbs's names for the fields of a sim list: a vector's components get _x, _y, _z, a
// template's shape is flattened into it (its type as shape_type, its half extents as half_*),
// and template_count is the templates vector's length.
template <class T>
void add_wire_names(std::set<std::string>* out) {
  sim::Fields<T>::visit([out](const sim::Field& field, auto member) {
    using M = sim::field_type_t<decltype(member)>;
    std::string name(field.name);
    if constexpr (std::is_same_v<T, sim::ShapeDef>) {
      if (name == "type") name = "shape_type";
      if (name == "half_extents") name = "half";
    }
    if constexpr (sim::kHasFields<M>) {
      add_wire_names<M>(out);
    } else if constexpr (std::is_same_v<M, sim::Vec3>) {
      for (const char* axis : {"_x", "_y", "_z"})
        out->insert(name + axis);
    } else if (name != "template_count" && name != "hull_count" && name != "compound_count") {
      out->insert(name);
    }
  });
}

// A table's fields in world.fbs but the deprecated ones.
std::set<std::string> live_fields(const std::string& fbs, const std::string& table) {
  std::set<std::string> names;
  const auto tables = schema_tables(fbs);
  for (const std::string& name : tables.at(table)) {
    const size_t at = fbs.find(" " + name + ":");
    const size_t end = fbs.find(';', at);
    if (fbs.substr(at, end - at).find("(deprecated)") == std::string::npos) names.insert(name);
  }
  return names;
}

// FlatBuffers generates the codec's accessors field by field, so the codec cannot walk the sim's
// lists: these two tests hold it and world.fbs to them instead.
TEST(SchemaWorld, WorldFbsHasTheFieldsOfTheSimsLists) {
  const std::string fbs = read_text(LOCKSTEP_WORLD_FBS);
  std::set<std::string> world, body_template;
  add_wire_names<sim::WorldDef>(&world);
  add_wire_names<sim::BodyTemplate>(&body_template);
  EXPECT_EQ(live_fields(fbs, "WorldDef"), world);
  EXPECT_EQ(live_fields(fbs, "BodyTemplate"), body_template);
}

TEST(SchemaWorld, EveryWorldDefFieldRoundTripsThroughTheCodec) {
  Welcome welcome;
  sim::WorldDef def = sim::default_world_def();
  sim::testing::change_every_leaf(def);  // templates[0] too, and template_count 0 -> 1
  def.templates[1] = def.templates[0];
  def.templates[1].name[0] = 'b';
  def.template_count = 2;
  // One hull that builds (the changed leaves made hull 0 a single point): a tetrahedron.
  def.hulls[0] = sim::HullDef{};
  def.hulls[0].point_count = 4;
  def.hulls[0].points[1] = {1, 0, 0};
  def.hulls[0].points[2] = {0, 1, 0};
  def.hulls[0].points[3] = {0, 0, 1};
  ASSERT_EQ(sim::validate_world_def(def), sim::Error::none);
  welcome.world_def = def;
  welcome.world_def_fingerprint = sim::world_def_fingerprint(def);
  const std::vector<uint8_t> frame = encode_frame(welcome);
  Message decoded;
  const DecodeResult r =
      decode_body(std::span<const uint8_t>(frame).subspan(kFrameHeaderBytes), &decoded);
  ASSERT_TRUE(r.ok()) << r.detail;
  const Welcome& back = std::get<Welcome>(decoded);
  ASSERT_TRUE(back.world_def.has_value());
  EXPECT_EQ(sim::testing::first_difference(*back.world_def, def), "");
}

}  // namespace
