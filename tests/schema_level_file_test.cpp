// Level files: `mesh file=` (OBJ) and `heightfield file=` (16-bit PGM, PNG) scene lines, read
// relative to the scene file, and every malformed form of them refused with the file, the line
// and the reason.
#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "lockstep/schema/frame.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/messages.h"
#include "lockstep/schema/protocol_generated.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/sim/level.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

#if LOCKSTEP_TEST_TINYOBJLOADER
#include <tiny_obj_loader.h>
#endif

namespace {

using lockstep::schema::load_scene_file;
using lockstep::sim::Scene;
using lockstep::sim::SceneHeightfield;
using lockstep::sim::SceneLevelFile;
using lockstep::sim::SceneMesh;

class LevelFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("lockstep-level-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "levels");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // Loads `scene` (text) from a file in the test's folder; the error when it is refused.
  bool load(const std::string& scene, Scene* out, std::string* error) {
    return load_scene_file(write("level.scene", scene), out, error);
  }
  std::string refusal(const std::string& scene) {
    Scene out;
    std::string error;
    EXPECT_FALSE(load(scene, &out, &error)) << scene;
    return error;
  }

  std::filesystem::path dir_;
};

// A unit square as one quad, plus a triangle, as a 3D tool writes it.
constexpr char kQuadObj[] =
    "# exported\n"
    "mtllib floor.mtl\n"
    "o Floor\n"
    "v -1.0 0.0 -1.0\n"
    "v 1.0 0.0 -1.0\n"
    "v 1.0 0.0 1.0\n"
    "v -1.0 0.0 1.0\n"
    "v 0.0 1.0 0.0\n"
    "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
    "vn 0 1 0\n"
    "g floor\n"
    "usemtl stone\n"
    "s off\n"
    "f 1/1/1 4/4/1 3/3/1 2/2/1\n"
    "f 1/1/1 2/2/1 5/3/1\n";

std::string mesh_scene(const std::string& file, const std::string& extra = "") {
  return "scene version=1\n"
         "mesh name=floor file=" +
         file + extra +
         "\n"
         "body type=static shape=mesh mesh=floor\n"
         "body type=dynamic shape=sphere radius=0.5 pos=0,2,0\n";
}

TEST_F(LevelFileTest, ObjMeshLoadsRelativeToTheSceneFileWithFansScaleAndPose) {
  write("levels/floor.obj", kQuadObj);
  Scene scene;
  std::string error;
  ASSERT_TRUE(load(mesh_scene("levels/floor.obj", " scale=2 pos=0,-1,0"), &scene, &error)) << error;
  ASSERT_EQ(scene.meshes.size(), 1u);
  const SceneMesh& mesh = scene.meshes[0];
  ASSERT_EQ(mesh.vertices.size(), 5u);
  // The quad's fan from its first corner, then the triangle.
  EXPECT_EQ(mesh.indices, (std::vector<uint32_t>{0, 3, 2, 0, 2, 1, 0, 1, 4}));
  EXPECT_EQ(mesh.vertices[0].x, -2.0f);
  EXPECT_EQ(mesh.vertices[0].y, -1.0f);
  EXPECT_EQ(mesh.vertices[4].y, 1.0f);
  EXPECT_EQ(scene.bodies[0].shape.type, lockstep::sim::ShapeType::mesh);
  EXPECT_EQ(scene.bodies[0].shape.mesh, 0u);

  lockstep::sim::Error e = lockstep::sim::Error::none;
  auto world = lockstep::sim::build_world(scene, &e);
  ASSERT_NE(world, nullptr) << lockstep::sim::error_message(e);
  EXPECT_EQ(world->level_stats().triangles, 3u);
  EXPECT_NE(world->level_stats().digest, 0u);
}

TEST_F(LevelFileTest, SceneTextRoundTripsTheLevelLinesWithoutTheFiles) {
  const std::string text =
      "scene version=1\n"
      "mesh name=arena file=a/b.obj scale=0.25 pos=1,2,3 rot=0,0.70710677,0,0.70710677\n"
      "heightfield name=hills file=h.pgm spacing_x=2 spacing_z=3 height=40\n"
      "body type=static shape=mesh mesh=arena\n"
      "body type=static shape=heightfield heightfield=hills pos=0,-5,0\n";
  Scene scene;
  std::string error;
  ASSERT_TRUE(lockstep::sim::parse_scene_text(text, &scene, &error)) << error;
  ASSERT_EQ(scene.mesh_files.size(), 1u);
  ASSERT_EQ(scene.heightfield_files.size(), 1u);
  EXPECT_EQ(scene.mesh_files[0].file, "a/b.obj");
  EXPECT_EQ(scene.mesh_files[0].scale, 0.25f);
  EXPECT_EQ(scene.heightfield_files[0].spacing_z, 3.0f);
  EXPECT_EQ(scene.bodies[1].shape.type, lockstep::sim::ShapeType::heightfield);
  const std::string written = lockstep::sim::format_scene_text(scene);
  EXPECT_NE(written.find("mesh name=arena file=a/b.obj"), std::string::npos) << written;
  EXPECT_NE(written.find("shape=heightfield"), std::string::npos) << written;
  EXPECT_NE(written.find("heightfield=hills"), std::string::npos) << written;
  Scene again;
  ASSERT_TRUE(lockstep::sim::parse_scene_text(written, &again, &error)) << error << "\n" << written;
  EXPECT_EQ(lockstep::sim::format_scene_text(again), written);
  EXPECT_EQ(again.mesh_files[0].orientation.y, scene.mesh_files[0].orientation.y);
}

TEST_F(LevelFileTest, MalformedLevelLinesAreRefusedWithTheirLine) {
  const auto parse_error = [](const std::string& text) {
    Scene scene;
    std::string error;
    EXPECT_FALSE(lockstep::sim::parse_scene_text(text, &scene, &error)) << text;
    return error;
  };
  EXPECT_NE(parse_error("mesh name=a\n").find("line 1: mesh: missing key 'file'"),
            std::string::npos);
  EXPECT_NE(parse_error("mesh file=a.obj\n").find("missing key 'name'"), std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=../a.obj\n").find("without '..'"), std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=/etc/passwd\n").find("relative path"), std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a//b.obj\n").find("relative path"), std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj\nmesh name=a file=b.obj\n")
                .find("line 2 col 6: mesh: key 'name': a second mesh named 'a'"),
            std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj scale=0\n").find("(0, 1e5]"), std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj scale=nan\n").find("not a finite number"),
            std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj rot=0,0,0,2\n").find("unit quaternion"),
            std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj pos=1e6,0,0\n").find("out of range"),
            std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj height=2\n").find("unknown key 'height'"),
            std::string::npos);
  EXPECT_NE(parse_error("heightfield name=h file=h.pgm\n").find("missing key 'height'"),
            std::string::npos);
  EXPECT_NE(parse_error("heightfield name=h file=h.pgm height=1 spacing_x=0\n").find("spacing_x"),
            std::string::npos);
  EXPECT_NE(parse_error("heightfield name=h file=h.pgm height=-1\n").find("[0, 1e5]"),
            std::string::npos);
  EXPECT_NE(parse_error("body type=static shape=mesh mesh=nope\n").find("no mesh named 'nope'"),
            std::string::npos);
  EXPECT_NE(parse_error("body type=static shape=mesh\n").find("missing key 'mesh'"),
            std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj\nbody type=dynamic shape=mesh mesh=a\n")
                .find("only allowed on static bodies"),
            std::string::npos);
  EXPECT_NE(parse_error("body type=static shape=sphere radius=1\nmesh name=a file=a.obj\n")
                .find("line 2 col 1: mesh: mesh lines come before"),
            std::string::npos);
  EXPECT_NE(parse_error("mesh name=a file=a.obj\nbody type=static shape=sphere radius=1 mesh=a\n")
                .find("does not apply"),
            std::string::npos);
}

