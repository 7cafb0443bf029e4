// Replay record files: layout, read-back, every truncation of the last record, corruption of
// each record, bad headers, and the write-to-temporary-then-rename contract.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "lockstep/replays/record_file.h"

namespace {

namespace fs = std::filesystem;
using lockstep::replays::check_record_file;
using lockstep::replays::RecordError;
using lockstep::replays::RecordReader;
using lockstep::replays::RecordWriter;
using Bytes = std::vector<uint8_t>;

constexpr size_t kFileHeader = 8;
constexpr size_t kRecordHeader = 12;

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t load_le(const Bytes& bytes, size_t at, size_t count) {
  uint64_t value = 0;
  for (size_t i = 0; i < count; ++i)
    value |= uint64_t{bytes[at + i]} << (8 * i);
  return value;
}

// Record payloads of assorted sizes: empty, tiny, and one larger than the writer's buffer.
std::vector<Bytes> sample_payloads() {
  std::vector<Bytes> payloads;
  const size_t sizes[] = {1, 0, 7, 100, 1000, 3, 64, 255, 256, 17};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    Bytes payload(sizes[i]);
    for (size_t j = 0; j < payload.size(); ++j)
      payload[j] = static_cast<uint8_t>(i * 37 + j);
    payloads.push_back(payload);
  }
  return payloads;
}

class ReplaysRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("lockstep_replays_record_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the payloads through a writer with a 256-byte buffer (so the 1000-byte record takes
  // the direct path) and returns the finished file's bytes.
  Bytes write_file(const std::vector<Bytes>& payloads) {
    const fs::path path = dir_ / "match.lsrp";
    RecordWriter writer;
    EXPECT_EQ(writer.open(path.string(), 1u << 20, 256), RecordError::none) << writer.error_text();
    for (const Bytes& payload : payloads)
      EXPECT_EQ(writer.append(payload), RecordError::none);
    EXPECT_EQ(writer.finish(), RecordError::none) << writer.error_text();
    return read_file(path);
  }

  // Offsets of each record, found by walking the sizes by hand.
  static std::vector<size_t> record_offsets(const Bytes& file) {
    std::vector<size_t> offsets;
    for (size_t at = kFileHeader; at < file.size();
         at += kRecordHeader + static_cast<size_t>(load_le(file, at, 4))) {
      offsets.push_back(at);
    }
    return offsets;
  }

  fs::path dir_;
};

TEST_F(ReplaysRecord, LayoutIsHeaderThenSizeChecksumPayload) {
  const std::vector<Bytes> payloads = sample_payloads();
  const Bytes file = write_file(payloads);
  ASSERT_GE(file.size(), kFileHeader);
  EXPECT_EQ(std::string(file.begin(), file.begin() + 4), "LSRP");
  EXPECT_EQ(load_le(file, 4, 2), 1u);  // format version
  EXPECT_EQ(load_le(file, 6, 2), 0u);  // reserved
  size_t at = kFileHeader;
  for (const Bytes& payload : payloads) {
    ASSERT_LE(at + kRecordHeader + payload.size(), file.size());
    EXPECT_EQ(load_le(file, at, 4), payload.size());
    EXPECT_EQ(load_le(file, at + 4, 8), XXH3_64bits(payload.data(), payload.size()));
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), file.begin() + at + kRecordHeader));
    at += kRecordHeader + payload.size();
  }
  EXPECT_EQ(at, file.size());
}

