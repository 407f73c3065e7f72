// TempDir: a new, empty directory under the system's temporary directory,
// made with mkdtemp (so its name is unique however many tests run at once),
// and removed with everything in it when the TempDir is destroyed.
// Not thread-safe; one owner.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace leasehold::testing {

class TempDir {
 public:
  // Makes the directory, named `prefix` and six random characters. Throws
  // std::filesystem::filesystem_error if it cannot (a test then fails).
  explicit TempDir(std::string_view prefix = "leasehold-test-");
  // Removes the directory and what is in it (its own permissions restored
  // first, should a test have taken them away); errors are ignored.
  ~TempDir();

  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // path() as a string, for the APIs that take one.
  std::string string() const { return path_.string(); }
  // The path of `name` in the directory, as a string.
  std::string file(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace leasehold::testing