TEST_F(LevelFileTest, MissingAndUnreadableFilesNameTheSceneLineAndTheFile) {
  std::string error = refusal(mesh_scene("levels/none.obj"));
  EXPECT_NE(error.find("level.scene: line 2: mesh: "), std::string::npos) << error;
  EXPECT_NE(error.find("levels/none.obj: cannot open the file"), std::string::npos) << error;
  error = refusal(mesh_scene("levels"));  // a folder
  EXPECT_NE(error.find("read error"), std::string::npos) << error;
}

TEST_F(LevelFileTest, MalformedObjFilesAreRefusedWithTheirLine) {
  struct Case {
    const char* obj;
    const char* expected;
  };
  const Case cases[] = {
      {"v 0 0 0\nv 1 0 0\nv 0 0\nf 1 2 3\n", "bad.obj: line 3: a vertex needs three coordinates"},
      {"v 0 0 0\nv 1 0 0\nv 0 0 nan\nf 1 2 3\n", "bad.obj: line 3: vertex coordinate 'nan'"},
      {"v 0 0 0\nv inf 0 0\nv 0 0 1\nf 1 2 3\n", "bad.obj: line 2: vertex coordinate 'inf'"},
      {"v 0 0 0\nv 1e39 0 0\nv 0 0 1\nf 1 2 3\n", "bad.obj: line 2: vertex coordinate '1e39'"},
      {"v 0 0 0\nv 0x1 0 0\nv 0 0 1\nf 1 2 3\n", "line 2: vertex coordinate '0x1'"},
      {"v 0 0 0\nv 1 0 0\nv 0 0 1\n\nf 1 2 4\n", "bad.obj: line 5: vertex index out of range"},
      {"v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2 -9\n", "line 4: vertex index out of range"},
      {"v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2 0\n", "malformed OBJ"},
      {"v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2\n", "line 4: a face needs at least 3 corners"},
      {"v 0 0 0\nv 1 0 0\nv 0 0 1\n", "the OBJ has no faces"},
      {"\x89PNG garbage\x01\x02", "the OBJ has no faces"},
      {"v 1e5 0 0\nv 1 0 0\nv 0 0 1\nf 1 2 3\n", "line 1: vertex out of range once scaled"},
  };
  for (const Case& c : cases) {
    write("levels/bad.obj", c.obj);
    const std::string error = refusal(mesh_scene("levels/bad.obj", " scale=2"));
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.obj << "\n -> " << error;
    EXPECT_NE(error.find("level.scene: line 2: mesh: "), std::string::npos) << error;
  }
}

