// Sinks on a file descriptor: one write(2) per batch of lines, fdatasync to
// flush.
#include "fleet/sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstring>

namespace leasehold::fleet {
namespace {

constexpr std::string_view kJsonlPrefix = "jsonl:";

class FdSink final : public Sink {
 public:
  FdSink(int fd, bool owned, std::string name) : fd_(fd), owned_(owned), name_(std::move(name)) {}
  ~FdSink() override {
    if (owned_) ::close(fd_);
  }

  Status write(std::string_view lines, size_t* written_bytes) override {
    assert(lines.empty() || lines.back() == '\n');
    *written_bytes = 0;
    // The lock keeps writes whole: a short write's rest follows it at once.
    MutexLock lock(mu_);
    std::string_view rest = lines;
    while (!rest.empty()) {
      const ssize_t n = ::write(fd_, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return unavailable("writing to " + name_ + ": " + std::strerror(errno));
      rest.remove_prefix(static_cast<size_t>(n));
      *written_bytes += static_cast<size_t>(n);
    }
    return {};
  }

  Status flush() override {
    MutexLock lock(mu_);
    // Pipes and terminals have nothing to sync (EINVAL); files must.
    if (::fdatasync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
      return unavailable("syncing " + name_ + ": " + std::strerror(errno));
    }
    return {};
  }

  std::string describe() const override { return name_; }

 private:
  const int fd_;
  const bool owned_;
  const std::string name_;
  Mutex mu_;  // held for a whole write, and for a flush
};

}  // namespace

Status validate_sink_spec(std::string_view spec) {
  if (spec == "stdout") return {};
  if (spec.starts_with(kJsonlPrefix) && spec.size() > kJsonlPrefix.size()) return {};
  return invalid_argument("sink must be jsonl:PATH or stdout, not '" + std::string(spec) + "'");
}

Result<std::unique_ptr<Sink>> open_sink(std::string_view spec) {
  RETURN_IF_ERROR(validate_sink_spec(spec));
  if (spec == "stdout") return std::unique_ptr<Sink>(new FdSink(STDOUT_FILENO, false, "stdout"));
  const std::string path(spec.substr(kJsonlPrefix.size()));
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("cannot open sink " + path + ": " + std::strerror(errno));
  return std::unique_ptr<Sink>(new FdSink(fd, true, std::string(spec)));
}

}  // namespace leasehold::fleet
