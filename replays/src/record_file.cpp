// Record files: the reader bounds-checks every size before it uses it; the writer publishes a
// file under its final name only once every byte of it is on disk.
#include "lockstep/replays/record_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include <fcntl.h>
#ifdef _WIN32
#include <io.h>
#ifndef NOMINMAX
#define NOMINMAX
#endif
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#define O_CLOEXEC 0  // handles are not inherited by the processes the tools never start
#else
#include <unistd.h>
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace lockstep::replays {
namespace {

// The file calls the writer makes. Windows (mingw-w64): the C runtime's, in binary mode; the
// rename replaces an existing file (std::rename does not there) and reaches the disk before it
// returns, and there is no directory to fsync (NTFS journals the rename itself).
namespace file_io {
#ifdef _WIN32
using ssize_t = long long;
int open(const char* path, int flags, int mode) {
  return ::_open(path, flags | _O_BINARY, mode);
}
int fsync(int fd) {
  return ::_commit(fd);
}
ssize_t write(int fd, const void* bytes, size_t count) {
  return ::_write(fd, bytes, static_cast<unsigned>(count < (1u << 30) ? count : (1u << 30)));
}
int close(int fd) {
  return ::_close(fd);
}
int unlink(const char* path) {
  return ::_unlink(path);
}
int rename(const char* from, const char* to) {
  if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return 0;
  errno = EACCES;
  return -1;
}
#else
using ::close, ::fsync, ::open, ::rename, ::unlink, ::write;
using ssize_t = ::ssize_t;
#endif
}  // namespace file_io

uint16_t load_u16_le(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

uint32_t load_u32_le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint64_t load_u64_le(const uint8_t* p) {
  return static_cast<uint64_t>(load_u32_le(p)) | static_cast<uint64_t>(load_u32_le(p + 4)) << 32;
}

void store_le(uint8_t* p, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    p[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t payload_checksum(std::span<const uint8_t> payload) {
  return XXH3_64bits(payload.data(), payload.size());
}

std::string hex_bytes(std::span<const uint8_t> bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t b : bytes) {
    if (!text.empty()) text += ' ';
    text += kDigits[b >> 4];
    text += kDigits[b & 15];
  }
  return text;
}

// The directory holding `path`, for the fsync that makes a rename durable (not on Windows).
[[maybe_unused]] std::string parent_directory(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

const char* record_error_message(RecordError error) {
  switch (error) {
    case RecordError::none:
      return "no error";
    case RecordError::end_of_file:
      return "end of file";
    case RecordError::truncated:
      return "file is truncated (cut short mid-record)";
    case RecordError::checksum_mismatch:
      return "record checksum mismatch (corrupt record)";
    case RecordError::record_too_large:
      return "record size over the cap";
    case RecordError::bad_magic:
      return "not a lockstep record file (bad magic)";
    case RecordError::future_version:
      return "record format version is newer than this build";
    case RecordError::bad_header:
      return "bad record file header";
    case RecordError::io_error:
      return "I/O error";
    case RecordError::not_open:
      return "record writer is not open";
  }
  return "unknown record error";
}

// ---- reader ------------------------------------------------------------------------------------

RecordReader::RecordReader(std::span<const uint8_t> file, uint32_t max_record_bytes)
    : file_(file), max_record_bytes_(max_record_bytes) {
  const size_t magic_bytes = std::min(file.size(), sizeof(kRecordFileMagic));
  if (magic_bytes > 0 && std::memcmp(file.data(), kRecordFileMagic, magic_bytes) != 0) {
    error_ = RecordError::bad_magic;
    return;
  }
  if (file.size() < kRecordFileHeaderBytes) {
    error_ = RecordError::truncated;  // a prefix of a header: cut right after creation
    return;
  }
  format_version_ = load_u16_le(file.data() + 4);
  const uint16_t reserved = load_u16_le(file.data() + 6);
  if (format_version_ > kRecordFormatVersion) {
    error_ = RecordError::future_version;
  } else if (format_version_ == 0 || reserved != 0) {
    error_ = RecordError::bad_header;
  } else {
    offset_bytes_ = kRecordFileHeaderBytes;
  }
}

RecordError RecordReader::fail(RecordError error) {
  error_ = error;
  return error_;
}

RecordError RecordReader::next(std::span<const uint8_t>* payload) {
  *payload = {};
  if (error_ != RecordError::none) return error_;
  const uint64_t remaining = file_.size() - offset_bytes_;
  if (remaining == 0) return fail(RecordError::end_of_file);
  if (remaining < kRecordHeaderBytes) return fail(RecordError::truncated);

  const uint8_t* record = file_.data() + offset_bytes_;
  const uint32_t size = load_u32_le(record);
  const uint64_t checksum = load_u64_le(record + 4);
  bad_record_bytes_ = size;
  // Size checks come before the size is used for anything.
  if (size > max_record_bytes_) return fail(RecordError::record_too_large);
  if (size > remaining - kRecordHeaderBytes) return fail(RecordError::truncated);

  const std::span<const uint8_t> bytes(record + kRecordHeaderBytes, size);
  if (payload_checksum(bytes) != checksum) return fail(RecordError::checksum_mismatch);
  *payload = bytes;
  offset_bytes_ += kRecordHeaderBytes + size;
  ++records_read_;
  return RecordError::none;
}

std::string RecordReader::message() const {
  const std::string records = std::to_string(records_read_) + " complete records";
  const std::string record_at = "record #" + std::to_string(records_read_) + " at byte offset " +
                                std::to_string(offset_bytes_);
  const uint64_t remaining = file_.size() - offset_bytes_;
  switch (error_) {
    case RecordError::none:
      return std::to_string(records_read_) + " records read so far, next at byte offset " +
             std::to_string(offset_bytes_);
    case RecordError::end_of_file:
      return "ok: " + records + ", " + std::to_string(file_.size()) + " bytes, format version " +
             std::to_string(format_version_);
    case RecordError::truncated:
      if (offset_bytes_ == 0) {
        return "truncated at byte " + std::to_string(file_.size()) + ", 0 complete records (the " +
               std::to_string(kRecordFileHeaderBytes) + "-byte file header is incomplete)";
      }
      if (remaining < kRecordHeaderBytes) {
        return "truncated at byte " + std::to_string(file_.size()) + ", " + records + " (" +
               record_at + " has " + std::to_string(remaining) + " of its " +
               std::to_string(kRecordHeaderBytes) + " header bytes)";
      }
      return "truncated at byte " + std::to_string(file_.size()) + ", " + records + " (" +
             record_at + " has " + std::to_string(remaining) + " of its " +
             std::to_string(kRecordHeaderBytes + bad_record_bytes_) + " bytes)";
    case RecordError::checksum_mismatch:
      return "checksum mismatch in record #" + std::to_string(records_read_) + " at byte offset " +
             std::to_string(offset_bytes_) + " (" + std::to_string(bad_record_bytes_) +
             "-byte payload); " + std::to_string(records_read_) + " good records before it";
    case RecordError::record_too_large:
      return record_at + " declares a " + std::to_string(bad_record_bytes_) +
             "-byte payload, over the cap of " + std::to_string(max_record_bytes_) +
             " (corrupt size field); " + std::to_string(records_read_) + " good records before it";
    case RecordError::bad_magic:
      return "not a lockstep record file: starts with [" +
             hex_bytes(file_.first(std::min<size_t>(file_.size(), 4))) +
             "], expected \"LSRP\" [4c 53 52 50]";
    case RecordError::future_version:
      return "record format version " + std::to_string(format_version_) +
             " is newer than this build reads (up to " + std::to_string(kRecordFormatVersion) + ")";
    case RecordError::bad_header:
      if (format_version_ == 0) return "bad record file header: format version 0";
      return "bad record file header: reserved bytes are not zero";
    case RecordError::io_error:
    case RecordError::not_open:
      break;
  }
  return record_error_message(error_);
}

RecordFileCheck check_record_file(std::span<const uint8_t> file, uint32_t max_record_bytes) {
  RecordReader reader(file, max_record_bytes);
  std::span<const uint8_t> payload;
  while (reader.next(&payload) == RecordError::none) {
  }
  RecordFileCheck check;
  check.error = reader.error();
  check.complete_records = reader.records_read();
  check.good_bytes = reader.offset_bytes();
  check.message = reader.message();
  return check;
}

// ---- writer ------------------------------------------------------------------------------------

bool frame_record(std::vector<uint8_t>* out, std::span<const uint8_t> payload,
                  uint32_t max_record_bytes) {
  if (payload.size() > max_record_bytes) return false;
  const size_t at = out->size();
  out->resize(at + kRecordHeaderBytes + payload.size());
  uint8_t* record = out->data() + at;
  store_le(record, payload.size(), 4);
  store_le(record + 4, payload_checksum(payload), 8);
  if (!payload.empty()) std::memcpy(record + kRecordHeaderBytes, payload.data(), payload.size());
  return true;
}

RecordWriter::~RecordWriter() {
  abandon();
}

RecordWriter::RecordWriter(RecordWriter&& other) noexcept {
  *this = std::move(other);
}

RecordWriter& RecordWriter::operator=(RecordWriter&& other) noexcept {
  if (this == &other) return *this;
  abandon();
  fd_ = std::exchange(other.fd_, -1);
  final_path_ = std::move(other.final_path_);
  temp_path_ = std::move(other.temp_path_);
  buffer_ = std::move(other.buffer_);
  buffer_capacity_ = std::exchange(other.buffer_capacity_, 0);
  buffer_used_ = std::exchange(other.buffer_used_, 0);
  max_record_bytes_ = other.max_record_bytes_;
  error_ = std::exchange(other.error_, RecordError::none);
  error_text_ = std::move(other.error_text_);
  records_written_ = std::exchange(other.records_written_, 0);
  file_bytes_ = std::exchange(other.file_bytes_, 0);
  temp_exists_ = std::exchange(other.temp_exists_, false);
  return *this;
}

RecordError RecordWriter::open(std::string_view final_path, uint32_t max_record_bytes,
                               size_t buffer_bytes) {
  abandon();
  final_path_ = std::string(final_path);
  temp_path_ = final_path_ + ".tmp";
  max_record_bytes_ = max_record_bytes;
  buffer_capacity_ = std::max(buffer_bytes, kRecordFileHeaderBytes + kRecordHeaderBytes);
  buffer_.reset(
      new uint8_t[buffer_capacity_]);  // default-initialised, as make_unique_for_overwrite
  buffer_used_ = 0;
  error_ = RecordError::none;
  error_text_.clear();
  records_written_ = 0;
  file_bytes_ = 0;

  fd_ = file_io::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return fail_io("open", temp_path_, errno);
  temp_exists_ = true;

  uint8_t* header = buffer_.get();
  std::memcpy(header, kRecordFileMagic, sizeof(kRecordFileMagic));
  store_le(header + 4, kRecordFormatVersion, 2);
  store_le(header + 6, 0, 2);  // reserved
  buffer_used_ = kRecordFileHeaderBytes;
  file_bytes_ = kRecordFileHeaderBytes;
  return RecordError::none;
}

RecordError RecordWriter::append(std::span<const uint8_t> payload) {
  if (error_ != RecordError::none) return error_;
  if (fd_ < 0) return RecordError::not_open;
  // Refused, not sticky: the file is still consistent and later records may be fine.
  if (payload.size() > max_record_bytes_) return RecordError::record_too_large;

  uint8_t header[kRecordHeaderBytes];
  store_le(header, payload.size(), 4);
  store_le(header + 4, payload_checksum(payload), 8);
  const size_t record_bytes = kRecordHeaderBytes + payload.size();
  if (buffer_used_ + record_bytes > buffer_capacity_) {
    if (const RecordError e = flush(); e != RecordError::none) return e;
  }
  if (record_bytes <= buffer_capacity_) {
    std::memcpy(buffer_.get() + buffer_used_, header, kRecordHeaderBytes);
    if (!payload.empty()) {
      std::memcpy(buffer_.get() + buffer_used_ + kRecordHeaderBytes, payload.data(),
                  payload.size());
    }
    buffer_used_ += record_bytes;
  } else {
    // Larger than the buffer (a keyframe): straight to the OS, the buffer being empty now.
    if (const RecordError e = write_all(header, kRecordHeaderBytes); e != RecordError::none) {
      return e;
    }
    if (const RecordError e = write_all(payload.data(), payload.size()); e != RecordError::none) {
      return e;
    }
  }
  ++records_written_;
  file_bytes_ += record_bytes;
  return RecordError::none;
}

RecordError RecordWriter::append_framed(std::span<const uint8_t> records) {
  if (error_ != RecordError::none) return error_;
  if (fd_ < 0) return RecordError::not_open;
  if (buffer_used_ + records.size() > buffer_capacity_) {
    if (const RecordError e = flush(); e != RecordError::none) return e;
  }
  if (records.size() <= buffer_capacity_) {
    if (!records.empty()) std::memcpy(buffer_.get() + buffer_used_, records.data(), records.size());
    buffer_used_ += records.size();
  } else if (const RecordError e = write_all(records.data(), records.size());
             e != RecordError::none) {
    return e;
  }
  file_bytes_ += records.size();
  return RecordError::none;
}

RecordError RecordWriter::flush() {
  if (error_ != RecordError::none) return error_;
  if (fd_ < 0) return RecordError::not_open;
  if (const RecordError e = write_all(buffer_.get(), buffer_used_); e != RecordError::none) {
    return e;
  }
  buffer_used_ = 0;
  return RecordError::none;
}

RecordError RecordWriter::sync() {
  if (const RecordError e = flush(); e != RecordError::none) return e;
  while (file_io::fsync(fd_) != 0) {
    if (errno != EINTR) return fail_io("fsync", temp_path_, errno);
  }
  return RecordError::none;
}

RecordError RecordWriter::finish() {
  if (const RecordError e = sync(); e != RecordError::none) return e;
  const int fd = std::exchange(fd_, -1);
  // close() can report a deferred write error (NFS); the data is not safe if it does.
  if (file_io::close(fd) != 0) return fail_io("close", temp_path_, errno);
  if (file_io::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    return fail_io("rename", temp_path_ + " to " + final_path_, errno);
  }
  temp_exists_ = false;
#ifndef _WIN32
  // The rename itself is durable only once the directory entry is on disk.
  const std::string directory = parent_directory(final_path_);
  const int dir_fd = file_io::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return fail_io("open directory", directory, errno);
  int sync_result;
  while ((sync_result = file_io::fsync(dir_fd)) != 0 && errno == EINTR) {
  }
  const int sync_errno = errno;
  file_io::close(dir_fd);
  if (sync_result != 0) return fail_io("fsync directory", directory, sync_errno);
#endif
  return RecordError::none;
}

void RecordWriter::abandon() {
  close_fd();
  if (temp_exists_) {
    file_io::unlink(temp_path_.c_str());
    temp_exists_ = false;
  }
  buffer_used_ = 0;
}

RecordError RecordWriter::fail_io(const std::string& operation, const std::string& path,
                                  int errno_value) {
  error_ = RecordError::io_error;
  error_text_ = operation + " " + path + ": " + std::system_category().message(errno_value) +
                " (errno " + std::to_string(errno_value) + ")";
  return error_;
}

RecordError RecordWriter::write_all(const uint8_t* bytes, size_t count) {
  while (count > 0) {
    const file_io::ssize_t written = file_io::write(fd_, bytes, count);
    if (written < 0) {
      if (errno == EINTR) continue;
      return fail_io("write", temp_path_, errno);
    }
    bytes += written;
    count -= static_cast<size_t>(written);
  }
  return RecordError::none;
}

void RecordWriter::close_fd() {
  if (fd_ >= 0) file_io::close(std::exchange(fd_, -1));
}

}  // namespace lockstep::replays