TEST_F(LevelFileTest, ObjOverTheTriangleCapacityOrTheFileBudgetIsRefused) {
  SceneMesh mesh;
  std::string error;
  EXPECT_FALSE(
      lockstep::schema::parse_obj_mesh(kQuadObj, "q.obj", SceneLevelFile{}, 2, &mesh, &error));
  EXPECT_NE(error.find("q.obj: line 18: more than the level's capacity of 2 triangles"),
            std::string::npos)
      << error;
  EXPECT_TRUE(
      lockstep::schema::parse_obj_mesh(kQuadObj, "q.obj", SceneLevelFile{}, 3, &mesh, &error))
      << error;

  // A file past the budget is refused before it is parsed (a sparse file: no disk is used).
  const std::string path = (dir_ / "levels/huge.obj").string();
  std::ofstream(path) << "v 0 0 0\n";
  std::filesystem::resize_file(path, lockstep::schema::kMaxLevelFileBytes + 1);
  error = refusal(mesh_scene("levels/huge.obj"));
  EXPECT_NE(error.find("huge.obj: larger than the level file budget"), std::string::npos) << error;
}

// The loaded coordinates are the correctly rounded floats of the file's decimals (strtod, then
// one rounding to float, agrees with them whenever the double is not halfway between floats,
// which none of these is). tinyobjloader's own reader is measured beside it: it is not relied on.
TEST_F(LevelFileTest, ObjCoordinatesAreCorrectlyRoundedUnlikeTheReadersOwnParse) {
  std::string obj;
  std::vector<std::string> numbers;
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 3000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    char text[64];
    const double mantissa = static_cast<double>(state >> 11) / 9007199254740992.0;
    const int exponent = static_cast<int>((state >> 3) % 9) - 6;
    std::snprintf(text, sizeof(text), "%.*fe%d", 3 + static_cast<int>(state % 14),
                  (mantissa - 0.5) * 20.0, exponent);
    numbers.push_back(text);
  }
  // Just above the midpoint of two neighbouring floats: a reader that lands one double too low
  // rounds the other way.
  for (int i = 0; i < 3000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float f = static_cast<float>(static_cast<double>(state >> 40) / 1048576.0 - 4.0);
    const double mid = (static_cast<double>(f) +
                        static_cast<double>(std::nextafter(f, std::numeric_limits<float>::max()))) /
                       2.0;
    char text[64];
    std::snprintf(text, sizeof(text), "%.17g",
                  std::nextafter(mid, std::numeric_limits<double>::max()));
    numbers.push_back(text);
  }
  for (size_t i = 0; i < numbers.size(); i += 3)
    obj += "v " + numbers[i] + " " + numbers[i + 1] + " " + numbers[i + 2] + "\n";
  obj += "f 1 2 3\n";
  SceneMesh mesh;
  std::string error;
  ASSERT_TRUE(lockstep::schema::parse_obj_mesh(obj, "n.obj", SceneLevelFile{}, 10, &mesh, &error))
      << error;
  ASSERT_EQ(mesh.vertices.size() * 3, numbers.size());
  for (size_t i = 0; i < numbers.size(); ++i) {
    const lockstep::sim::Vec3 v = mesh.vertices[i / 3];
    const float got = i % 3 == 0 ? v.x : i % 3 == 1 ? v.y : v.z;
    const float expected = std::strtof(numbers[i].c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&got, &expected, 4), 0) << numbers[i];
  }
