// The docs' worked examples are real source files, compiled and run by the net tests
// (tests/net_joins_test.cpp): docs/server.md shows server/examples/hill_rules.h and docs/client.md
// client_sdk/examples/koth_client.h. A doc marks the block with a line
// "<!-- example: PATH -->" before its ```cpp fence; the block must be the file, byte for byte,
// so the docs cannot drift from code that compiles and plays.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file) << "cannot read " << path;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The code block after "<!-- example: PATH -->" in `doc`; "" (and a failure) when there is none.
std::string example_block(const std::string& doc, const std::string& path) {
  const std::string marker = "<!-- example: " + path + " -->\n```cpp\n";
  const size_t at = doc.find(marker);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no block marked " << path;
    return "";
  }
  const size_t begin = at + marker.size();
  const size_t end = doc.find("\n```\n", begin);
  if (end == std::string::npos) {
    ADD_FAILURE() << "the block of " << path << " does not end";
    return "";
  }
  return doc.substr(begin, end + 1 - begin);
}

struct Example {
  const char* doc;
  const char* file;
};

TEST(DocsExamples, EachWorkedExampleIsItsFileVerbatim) {
  const std::string root = LOCKSTEP_SOURCE_DIR;
  for (const Example& e : {Example{"docs/server.md", "server/examples/hill_rules.h"},
                           Example{"docs/client.md", "client_sdk/examples/koth_client.h"}}) {
    SCOPED_TRACE(std::string(e.doc) + " shows " + e.file);
    const std::string block = example_block(read_text(root + "/" + e.doc), e.file);
    const std::string file = read_text(root + "/" + e.file);
    ASSERT_FALSE(file.empty());
    EXPECT_EQ(block, file);
  }
}

TEST(DocsExamples, AMissingOrUnendedBlockIsReported) {
  // The checker itself: a doc without the marker, and one whose block never closes.
  EXPECT_NONFATAL_FAILURE(example_block("no example here\n", "x.h"), "no block marked x.h");
  EXPECT_NONFATAL_FAILURE(example_block("<!-- example: x.h -->\n```cpp\nint x;\n", "x.h"),
                          "does not end");
  EXPECT_EQ(example_block("<!-- example: x.h -->\n```cpp\nint x;\n```\n", "x.h"), "int x;\n");
}

}  // namespace