TEST_F(ReplaysRecord, WrittenRecordsReadBackInOrder) {
  const std::vector<Bytes> payloads = sample_payloads();
  const Bytes file = write_file(payloads);
  RecordReader reader(file);
  EXPECT_EQ(reader.format_version(), 1);
  std::span<const uint8_t> payload;
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_EQ(reader.next(&payload), RecordError::none) << reader.message();
    EXPECT_EQ(Bytes(payload.begin(), payload.end()), payloads[i]) << "record " << i;
  }
  EXPECT_EQ(reader.next(&payload), RecordError::end_of_file);
  EXPECT_TRUE(payload.empty());
  EXPECT_EQ(reader.next(&payload), RecordError::end_of_file);  // sticky
  EXPECT_EQ(reader.records_read(), payloads.size());

  const auto check = check_record_file(file);
  EXPECT_EQ(check.error, RecordError::end_of_file);
  EXPECT_EQ(check.complete_records, payloads.size());
  EXPECT_EQ(check.good_bytes, file.size());
  EXPECT_EQ(check.message.rfind("ok: 10 complete records", 0), 0u) << check.message;

  // A file with a header and no records is intact and empty.
  const Bytes empty_file = write_file({});
  EXPECT_EQ(empty_file.size(), kFileHeader);
  EXPECT_EQ(check_record_file(empty_file).error, RecordError::end_of_file);
}

TEST_F(ReplaysRecord, CutInsideTheLastRecordKeepsAllRecordsBeforeIt) {
  const std::vector<Bytes> payloads = sample_payloads();
  const Bytes file = write_file(payloads);
  const size_t last = record_offsets(file).back();
  const uint64_t complete = payloads.size() - 1;
  // A cut exactly at the record boundary is an intact shorter file (nothing can tell them
  // apart); every cut strictly inside the last record is a truncation.
  EXPECT_EQ(check_record_file(std::span(file).first(last)).error, RecordError::end_of_file);
  for (size_t cut = last + 1; cut < file.size(); ++cut) {
    const auto check = check_record_file(std::span(file).first(cut));
    ASSERT_EQ(check.error, RecordError::truncated) << "cut at " << cut;
    EXPECT_EQ(check.complete_records, complete);
    EXPECT_EQ(check.good_bytes, last);
    const std::string expected = "truncated at byte " + std::to_string(cut) + ", " +
                                 std::to_string(complete) + " complete records";
    EXPECT_EQ(check.message.rfind(expected, 0), 0u) << check.message;
  }
  // Cut inside the file header: no records at all.
  for (size_t cut = 0; cut < kFileHeader; ++cut) {
    const auto check = check_record_file(std::span(file).first(cut));
    EXPECT_EQ(check.error, RecordError::truncated) << "cut at " << cut;
    EXPECT_EQ(check.complete_records, 0u);
    EXPECT_EQ(check.message.rfind("truncated at byte " + std::to_string(cut) + ", 0 complete", 0),
              0u)
        << check.message;
  }
}

TEST_F(ReplaysRecord, AFlippedByteInAnyRecordIsReportedWithItsIndexAndOffset) {
  const std::vector<Bytes> payloads = sample_payloads();
  const Bytes file = write_file(payloads);
  const std::vector<size_t> offsets = record_offsets(file);
  ASSERT_EQ(offsets.size(), payloads.size());
  for (size_t k = 0; k < offsets.size(); ++k) {
    // A payload byte (middle of the payload), or a checksum byte for the empty record.
    const size_t flip_at =
        payloads[k].empty() ? offsets[k] + 4 : offsets[k] + kRecordHeader + payloads[k].size() / 2;
    Bytes corrupt = file;
    corrupt[flip_at] ^= 0x10;
    const auto check = check_record_file(corrupt);
    ASSERT_EQ(check.error, RecordError::checksum_mismatch) << "record " << k;
    EXPECT_EQ(check.complete_records, k);
    EXPECT_EQ(check.good_bytes, offsets[k]);
    const std::string expected = "checksum mismatch in record #" + std::to_string(k) +
                                 " at byte offset " + std::to_string(offsets[k]);
    EXPECT_EQ(check.message.rfind(expected, 0), 0u) << check.message;

    // The reader hands out every record before the bad one, then stops for good.
    RecordReader reader(corrupt);
    std::span<const uint8_t> payload;
    for (size_t i = 0; i < k; ++i)
      ASSERT_EQ(reader.next(&payload), RecordError::none);
    EXPECT_EQ(reader.next(&payload), RecordError::checksum_mismatch);
    EXPECT_EQ(reader.next(&payload), RecordError::checksum_mismatch);
    EXPECT_TRUE(payload.empty());
  }
}