#if LOCKSTEP_TEST_TINYOBJLOADER
  tinyobj::ObjReader reader;
  ASSERT_TRUE(reader.ParseFromString(obj, ""));
  const std::vector<tinyobj::real_t>& theirs = reader.GetAttrib().vertices;
  ASSERT_EQ(theirs.size(), numbers.size());
  size_t differing = 0;
  for (size_t i = 0; i < numbers.size(); ++i) {
    const float expected = std::strtof(numbers[i].c_str(), nullptr);
    differing += std::memcmp(&theirs[i], &expected, 4) != 0;
  }
  std::printf(
      "tinyobjloader's own parse differs from the correctly rounded float on %zu of %zu "
      "numbers\n",
      differing, numbers.size());
#endif
}

TEST_F(LevelFileTest, DegenerateTrianglesAreDroppedAndCounted) {
  write("levels/degenerate.obj",
        "v 0 0 0\nv 1 0 0\nv 0 0 1\nv 2 0 0\n"
        "f 1 3 2\n"
        "f 1 2 4\n");  // three points on a line
  Scene scene;
  std::string error;
  ASSERT_TRUE(load(mesh_scene("levels/degenerate.obj"), &scene, &error)) << error;
  auto world = lockstep::sim::build_world(scene);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->level_stats().triangles, 1u);
  EXPECT_EQ(world->level_stats().dropped_triangles, 1u);
}

std::string pgm(uint32_t width, uint32_t height, uint32_t maxval,
                const std::vector<uint16_t>& samples) {
  std::string out = "P5\n# made by the test\n" + std::to_string(width) + " " +
                    std::to_string(height) + "\n" + std::to_string(maxval) + "\n";
  for (uint16_t s : samples) {
    out += static_cast<char>(s >> 8);
    out += static_cast<char>(s & 0xff);
  }
  return out;
}

std::string heightfield_scene(const std::string& file) {
  return "scene version=1\n"
         "heightfield name=hills file=" +
         file +
         " spacing_x=2 spacing_z=0.5 height=10\n"
         "body type=static shape=heightfield heightfield=hills\n";
}

