// Helpers for the multi-process tests: start real processes (the leasehold
// binary above all), wait for them with deadlines, and read what they wrote.
//
// Each started process writes its stdout and stderr to files in the test's
// own temporary directory, so a grandchild that keeps a descriptor open can
// never make a test wait for end-of-file. Waiting uses a pidfd and poll(),
// and every wait has a deadline. Not thread-safe; one test, one thread.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "testing/eventually.h"
#include "testing/temp_dir.h"

namespace leasehold::process_test {

using leasehold::testing::eventually;
using leasehold::testing::TempDir;
using std::chrono::milliseconds;

// How long a test waits for a process it started to show that it did what
// was expected of it (took a lease, noticed a loss, exited).
inline constexpr milliseconds kEventTimeout{15'000};

// The path of the binary under test (a compile definition).
std::string leasehold_bin();

struct RunResult {
  int exit_code = -1;  // the exit code, or 128+N if signal N killed it
  std::string out;
  std::string err;
};

// A started process. Destroying it kills the process if it is still running.
class Process {
 public:
  // Starts argv[0] (looked up in $PATH) with stdin from /dev/null and stdout
  // and stderr to files under `dir`. Fails the test (and aborts the start)
  // if it cannot.
  Process(const std::vector<std::string>& argv, const std::filesystem::path& dir);
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  // Waits up to `timeout` for the process to exit; true if it did.
  bool wait_for(milliseconds timeout);
  bool exited() const { return exit_code_.has_value(); }
  // REQUIRES: exited().
  RunResult result() const;
  // What it has written to stderr (stdout) so far.
  std::string err_so_far() const;
  std::string out_so_far() const;

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> exit_code_;
  std::filesystem::path out_path_, err_path_;
};

std::string read_file(const std::filesystem::path& path);

// The JSON object on one line; fails the test if it is not one.
boost::json::object parse_object(const std::string& line);
// Every non-empty line of `text`.
std::vector<std::string> lines_of(const std::string& text);
// The last `n` lines of `text` (all of it if it has fewer).
std::string tail_of(const std::string& text, size_t n);
// The string `field` of `o` (which must hold one).
std::string str(const boost::json::object& o, const char* field);
// The wall clock, in ms since the Unix epoch: the time in the leases that
// the binary writes.
int64_t wall_now_ms();

// What `leasehold serve` answered a request: its status (0 if curl could
// not make the request) and body.
struct Http {
  int status = 0;
  std::string body;
  boost::json::value json() const { return boost::json::parse(body); }
};

// A test with its own directory and SQLite file, and shorthands for running
// `leasehold --store sqlite:DIR/leases.db ...`.
class ProcessTest : public ::testing::Test {
 protected:
  static constexpr milliseconds kRunTimeout{30'000};

  const std::filesystem::path& dir() const { return tmp_.path(); }
  std::filesystem::path db_path() const { return dir() / "leases.db"; }
  // The store every `lh()` call uses; a fixture may point it elsewhere.
  virtual std::string store_uri() const { return "sqlite:" + db_path().string(); }

  // The argv of `leasehold --store URI args...`.
  std::vector<std::string> cli(const std::vector<std::string>& args) const;
  // Runs the binary to completion (fails the test if it takes longer than
  // kRunTimeout).
  RunResult lh(const std::vector<std::string>& args) const;
  // Runs any command to completion under the same deadline.
  RunResult run(const std::vector<std::string>& argv) const;
  // `METHOD base + path` with curl, as the bearer of `token`, with a JSON
  // body if `body` is not empty.
  Http call_api(const std::string& base, const std::string& token, const std::string& method,
                const std::string& path, const std::string& body = "") const;
  std::unique_ptr<Process> start_lh(const std::vector<std::string>& args) const;

  // `lease acquire KEY --owner OWNER --ttl TTL`, which must succeed; its JSON.
  boost::json::object acquire(const std::string& key, const std::string& owner,
                              const std::string& ttl = "20s") const;
  // `lease show KEY` as JSON, or nullopt if it did not exit 0.
  std::optional<boost::json::object> show(const std::string& key) const;

 private:
  TempDir tmp_{"leasehold-process-"};
};

// The stores the CLI tests run against: an SQLite file in the test's
// directory, or DynamoDB (one dynalite per test binary, started on first use,
// a fresh table prefix per test, `store init` already run).
// kDynamoDbLocal: the same on AWS's own DynamoDB Local, which also has
// DynamoDB Streams (the fleet's change feed).
// kSqliteAws: SQLite, with the movie jobs on SQS and the movies on S3
// (fauxqs), for the tests of the movie service.
enum class Backend { kSqlite, kDynamoDb, kDynamoDbLocal, kSqliteAws };

std::string backend_name(const ::testing::TestParamInfo<Backend>& info);

class BackendTest : public ProcessTest, public ::testing::WithParamInterface<Backend> {
 protected:
  void SetUp() override;
  std::string store_uri() const override;

 private:
  std::string dynamodb_uri_;
};

}  // namespace leasehold::process_test