TEST_F(ReplaysRecord, ACorruptSizeIsCheckedAgainstTheCapAndTheBytesLeft) {
  const Bytes file = write_file(sample_payloads());
  const std::vector<size_t> offsets = record_offsets(file);
  // High size byte set: 2^31 + n bytes, over any cap; reported as such, never read.
  Bytes huge = file;
  huge[offsets[3] + 3] = 0x80;
  auto check = check_record_file(huge);
  EXPECT_EQ(check.error, RecordError::record_too_large);
  EXPECT_EQ(check.complete_records, 3u);
  EXPECT_NE(check.message.find("record #3 at byte offset " + std::to_string(offsets[3])),
            std::string::npos)
      << check.message;
  // Under the cap but past the end of the file: read as a cut-short file, not out of bounds.
  Bytes past_end = file;
  past_end[offsets[3] + 2] = 0x01;  // +64 KiB
  check = check_record_file(past_end, 1u << 20);
  EXPECT_EQ(check.error, RecordError::truncated);
  EXPECT_EQ(check.complete_records, 3u);
  // A smaller cap refuses records the default cap accepts.
  check = check_record_file(file, 512);
  EXPECT_EQ(check.error, RecordError::record_too_large);
  EXPECT_EQ(check.complete_records, 4u);  // record #4 is the 1000-byte one
}

TEST_F(ReplaysRecord, BadMagicFutureVersionAndBadHeaderAreNamed) {
  const Bytes file = write_file(sample_payloads());

  Bytes bad_magic = file;
  bad_magic[3] = 'X';
  auto check = check_record_file(bad_magic);
  EXPECT_EQ(check.error, RecordError::bad_magic);
  EXPECT_EQ(check.complete_records, 0u);
  EXPECT_NE(check.message.find("not a lockstep record file"), std::string::npos) << check.message;
  EXPECT_NE(check.message.find("4c 53 52 58"), std::string::npos) << check.message;

  const std::string text = "hello, this is not a replay\n";
  EXPECT_EQ(check_record_file(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()))
                .error,
            RecordError::bad_magic);
  const Bytes short_wrong = {'L', 'X'};
  EXPECT_EQ(check_record_file(short_wrong).error, RecordError::bad_magic);

  Bytes future = file;
  future[4] = 2;
  check = check_record_file(future);
  EXPECT_EQ(check.error, RecordError::future_version);
  EXPECT_EQ(check.message, "record format version 2 is newer than this build reads (up to 1)");
  future[4] = 0;
  future[5] = 1;  // 256
  EXPECT_EQ(check_record_file(future).error, RecordError::future_version);

  Bytes version_zero = file;
  version_zero[4] = 0;
  check = check_record_file(version_zero);
  EXPECT_EQ(check.error, RecordError::bad_header);
  EXPECT_NE(check.message.find("format version 0"), std::string::npos) << check.message;

  Bytes reserved = file;
  reserved[7] = 1;
  EXPECT_EQ(check_record_file(reserved).error, RecordError::bad_header);
}