TEST_F(LevelFileTest, SixteenBitPgmBecomesAHeightfield) {
  write("levels/h.pgm", pgm(3, 2, 1000, {0, 100, 1000, 500, 250, 1}));
  Scene scene;
  std::string error;
  ASSERT_TRUE(load(heightfield_scene("levels/h.pgm"), &scene, &error)) << error;
  ASSERT_EQ(scene.heightfields.size(), 1u);
  const SceneHeightfield& h = scene.heightfields[0];
  EXPECT_EQ(h.columns, 3u);
  EXPECT_EQ(h.rows, 2u);
  EXPECT_EQ(h.spacing_x, 2.0f);
  EXPECT_EQ(h.spacing_z, 0.5f);
  ASSERT_EQ(h.heights.size(), 6u);
  const float per = 10.0f / 1000.0f;
  EXPECT_EQ(h.heights[1], 100.0f * per);
  EXPECT_EQ(h.heights[2], 1000.0f * per);
  auto world = lockstep::sim::build_world(scene);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->level_stats().heightfield_cells, 2u);
}

TEST_F(LevelFileTest, MalformedPgmFilesAreRefused) {
  struct Case {
    std::string bytes;
    const char* expected;
  };
  const Case cases[] = {
      {"P2\n2 2\n65535\n0 0 0 0\n", "not a binary PGM (P5) or a PNG"},
      {"P5\n2 x\n65535\n", "malformed PGM header"},
      {"P5\n2 2\n65535", "malformed PGM header"},
      {"P5 99999999999 2 65535\n", "malformed PGM header"},
      {pgm(2, 2, 255, {0, 0, 0, 0}), "maxval 255 is not 16-bit"},
      {pgm(2, 2, 65535, {0, 0, 0, 0}).substr(0, 38),
       "PGM data is 6 bytes, 2 x 2 16-bit samples need 8"},
      {pgm(2, 2, 65535, {0, 0, 0, 0}) + "x", "PGM data is 9 bytes"},
      {pgm(1, 5, 65535, {0, 0, 0, 0, 0}), "at least 2 x 2 samples"},
      {pgm(2, 2, 300, {0, 301, 0, 0}), "above maxval 300"},
      {"P5\n60000 60000\n65535\n", "more than the level's capacity"},
      {"", "not a binary PGM (P5) or a PNG"},
  };
  for (const Case& c : cases) {
    write("levels/bad.pgm", c.bytes);
    const std::string error = refusal(heightfield_scene("levels/bad.pgm"));
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.bytes << "\n -> " << error;
    EXPECT_NE(error.find("level.scene: line 2: heightfield: "), std::string::npos) << error;
    EXPECT_NE(error.find("levels/bad.pgm"), std::string::npos) << error;
  }
}

