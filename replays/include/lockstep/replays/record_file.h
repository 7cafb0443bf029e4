// The record layer of replay files (docs/replays.md): what makes them crash-safe.
//
//   file   = header record*
//   header = "LSRP"  format version (u16 LE)  reserved (u16, zero)            8 bytes
//   record = payload size (u32 LE)  XXH3-64 of the payload (u64 LE)  payload  12 + size bytes
//
// A record's payload is one FlatBuffer of schema/replay.fbs; this layer neither knows nor cares.
// A crash mid-write loses only the record being written: the reader returns every complete
// record before it and reports where the file was cut. A damaged record is reported with its
// index and byte offset. Sizes are checked against the bytes left and a cap before they are
// used, so no file, however broken, makes the reader read out of bounds or allocate.
//
// Writing goes to "<final>.tmp"; finish() flushes, fsyncs, renames it to the final name and
// fsyncs the directory, so the final name only ever holds a complete file (POSIX).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/schema/limits.h"

namespace lockstep::replays {

inline constexpr uint8_t kRecordFileMagic[4] = {'L', 'S', 'R', 'P'};
/// The record layer's format version this build writes and reads (older ones are read too).
inline constexpr uint16_t kRecordFormatVersion = 1;
inline constexpr size_t kRecordFileHeaderBytes = 8;
inline constexpr size_t kRecordHeaderBytes = 12;

/// Every outcome of reading or writing a record file.
enum class RecordError : uint8_t {
  none = 0,
  end_of_file,        // reader: all records read, the file ends cleanly
  truncated,          // reader: the file ends inside its header or a record (crash mid-write)
  checksum_mismatch,  // reader: a record's payload does not match its checksum
  record_too_large,   // a record size over the cap (reader: corrupt size; writer: refused)
  bad_magic,          // reader: not a lockstep record file
  future_version,     // reader: written by a newer build
  bad_header,         // reader: format version 0 or nonzero reserved bytes
  io_error,           // writer: a system call failed (the message names it and errno)
  not_open,           // writer: append/finish without a successful open(), or after finish()
};

/// One-line English description of a record error kind (static storage).
const char* record_error_message(RecordError error);

/// Walks the records of a file held in memory. Nothing is copied: payloads point into `file`.
///
///   RecordReader reader(bytes);
///   std::span<const uint8_t> payload;
///   while (reader.next(&payload) == RecordError::none) use(payload);
///   if (reader.error() != RecordError::end_of_file) report(reader.message());
class RecordReader final {
 public:
  /// Checks the file header at once (see error()); records are then read with next().
  explicit RecordReader(std::span<const uint8_t> file,
                        uint32_t max_record_bytes = schema::kMaxReplayRecordBytes);

  /// The next record's payload in *payload and RecordError::none; otherwise end_of_file or the
  /// error that stopped the walk, which is sticky (every later call returns it again).
  RecordError next(std::span<const uint8_t>* payload);

  /// none while records remain, then end_of_file or the error that stopped the walk.
  RecordError error() const { return error_; }
  /// One line: what the reader found, with byte offsets and record counts.
  std::string message() const;

  /// Format version from the header (0 when the header is unreadable).
  uint16_t format_version() const { return format_version_; }
  /// Complete, verified records returned so far.
  uint64_t records_read() const { return records_read_; }
  /// Byte offset of the next record: after an error, where the bad record starts (the bytes
  /// before it are all good).
  uint64_t offset_bytes() const { return offset_bytes_; }
  uint64_t file_bytes() const { return file_.size(); }

 private:
  RecordError fail(RecordError error);