TEST_F(ReplaysRecord, NothingUnderTheFinalNameBeforeFinish) {
  const fs::path path = dir_ / "room-1_tick-600.lsrp";
  const fs::path temp = dir_ / "room-1_tick-600.lsrp.tmp";
  RecordWriter writer;
  ASSERT_EQ(writer.open(path.string()), RecordError::none) << writer.error_text();
  EXPECT_EQ(writer.temp_path(), temp.string());
  EXPECT_TRUE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(path));

  const std::vector<Bytes> payloads = sample_payloads();
  for (const Bytes& payload : payloads)
    ASSERT_EQ(writer.append(payload), RecordError::none);
  ASSERT_EQ(writer.flush(), RecordError::none);
  EXPECT_FALSE(fs::exists(path));
  // What a crash here would leave: the temporary file, every flushed record readable.
  auto check = check_record_file(read_file(temp));
  EXPECT_EQ(check.error, RecordError::end_of_file) << check.message;
  EXPECT_EQ(check.complete_records, payloads.size());
  EXPECT_EQ(writer.file_bytes(), fs::file_size(temp));

  ASSERT_EQ(writer.sync(), RecordError::none);
  EXPECT_FALSE(fs::exists(path));
  ASSERT_EQ(writer.finish(), RecordError::none) << writer.error_text();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(writer.is_open());
  check = check_record_file(read_file(path));
  EXPECT_EQ(check.error, RecordError::end_of_file);
  EXPECT_EQ(check.complete_records, payloads.size());
  EXPECT_EQ(writer.records_written(), payloads.size());
  EXPECT_EQ(writer.file_bytes(), fs::file_size(path));

  // After finish the writer takes nothing more.
  EXPECT_EQ(writer.append(payloads[0]), RecordError::not_open);
}

TEST_F(ReplaysRecord, AWriterDroppedWithoutFinishPublishesNothing) {
  const fs::path path = dir_ / "abandoned.lsrp";
  {
    RecordWriter writer;
    ASSERT_EQ(writer.open(path.string()), RecordError::none);
    ASSERT_EQ(writer.append(Bytes{1, 2, 3}), RecordError::none);
    ASSERT_EQ(writer.flush(), RecordError::none);
    EXPECT_TRUE(fs::exists(path.string() + ".tmp"));
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));

  // A moved-from writer does not remove the file its successor is writing.
  RecordWriter first;
  ASSERT_EQ(first.open(path.string()), RecordError::none);
  RecordWriter second(std::move(first));
  first.abandon();
  EXPECT_TRUE(fs::exists(path.string() + ".tmp"));
  ASSERT_EQ(second.append(Bytes{4}), RecordError::none);
  ASSERT_EQ(second.finish(), RecordError::none);
  EXPECT_EQ(check_record_file(read_file(path)).complete_records, 1u);
}

TEST_F(ReplaysRecord, FinishReplacesAnOlderFileWhole) {
  const fs::path path = dir_ / "replaced.lsrp";
  { std::ofstream(path) << "old contents"; }
  RecordWriter writer;
  ASSERT_EQ(writer.open(path.string()), RecordError::none);
  ASSERT_EQ(writer.append(Bytes{9, 9}), RecordError::none);
  EXPECT_EQ(read_file(path).size(), 12u);  // the old file is untouched until finish
  ASSERT_EQ(writer.finish(), RecordError::none);
  const auto check = check_record_file(read_file(path));
  EXPECT_EQ(check.error, RecordError::end_of_file);
  EXPECT_EQ(check.complete_records, 1u);
}

TEST_F(ReplaysRecord, ErrorsAreReportedNotThrown) {
  RecordWriter writer;
  EXPECT_EQ(writer.append(Bytes{1}), RecordError::not_open);
  EXPECT_EQ(writer.finish(), RecordError::not_open);

  const fs::path missing_dir = dir_ / "no_such_dir" / "x.lsrp";
  EXPECT_EQ(writer.open(missing_dir.string()), RecordError::io_error);
  EXPECT_NE(writer.error_text().find("x.lsrp.tmp"), std::string::npos) << writer.error_text();
  EXPECT_NE(writer.error_text().find("errno"), std::string::npos) << writer.error_text();

  // An oversize record is refused without ending the file.
  const fs::path path = dir_ / "capped.lsrp";
  ASSERT_EQ(writer.open(path.string(), 16), RecordError::none);
  EXPECT_EQ(writer.append(Bytes(17)), RecordError::record_too_large);
  EXPECT_EQ(writer.append(Bytes(16)), RecordError::none);
  ASSERT_EQ(writer.finish(), RecordError::none);
  EXPECT_EQ(check_record_file(read_file(path)).complete_records, 1u);
}

}  // namespace