// Writes a PNG of the given depth and colour type with libpng (rows of zeros but the first
// sample, 0x1234 in 16-bit images).
std::string make_png(uint32_t width, uint32_t height, int depth, int color) {
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, png_size_t length) {
        static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<char*>(data), length);
      },
      nullptr);
  png_set_IHDR(png, info, width, height, depth, color, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const int channels = color == PNG_COLOR_TYPE_RGB ? 3 : 1;
  std::vector<png_byte> row(size_t{width} * channels * (depth / 8), 0);
  for (uint32_t r = 0; r < height; ++r) {
    if (r == 0 && depth == 16) {
      row[0] = 0x12;
      row[1] = 0x34;
    } else {
      std::fill(row.begin(), row.end(), png_byte{0});
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

TEST_F(LevelFileTest, SixteenBitGrayPngBecomesAHeightfield) {
  write("levels/h.png", make_png(4, 3, 16, PNG_COLOR_TYPE_GRAY));
  Scene scene;
  std::string error;
  ASSERT_TRUE(load(heightfield_scene("levels/h.png"), &scene, &error)) << error;
  const SceneHeightfield& h = scene.heightfields[0];
  EXPECT_EQ(h.columns, 4u);
  EXPECT_EQ(h.rows, 3u);
  EXPECT_EQ(h.heights[0], 4660.0f * (10.0f / 65535.0f));
  EXPECT_EQ(h.heights[1], 0.0f);
}

TEST_F(LevelFileTest, MalformedPngFilesAreRefused) {
  const std::string good = make_png(4, 3, 16, PNG_COLOR_TYPE_GRAY);
  struct Case {
    std::string bytes;
    const char* expected;
  };
  std::string corrupt = good;
  corrupt[20] = static_cast<char>(corrupt[20] ^ 0x55);  // inside IHDR: its CRC fails
  const Case cases[] = {
      {good.substr(0, good.size() / 2), "malformed PNG"},
      {good.substr(0, 12), "malformed PNG"},
      {corrupt, "malformed PNG"},
      {make_png(4, 3, 8, PNG_COLOR_TYPE_GRAY), "not 16-bit gray (bit depth 8"},
      {make_png(4, 3, 16, PNG_COLOR_TYPE_RGB), "not 16-bit gray (bit depth 16, color type 2"},
      {make_png(1, 3, 16, PNG_COLOR_TYPE_GRAY), "at least 2 x 2 samples"},
  };
  for (const Case& c : cases) {
    write("levels/bad.png", c.bytes);
    const std::string error = refusal(heightfield_scene("levels/bad.png"));
    EXPECT_NE(error.find(c.expected), std::string::npos) << error;
    EXPECT_NE(error.find("levels/bad.png"), std::string::npos) << error;
  }
}

TEST_F(LevelFileTest, SceneTextWithoutAFileLoaderIsRefusedByTheWorldNotCrashed) {
  // The sim alone parses the lines but has no geometry for them: the world is refused.
  Scene scene;
  std::string error;
  ASSERT_TRUE(lockstep::sim::parse_scene_text(mesh_scene("x.obj"), &scene, &error)) << error;
  lockstep::sim::Error e = lockstep::sim::Error::none;
  EXPECT_EQ(lockstep::sim::build_world(scene, &e), nullptr);
  EXPECT_EQ(e, lockstep::sim::Error::unknown_mesh);
}

}  // namespace

// ---- The Welcome's level table ----

namespace welcome_level {

using lockstep::schema::decode_body;
using lockstep::schema::DecodeResult;
using lockstep::schema::Message;
using lockstep::schema::Welcome;
namespace wire = lockstep::wire;

// Decodes bytes through an 8-byte aligned copy, as the connection does.
DecodeResult decode(std::span<const uint8_t> bytes, Message* out) {
  std::vector<uint64_t> words(bytes.size() / 8 + 2);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return decode_body(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(words.data()), bytes.size()), out);
}

DecodeResult decode_welcome(const Welcome& welcome, Message* out) {
  const std::vector<uint8_t> frame = lockstep::schema::encode_frame(Message{welcome});
  return decode(std::span<const uint8_t>(frame).subspan(lockstep::schema::kFrameHeaderBytes), out);
}

// A Welcome carrying one quad mesh and one 3 x 2 heightfield, with their digest.
Welcome carrying_welcome() {
  Welcome w;
  w.world_def = lockstep::sim::default_world_def();
  w.world_def_fingerprint = lockstep::sim::world_def_fingerprint(*w.world_def);
  SceneMesh mesh;
  mesh.vertices = {{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}};
  mesh.indices = {0, 2, 1, 0, 3, 2};
  SceneHeightfield h;
  h.heights = {0, 1, 2, 3, 4, 5};
  h.columns = 3;
  h.rows = 2;
  h.spacing_x = 2;
  w.level_meshes = {mesh};
  w.level_heightfields = {h};
  w.level_carried = true;
  w.level_digest = lockstep::sim::level_digest(
      lockstep::schema::view_level(w.level_meshes, w.level_heightfields).def());
  return w;
}

TEST(WelcomeLevel, CarriedGeometryAndDigestOnlyRoundTrip) {
  const Welcome sent = carrying_welcome();
  Message decoded;
  DecodeResult result = decode_welcome(sent, &decoded);
  ASSERT_TRUE(result.ok()) << result.detail;
  const Welcome& got = std::get<Welcome>(decoded);
  EXPECT_TRUE(got.level_carried);
  EXPECT_EQ(got.level_digest, sent.level_digest);
  ASSERT_EQ(got.level_meshes.size(), 1u);
  EXPECT_EQ(got.level_meshes[0].indices, sent.level_meshes[0].indices);
  EXPECT_EQ(got.level_meshes[0].vertices[2].z, 1.0f);
  ASSERT_EQ(got.level_heightfields.size(), 1u);
  EXPECT_EQ(got.level_heightfields[0].heights, sent.level_heightfields[0].heights);
  EXPECT_EQ(got.level_heightfields[0].spacing_x, 2.0f);

  Welcome digest_only = sent;
  digest_only.level_carried = false;
  result = decode_welcome(digest_only, &decoded);
  ASSERT_TRUE(result.ok()) << result.detail;
  const Welcome& named = std::get<Welcome>(decoded);
  EXPECT_FALSE(named.level_carried);
  EXPECT_EQ(named.level_digest, sent.level_digest);
  EXPECT_TRUE(named.level_meshes.empty());

  // A level-less Welcome has no level table: digest 0.
  Welcome plain = sent;
  plain.level_carried = false;
  plain.level_digest = 0;
  ASSERT_TRUE(decode_welcome(plain, &decoded).ok());
  EXPECT_EQ(std::get<Welcome>(decoded).level_digest, 0u);
}

TEST(WelcomeLevel, MalformedLevelTablesAreRefused) {
  struct Case {
    const char* what;
    void (*spoil)(Welcome*);
    const char* expected;
  };
  const Case cases[] = {
      {"digest", [](Welcome* w) { w->level_digest ^= 1; }, "does not hash to its digest"},
      {"index", [](Welcome* w) { w->level_meshes[0].indices[4] = 4; }, "index 4 past its 4"},
      {"nan", [](Welcome* w) { w->level_meshes[0].vertices[1].y = std::nanf(""); }, "finite"},
      {"inf height",
       [](Welcome* w) {
         w->level_heightfields[0].heights[3] = std::numeric_limits<float>::infinity();
       },
       "one finite height each"},
      {"size", [](Welcome* w) { w->level_heightfields[0].rows = 3; }, "3 x 3 with 6 heights"},
      {"one row", [](Welcome* w) { w->level_heightfields[0].rows = 1; }, "at least 2 x 2"},
      {"spacing", [](Welcome* w) { w->level_heightfields[0].spacing_z = 0; }, "positive spacing"},
      {"count", [](Welcome* w) { w->level_meshes.resize(17, w->level_meshes[0]); }, "17 meshes"},
  };
  for (const Case& c : cases) {
    Welcome w = carrying_welcome();
    c.spoil(&w);
    Message decoded;
    const DecodeResult result = decode_welcome(w, &decoded);
    EXPECT_FALSE(result.ok()) << c.what;
    EXPECT_NE(result.detail.find("Welcome.level: "), std::string::npos) << result.detail;
    EXPECT_NE(result.detail.find(c.expected), std::string::npos) << c.what << ": " << result.detail;
  }
}

// Tables the encoder never writes: built by hand.
std::vector<uint8_t> hand_built(bool carried, std::vector<float> vertices,
                                std::vector<uint32_t> indices) {
  flatbuffers::FlatBufferBuilder b;
  auto v = b.CreateVector(vertices);
  auto i = b.CreateVector(indices);
  auto mesh = wire::CreateLevelMesh(b, v, i);
  auto meshes = b.CreateVector(std::vector<flatbuffers::Offset<wire::LevelMesh>>{mesh});
  auto level = wire::CreateLevel(b, 1234, carried, meshes, 0);
  wire::WelcomeBuilder welcome(b);
  welcome.add_level(level);
  auto body = welcome.Finish();
  b.Finish(wire::CreateEnvelope(b, wire::Message::Welcome, body.Union()),
           wire::EnvelopeIdentifier());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

TEST(WelcomeLevel, HandBuiltMalformedTablesAreRefused) {
  Message decoded;
  DecodeResult r = decode(hand_built(false, {0, 0, 0, 1, 0, 0, 0, 0, 1}, {0, 1, 2}), &decoded);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.detail.find("geometry in a level marked as not carried"), std::string::npos)
      << r.detail;
  r = decode(hand_built(true, {0, 0, 0, 1, 0, 0, 0, 0}, {0, 1, 2}), &decoded);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.detail.find("8 coordinates and 3 indices"), std::string::npos) << r.detail;
  r = decode(hand_built(true, {0, 0, 0, 1, 0, 0, 0, 0, 1}, {0, 1}), &decoded);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.detail.find("9 coordinates and 2 indices"), std::string::npos) << r.detail;
}

}  // namespace welcome_level