  std::span<const uint8_t> file_;
  uint32_t max_record_bytes_;
  uint16_t format_version_ = 0;
  RecordError error_ = RecordError::none;
  uint64_t offset_bytes_ = 0;
  uint64_t records_read_ = 0;
  uint64_t bad_record_bytes_ = 0;  // size declared by the record that stopped the walk
};

/// What a whole-file check found: the records that are good and how the file ends.
struct RecordFileCheck {
  RecordError error = RecordError::none;  // end_of_file for an intact file
  uint64_t complete_records = 0;
  uint64_t good_bytes = 0;  // the prefix of the file made of the header and complete records
  std::string message;      // one line
};

/// Reads every record of `file` (for `lockstep-replay info`, and tests).
RecordFileCheck check_record_file(std::span<const uint8_t> file,
                                  uint32_t max_record_bytes = schema::kMaxReplayRecordBytes);

/// Appends one record (size, checksum, payload) to *out: the bytes RecordWriter::append writes
/// for `payload`. For files encoded on one thread and written on another (append_framed).
/// false, with *out unchanged, for a payload over max_record_bytes.
bool frame_record(std::vector<uint8_t>* out, std::span<const uint8_t> payload,
                  uint32_t max_record_bytes = schema::kMaxReplayRecordBytes);

/// Appends records to "<final_path>.tmp" and publishes it under final_path on finish().
/// Not thread-safe; one writer per file. Errors are sticky: after one, every call returns it.
class RecordWriter final {
 public:
  RecordWriter() = default;
  /// Without a successful finish(), closes and removes the temporary file. (A process that
  /// dies instead leaves it, readable up to its last complete record.)
  ~RecordWriter();
  RecordWriter(RecordWriter&& other) noexcept;
  RecordWriter& operator=(RecordWriter&& other) noexcept;
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  /// Creates (or truncates) "<final_path>.tmp" and writes the file header; a file in progress
  /// is abandoned first. Records up to max_record_bytes are accepted (keep it ≤ the readers'
  /// cap); up to buffer_bytes of records are gathered per write(2).
  RecordError open(std::string_view final_path,
                   uint32_t max_record_bytes = schema::kMaxReplayRecordBytes,
                   size_t buffer_bytes = 64 * 1024);

  /// Appends one record. The bytes reach the OS on flush(), when the buffer fills, or finish().
  /// A payload over the cap is refused with record_too_large without ending the file.
  RecordError append(std::span<const uint8_t> payload);

  /// Appends whole records already framed by frame_record(), as they are (they are not checked
  /// again; records_written() does not count them). The bytes reach the OS as append()'s do.
  RecordError append_framed(std::span<const uint8_t> records);

  /// Hands buffered records to the OS: they survive a crash of this process (not a power cut).
  RecordError flush();
  /// flush() and fsync(): the records survive a power cut too.
  RecordError sync();

  /// flush, fsync, rename to the final name (replacing any file there), fsync the directory.
  /// The writer is closed after; on failure the temporary file is removed by abandon() or the
  /// destructor.
  RecordError finish();

  /// Closes the file and removes the temporary name (nothing is published).
  void abandon();

  bool is_open() const { return fd_ >= 0; }
  RecordError error() const { return error_; }
  /// One line describing the last error ("" when none).
  const std::string& error_text() const { return error_text_; }
  const std::string& final_path() const { return final_path_; }
  const std::string& temp_path() const { return temp_path_; }
  uint64_t records_written() const { return records_written_; }
  /// File bytes so far, header included (buffered bytes counted).
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  RecordError fail_io(const std::string& operation, const std::string& path, int errno_value);
  RecordError write_all(const uint8_t* bytes, size_t count);
  void close_fd();

  int fd_ = -1;
  std::string final_path_;
  std::string temp_path_;
  std::unique_ptr<uint8_t[]> buffer_;
  size_t buffer_capacity_ = 0;
  size_t buffer_used_ = 0;
  uint32_t max_record_bytes_ = 0;
  RecordError error_ = RecordError::none;
  std::string error_text_;
  uint64_t records_written_ = 0;
  uint64_t file_bytes_ = 0;
  bool temp_exists_ = false;  // the temporary file is ours to remove
};

}  // namespace lockstep::replays
