// UploadFile and SendFile on open(2), write(2) and pread(2).
#include "server/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace leasehold::server {
namespace {

// Tries before giving up on finding a free name: with 128 random bits a
// clash means a broken random source, not bad luck.
constexpr int kCreateAttemptsMax = 4;

}  // namespace

Result<std::unique_ptr<UploadFile>> UploadFile::create(const std::string& dir, Random& random) {
  for (int attempt = 0; attempt < kCreateAttemptsMax; ++attempt) {
    std::string path = dir + "/" + random_token(random) + ".upload";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) return std::unique_ptr<UploadFile>(new UploadFile(std::move(path), fd));
    if (errno != EEXIST) {
      return unavailable("cannot create an upload file in " + dir + ": " + std::strerror(errno));
    }
  }
  return internal_error("no free upload file name in " + dir);
}

UploadFile::~UploadFile() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());  // ENOENT when the handler took it: nothing to do
}

Status UploadFile::write(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      if (error == ENOSPC || error == EDQUOT || error == EFBIG) {
        return resource_exhausted("writing " + path_ + ": " + std::strerror(error));
      }
      return internal_error("writing " + path_ + ": " + std::strerror(error));
    }
    data.remove_prefix(static_cast<size_t>(n));
    bytes_written_ += static_cast<uint64_t>(n);
  }
  return Status::ok_status();
}

Status UploadFile::close() {
  const int fd = fd_;
  fd_ = -1;
  // close() reports a deferred write error (NFS, quota): the body is then
  // not all on disk.
  if (fd >= 0 && ::close(fd) != 0 && errno != EINTR) {
    return internal_error("closing " + path_ + ": " + std::strerror(errno));
  }
  return Status::ok_status();
}

Result<std::unique_ptr<SendFile>> SendFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) return not_found("no file " + path);
    return internal_error("cannot open " + path + ": " + std::strerror(error));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path + " is not a regular file");
  }
  return std::unique_ptr<SendFile>(new SendFile(fd, static_cast<uint64_t>(st.st_size)));
}

SendFile::~SendFile() { ::close(fd_); }

Result<size_t> SendFile::read_at(uint64_t offset, std::span<char> out) {
  for (;;) {
    const ssize_t n = ::pread(fd_, out.data(), out.size(), static_cast<off_t>(offset));
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR) {
      return internal_error(std::string("reading a file: ") + std::strerror(errno));
    }
  }
}

}  // namespace leasehold::server