// ---- The shipped bowl arena, and what snapshots carry ----

namespace bowl {

TEST(SumoBowl, TheShippedObjArenaLoadsAndHoldsABallThatRollsToItsCentre) {
  Scene scene;
  std::string error;
  ASSERT_TRUE(load_scene_file(LOCKSTEP_SCENES_DIR "/sumo_bowl.scene", &scene, &error)) << error;
  ASSERT_EQ(scene.meshes.size(), 1u);
  // 8 rings of 24: a fan of 24 triangles at the centre, then 7 rings of 24 quads.
  EXPECT_EQ(scene.meshes[0].vertices.size(), 1u + 8 * 24);
  EXPECT_EQ(scene.meshes[0].indices.size(), 3u * (24 + 7 * 24 * 2));
  lockstep::sim::BodyDef ball = lockstep::sim::default_body_def();
  ball.shape.type = lockstep::sim::ShapeType::sphere;
  ball.shape.radius = 0.5f;
  ball.position = {2.5f, 1.0f, 0.0f};
  scene.bodies.push_back(ball);
  auto world = lockstep::sim::build_world(scene);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->level_stats().dropped_triangles, 0u);
  const lockstep::sim::BodyId id{static_cast<uint32_t>(scene.bodies.size()), 0};
  float lowest = 1e9f;
  for (int i = 0; i < 600; ++i) {
    world->step();
    lockstep::sim::BodyView view;
    ASSERT_EQ(world->get_body(id, &view), lockstep::sim::Error::none);
    lowest = std::min(lowest, view.position.y);
  }
  lockstep::sim::BodyView view;
  ASSERT_EQ(world->get_body(id, &view), lockstep::sim::Error::none);
  // Never through the bowl (its bottom is y = 0, the ball's centre 0.5 m above), and after 10 s
  // of rolling back and forth it is near the bottom.
  EXPECT_GT(lowest, 0.45f);
  EXPECT_LT(view.position.y, 0.75f);
  EXPECT_LT(std::abs(view.position.x), 1.5f);
}

