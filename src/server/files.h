// The files the transport streams: UploadFile, a new file that receives an
// upload route's request body, and SendFile, an open file that a response
// sends. Plain POSIX I/O, so that no Beast type reaches a header.
//
// Neither is synchronised: one session uses each at a time (an UploadFile is
// only destroyed from another thread, the blocking pool, once the session
// no longer writes to it).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "leasehold/random.h"
#include "leasehold/status.h"

namespace leasehold::server {

// An upload's body file, named "<32 hex digits>.upload" with 128 bits from
// a CSPRNG, so that no one can guess the name of a file still being written.
class UploadFile {
 public:
  // Creates a new, empty file in `dir` with O_EXCL (it is never an existing
  // file, nor one a symlink points to) and mode 0600. kUnavailable if the
  // directory is missing or not writable.
  static Result<std::unique_ptr<UploadFile>> create(const std::string& dir, Random& random);
  // Closes the file if open and removes path() if something is still there:
  // a handler that took the file renamed it away first.
  ~UploadFile();
  UploadFile(const UploadFile&) = delete;
  UploadFile& operator=(const UploadFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t bytes_written() const { return bytes_written_; }
  // Appends all of `data`. kResourceExhausted for a full disk or quota,
  // kInternal for any other failure.
  Status write(std::string_view data);
  // Ends the writing; the file stays until the destructor.
  Status close();

 private:
  UploadFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  const std::string path_;
  int fd_;
  uint64_t bytes_written_ = 0;
};

// A regular file opened for a response, with its size when it was opened.
// Once open it stays readable even if it is removed or renamed meanwhile.
class SendFile {
 public:
  // kNotFound if there is no file at `path` (it vanished since the handler
  // named it), kInvalidArgument if it is not a regular file, kInternal for
  // another failure (permissions).
  static Result<std::unique_ptr<SendFile>> open(const std::string& path);
  ~SendFile();
  SendFile(const SendFile&) = delete;
  SendFile& operator=(const SendFile&) = delete;

  uint64_t size() const { return size_; }
  // Fills `out` from `offset` on, or less at the end of the file; 0 past it.
  // kInternal if the read fails.
  Result<size_t> read_at(uint64_t offset, std::span<char> out);

 private:
  SendFile(int fd, uint64_t size) : fd_(fd), size_(size) {}

  int fd_;
  uint64_t size_;
};

}  // namespace leasehold::server
