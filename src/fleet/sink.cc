// Sinks on a file descriptor: one write(2) per batch of lines, fdatasync to
// flush.
#include "fleet/sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstring>
#include <optional>

namespace leasehold::fleet {
namespace {

constexpr std::string_view kJsonlPrefix = "jsonl:";

class FdSink final : public Sink {
 public:
  FdSink(int fd, bool owned, std::string name) : fd_(fd), owned_(owned), name_(std::move(name)) {}
  ~FdSink() override {
    if (owned_) ::close(fd_);
  }

  Status write(BeforeWrite& before, size_t* written_bytes) override {
    *written_bytes = 0;
    // The lock keeps writes whole: a short write's rest follows it at once.
    MutexLock lock(mu_);
    LEASEHOLD_RETURN_IF_ERROR(repair());
    LEASEHOLD_ASSIGN_OR_RETURN(const std::string_view lines, before.lines());
    assert(lines.empty() || lines.back() == '\n');
    std::string_view rest = lines;
    while (!rest.empty()) {
      const ssize_t n = ::write(fd_, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const Status failed = unavailable("writing to " + name_ + ": " + std::strerror(errno));
        take_back_part_line(lines.substr(0, *written_bytes));
        return failed;
      }
      rest.remove_prefix(static_cast<size_t>(n));
      *written_bytes += static_cast<size_t>(n);
    }
    return {};
  }

  Status flush() override {
    // Pipes and terminals have nothing to sync (EINVAL); files must. No
    // lock: fdatasync covers every write that returned before it was called.
    if (::fdatasync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
      return unavailable("syncing " + name_ + ": " + std::strerror(errno));
    }
    return {};
  }

  std::string describe() const override { return name_; }

 private:
  // After a write that failed part way through a line (`written` is what
  // reached the file): cuts that part back off, so that the next line does
  // not run on from it. One that cannot be cut now is cut before the next
  // write (repair()).
  void take_back_part_line(std::string_view written) REQUIRES(mu_) {
    const size_t whole = written.empty() ? 0 : written.rfind('\n') + 1;  // npos + 1 == 0
    const size_t part = written.size() - whole;
    if (part == 0) return;
    // With O_APPEND, the offset is just past what this write put in.
    const off_t end = ::lseek(fd_, 0, SEEK_CUR);
    if (end < 0) {  // a pipe or a terminal: what went out cannot come back
      broken_ = name_ + " holds part of a line that a failed write left, and cannot take it back";
      return;
    }
    cut_at_ = end - static_cast<off_t>(part);
    (void)repair();
  }

  // Cuts the file back to cut_at_ if a failed write left part of a line.
  Status repair() REQUIRES(mu_) {
    if (!broken_.empty()) return unavailable(broken_);
    if (!cut_at_) return {};
    if (::ftruncate(fd_, *cut_at_) != 0) {
      return unavailable("cutting back part of a line in " + name_ + ": " + std::strerror(errno));
    }
    cut_at_.reset();
    return {};
  }

  const int fd_;
  const bool owned_;
  const std::string name_;
  Mutex mu_;  // held for a whole write
  std::optional<off_t> cut_at_ GUARDED_BY(mu_);
  std::string broken_ GUARDED_BY(mu_);
};

// BeforeWrite of lines known in advance.
class Fixed final : public BeforeWrite {
 public:
  explicit Fixed(std::string_view lines) : lines_(lines) {}
  Result<std::string_view> lines() override { return lines_; }

 private:
  std::string_view lines_;
};

}  // namespace

Status Sink::write_lines(std::string_view lines, size_t* written_bytes) {
  Fixed fixed(lines);
  return write(fixed, written_bytes);
}

Status validate_sink_spec(std::string_view spec) {
  if (spec == "stdout") return {};
  if (spec.starts_with(kJsonlPrefix) && spec.size() > kJsonlPrefix.size()) return {};
  return invalid_argument("sink must be jsonl:PATH or stdout, not '" + std::string(spec) + "'");
}

Result<std::unique_ptr<Sink>> open_sink(std::string_view spec) {
  LEASEHOLD_RETURN_IF_ERROR(validate_sink_spec(spec));
  if (spec == "stdout") return std::unique_ptr<Sink>(new FdSink(STDOUT_FILENO, false, "stdout"));
  const std::string path(spec.substr(kJsonlPrefix.size()));
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("cannot open sink " + path + ": " + std::strerror(errno));
  return std::unique_ptr<Sink>(new FdSink(fd, true, std::string(spec)));
}

}  // namespace leasehold::fleet