TEST(SumoBowl, SnapshotsDoNotCarryTheLevel) {
  Scene small;
  std::string error;
  ASSERT_TRUE(load_scene_file(LOCKSTEP_SCENES_DIR "/sumo_bowl.scene", &small, &error)) << error;
  Scene big = small;
  // The same bodies over a level 20 times the size: the snapshot is the same size.
  SceneMesh& mesh = big.meshes[0];
  const size_t n = mesh.vertices.size();
  const std::vector<uint32_t> indices = mesh.indices;
  for (uint32_t copy = 1; copy < 20; ++copy) {
    for (size_t i = 0; i < n; ++i) {
      lockstep::sim::Vec3 v = mesh.vertices[i];
      v.y -= 20.0f * static_cast<float>(copy);
      mesh.vertices.push_back(v);
    }
    for (uint32_t index : indices)
      mesh.indices.push_back(index + copy * static_cast<uint32_t>(n));
  }
  auto a = lockstep::sim::build_world(small);
  auto b = lockstep::sim::build_world(big);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->level_stats().triangles, 20 * a->level_stats().triangles);
  EXPECT_EQ(a->snapshot_size(), b->snapshot_size());
  EXPECT_EQ(a->max_snapshot_size(), b->max_snapshot_size());
  EXPECT_NE(a->level_stats().digest, b->level_stats().digest);
}

}  // namespace bowl
