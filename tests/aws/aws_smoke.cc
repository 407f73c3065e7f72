// aws_smoke: checks in one command that a deployment can do on AWS what
// leasehold does there, end to end, through the library's own code paths,
// and leaves nothing behind (docs/server.md#checking-a-deployment-on-aws):
//
//   DynamoDB  the tables of `store init` under a fresh prefix; a lease
//             acquired, renewed, a write fenced by its token (and one with
//             another token refused), released; the tables deleted.
//   SQS       the job queues of `store init --queue`; a message sent,
//             received, its visibility extended, removed; the queues deleted.
//   S3        in the bucket LEASEHOLD_AWS_SMOKE_BUCKET names (BUCKET or
//             BUCKET/PREFIX; never created here), an object put, read back
//             whole, by a range and through a presigned GET, and removed.
//
// Off unless LEASEHOLD_AWS_SMOKE=1: it exits 77, which ctest reports as
// skipped. Then it needs a region (aws::resolve_region) and credentials
// (aws::default_credentials), as the services find them. Every name it makes
// starts with "lhsmoke" and ten random hex digits, so that runs never meet.
// Each service's cleanup runs whichever of its steps failed; a failed step
// stops that service's later steps, not the other services'.
//
// It prints each step as it ends, with its time, and a failed step's error,
// whose message carries AWS's request ID where AWS answered; it prints no
// credential and no presigned URL. Exit 0 if every step passed, 1 otherwise.
// The steps run one after another on the main thread.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aws/credentials.h"
#include "aws/json_client.h"
#include "aws/s3.h"
#include "cli/lease_table.h"
#include "cli/store_commands.h"
#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/queue.h"
#include "leasehold/random.h"
#include "movies/movies.h"
#include "movies/probe_worker.h"
#include "movies/service.h"
#include "net/http_client.h"
#include "runtime/runtime.h"
#include "sqs/sqs_queue.h"

namespace leasehold::aws_smoke {
namespace {

using namespace std::chrono_literals;

constexpr int kExitPassed = 0;
constexpr int kExitFailed = 1;
constexpr int kExitSkipped = 77;  // ctest's SKIP_RETURN_CODE
// How long cleanup waits for a table that is still being created or updated
// (DynamoDB refuses to delete it until then), and how often it asks.
constexpr Duration kTableBusyWait = 5min;
constexpr Duration kTableBusyPause = 5s;

struct Setup {
  std::string region;
  std::string name;  // "lhsmoke" + 10 hex digits: the table prefix, queue and key names
  std::shared_ptr<aws::CredentialsSource> credentials;
  // Where DynamoDB and SQS are, as the environment configures them
  // (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS): "" for AWS's own. The
  // store and the queue read the variables themselves, as in production;
  // these are for the cleanup's own clients and for the report.
  std::string dynamodb_endpoint, sqs_endpoint;
  // LEASEHOLD_AWS_SMOKE_BUCKET read as an s3:// URI is, its endpoint from
  // AWS_ENDPOINT_URL_S3; nullopt skips S3.
  std::optional<aws::S3Location> s3;
};

// Prints each step as it ends: service, outcome, seconds, what it did, and
// for a failed step the error. Never handed a secret: the libraries'
// Statuses carry none, and the steps' details are counts and names.
class Report {
 public:
  explicit Report(Clock& clock) : clock_(clock), started_(clock.mono_now()) {}

  // Runs `step`, whose value (possibly empty) is added to `what`, and prints
  // its line. Returns whether it succeeded.
  bool step(std::string_view service, std::string_view what,
            const std::function<Result<std::string>()>& step) {
    const MonoTime start = clock_.mono_now();
    const Result<std::string> done = step();
    const double seconds = std::chrono::duration<double>(clock_.mono_now() - start).count();
    ++steps_;
    std::string line(what);
    if (done.ok() && !done->empty()) line += ": " + *done;
    std::printf("%-8s  %-6s %7.3f s  %s\n", std::string(service).c_str(),
                done.ok() ? "ok" : "FAILED", seconds, line.c_str());
    if (!done.ok()) {
      ++failed_;
      std::printf("%-8s  %s\n", "", done.status().to_string().c_str());
    }
    std::fflush(stdout);
    return done.ok();
  }

  void note(std::string_view service, std::string_view text) {
    std::printf("%-8s  %s\n", std::string(service).c_str(), std::string(text).c_str());
    std::fflush(stdout);
  }

  int finish() const {
    const double seconds = std::chrono::duration<double>(clock_.mono_now() - started_).count();
    if (failed_ == 0) {
      std::printf("aws smoke test passed: %d steps in %.1f s\n", steps_, seconds);
      return kExitPassed;
    }
    std::printf("aws smoke test FAILED: %d of %d steps in %.1f s\n", failed_, steps_, seconds);
    return kExitFailed;
  }

 private:
  Clock& clock_;
  const MonoTime started_;
  int steps_ = 0;
  int failed_ = 0;
};

// Runs a function when it goes out of scope: a service's cleanup, whichever
// of its steps returned early.
class Finally {
 public:
  explicit Finally(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~Finally() { fn_(); }
  Finally(const Finally&) = delete;
  Finally& operator=(const Finally&) = delete;

 private:
  std::function<void()> fn_;
};

Status expect(bool holds, const std::string& what) {
  return holds ? Status::ok_status() : internal_error(what);
}

Result<std::unique_ptr<aws::JsonClient>> json_client(const Setup& s, std::string service,
                                                     std::string target_prefix,
                                                     std::string endpoint,
                                                     std::span<const aws::JsonErrorRule> errors) {
  return aws::JsonClient::open({.service = std::move(service),
                                .target_prefix = std::move(target_prefix),
                                .region = s.region,
                                .endpoint = std::move(endpoint),
                                .credentials = s.credentials,
                                .errors = errors});
}

// ---------------------------------------------------------------- DynamoDB

constexpr aws::JsonErrorRule kDynamoDbErrors[] = {
    {"ResourceNotFoundException", Code::kNotFound},
    {"ResourceInUseException", Code::kFailedPrecondition},
};

// What cleanup could not delete: `first`, the first error, naming them all.
Status left_behind(const Status& first, const std::vector<std::string>& left) {
  std::string names;
  for (const std::string& name : left) names += (names.empty() ? "" : ", ") + name;
  return first.with_context("left behind, delete by hand: " + names);
}

// The store has no call that deletes a table (nothing in leasehold does),
// so cleanup sends DeleteTable itself. A table still being created is
// waited for; one that is missing was never made.
Result<std::string> delete_tables(const Setup& s, const std::vector<TableSpec>& tables,
                                  Clock& clock) {
  LEASEHOLD_ASSIGN_OR_RETURN(
      std::unique_ptr<aws::JsonClient> client,
      json_client(s, "dynamodb", "DynamoDB_20120810.", s.dynamodb_endpoint, kDynamoDbErrors));
  int deleted = 0;
  Status first;
  std::vector<std::string> left;
  const MonoTime give_up = clock.mono_now() + kTableBusyWait;
  for (const TableSpec& spec : tables) {
    const std::string name = s.name + "_" + spec.name;
    Status sent = client->call("DeleteTable", {{"TableName", name}}, true).status();
    while (sent.code() == Code::kFailedPrecondition && clock.mono_now() < give_up) {
      sleep_for(clock, kTableBusyPause);
      sent = client->call("DeleteTable", {{"TableName", name}}, true).status();
    }
    if (sent.ok()) ++deleted;
    if (sent.ok() || sent.code() == Code::kNotFound) continue;
    if (first.ok()) first = sent;
    left.push_back(name);
  }
  if (!left.empty()) return left_behind(first, left);
  return std::to_string(deleted) + " of " + std::to_string(tables.size()) + " deleted";
}

// A write under the lease's token applies; the same write under another
// token (a holder whose lease was taken over) does not.
Result<std::string> fenced_writes(LeaseManager& leases, const Lease& lease, Random& random) {
  const Update update = Update().set("smoke_written_epoch", lease.epoch);
  LEASEHOLD_ASSIGN_OR_RETURN(const Item written, leases.fenced_write(lease, update));
  const auto it = written.find("smoke_written_epoch");
  LEASEHOLD_RETURN_IF_ERROR(expect(it != written.end() && it->second == Value(lease.epoch),
                                   "the fenced write's item lacks what it wrote"));
  const LeaseRef stale{lease.key, lease.slot, lease.owner, random_token(random)};
  const Status refused = leases.fenced_write(stale, update).status();
  LEASEHOLD_RETURN_IF_ERROR(
      expect(refused.code() == Code::kFailedPrecondition,
             "a write under another token was not refused: " + refused.to_string()));
  return std::string("applied under its token, refused under another");
}

void check_dynamodb(const Setup& s, Report& report, Clock& clock, Random& random) {
  const std::vector<TableSpec> tables = cli::store_tables();
  const Finally cleanup([&] {
    report.step("dynamodb", "tables deleted", [&] { return delete_tables(s, tables, clock); });
  });
  std::unique_ptr<runtime::Runtime> rt;
  const bool made = report.step("dynamodb", "store init", [&]() -> Result<std::string> {
    // The store reads the endpoint (AWS_ENDPOINT_URL_DYNAMODB) and the
    // credentials from the environment, as every leasehold command does.
    runtime::RuntimeOptions options;
    options.store_uri = "dynamodb://" + s.region + "/" + s.name + "_";
    LEASEHOLD_ASSIGN_OR_RETURN(rt, runtime::Runtime::open(std::move(options)));
    for (const TableSpec& spec : tables) {  // as `store init` makes them
      LEASEHOLD_RETURN_IF_ERROR(rt->store().ensure_table(spec).with_context("table " + spec.name));
    }
    return std::to_string(tables.size()) + " tables " + s.name + "_*";
  });
  if (!made) return;
  LeaseManager& leases = rt->leases();
  AcquireOptions acquire;
  acquire.owner = s.name;
  acquire.ttl = 30s;
  acquire.extra_update.set(std::string(cli::kLeaseKindAttr), std::string(cli::kLeaseKindValue));
  Lease lease;
  const auto take = [&]() -> Result<std::string> {
    LEASEHOLD_ASSIGN_OR_RETURN(lease, leases.acquire(Key{s.name, ""}, acquire));
    return "epoch " + std::to_string(lease.epoch);
  };
  if (!report.step("dynamodb", "lease acquired", take)) return;
  const bool renewed = report.step("dynamodb", "lease renewed", [&]() -> Result<std::string> {
    LEASEHOLD_ASSIGN_OR_RETURN(lease, leases.renew(lease));
    return std::string();
  });
  if (!renewed) return;
  if (!report.step("dynamodb", "fenced write",
                   [&] { return fenced_writes(leases, lease, random); })) {
    return;
  }
  report.step("dynamodb", "lease released", [&]() -> Result<std::string> {
    LEASEHOLD_RETURN_IF_ERROR(leases.release(lease, ReleaseMode::kClear));
    return std::string();
  });
}

// ---------------------------------------------------------------- SQS

constexpr aws::JsonErrorRule kSqsErrors[] = {
    {"QueueDoesNotExist", Code::kNotFound},
    {"NonExistentQueue", Code::kNotFound},
};

// The queues `store init --queue sqs://REGION/NAME` makes.
std::vector<std::string> queue_names(const Setup& s) {
  std::vector<std::string> names;
  for (std::string_view kind : {movies::kTraceQueueName, movies::kProbeQueueName}) {
    const std::string queue = movies::sqs_job_queue_name(s.name, kind);
    names.push_back(queue);
    names.push_back(queue + "-dead");
  }
  return names;
}

// SqsQueue has no call that deletes a queue (nothing in leasehold does), so
// cleanup sends DeleteQueue itself; a queue that is missing was never made.
Result<std::string> delete_queues(const Setup& s) {
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<aws::JsonClient> client,
                             json_client(s, "sqs", "AmazonSQS.", s.sqs_endpoint, kSqsErrors));
  const auto delete_queue = [&](const std::string& name) -> Status {
    LEASEHOLD_ASSIGN_OR_RETURN(const boost::json::object found,
                               client->call("GetQueueUrl", {{"QueueName", name}}, true));
    const boost::json::value* url = found.if_contains("QueueUrl");
    if (url == nullptr || !url->is_string()) return internal_error("GetQueueUrl: no QueueUrl");
    return client->call("DeleteQueue", {{"QueueUrl", *url}}, true).status();
  };
  int deleted = 0;
  Status first;
  std::vector<std::string> left;
  const std::vector<std::string> names = queue_names(s);
  for (const std::string& name : names) {
    const Status sent = delete_queue(name);
    if (sent.ok()) ++deleted;
    if (sent.ok() || sent.code() == Code::kNotFound) continue;
    if (first.ok()) first = sent;
    left.push_back(name);
  }
  if (!left.empty()) return left_behind(first, left);
  return std::to_string(deleted) + " of " + std::to_string(names.size()) + " deleted";
}

// Receives the one message sent: a receive may come back empty while SQS
// samples servers that do not hold it yet.
Result<Message> receive_one(Queue& queue) {
  constexpr int kReceivesMax = 4;
  for (int i = 0; i < kReceivesMax; ++i) {
    LEASEHOLD_ASSIGN_OR_RETURN(std::vector<Message> got, queue.receive(1, 30s));
    if (!got.empty()) return std::move(got.front());
  }
  return not_found("no message after " + std::to_string(kReceivesMax) + " receives");
}

void check_sqs(const Setup& s, Report& report) {
  const Finally cleanup(
      [&] { report.step("sqs", "queues deleted", [&] { return delete_queues(s); }); });
  // As an operator names it; the endpoint comes from AWS_ENDPOINT_URL_SQS.
  const std::string uri = "sqs://" + s.region + "/" + s.name;
  const bool made = report.step("sqs", "store init --queue", [&]() -> Result<std::string> {
    LEASEHOLD_RETURN_IF_ERROR(movies::create_sqs_job_queues(uri));
    return std::to_string(queue_names(s).size()) + " queues " + s.name + "-*";
  });
  if (!made) return;
  std::unique_ptr<sqs::SqsQueue> queue;
  const std::string body = "leasehold aws smoke test " + s.name;
  const auto send = [&]() -> Result<std::string> {
    // Opened as `serve --queue` opens it: both queues looked up.
    LEASEHOLD_ASSIGN_OR_RETURN(sqs::SqsQueueOptions options, sqs::parse_sqs_uri(uri));
    options.queue_name = movies::sqs_job_queue_name(options.queue_name, movies::kTraceQueueName);
    options.receive_wait = 5s;
    LEASEHOLD_ASSIGN_OR_RETURN(queue, sqs::SqsQueue::open(std::move(options)));
    LEASEHOLD_RETURN_IF_ERROR(queue->send(body).status());
    return "to " + queue->options().queue_name;
  };
  if (!report.step("sqs", "message sent", send)) return;
  Message message;
  const bool received = report.step("sqs", "message received", [&]() -> Result<std::string> {
    LEASEHOLD_ASSIGN_OR_RETURN(message, receive_one(*queue));
    LEASEHOLD_RETURN_IF_ERROR(expect(message.body == body, "the message's body differs"));
    return std::string();
  });
  if (!received) return;
  const bool extended = report.step("sqs", "visibility extended", [&]() -> Result<std::string> {
    LEASEHOLD_RETURN_IF_ERROR(queue->extend_visibility(message.receipt, 60s).status());
    return std::string("by 60 s");
  });
  if (!extended) return;
  report.step("sqs", "message removed", [&]() -> Result<std::string> {
    LEASEHOLD_RETURN_IF_ERROR(queue->remove(message.receipt));
    return std::string();
  });
}

// ---------------------------------------------------------------- S3

// A presigned URL fetched as a browser fetches it: a plain GET, unsigned.
// The URL carries a signature: it appears in no message.
Result<std::string> fetch_presigned(const std::string& url) {
  const size_t scheme_end = url.find("://");
  const size_t path = scheme_end == std::string::npos ? scheme_end : url.find('/', scheme_end + 3);
  if (path == std::string::npos) return internal_error("the presigned URL has no path");
  net::HttpClientOptions options;
  LEASEHOLD_ASSIGN_OR_RETURN(options.endpoint, net::parse_http_endpoint(url.substr(0, path)));
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> http,
                             net::HttpClient::open(std::move(options)));
  LEASEHOLD_ASSIGN_OR_RETURN(
      const net::HttpResponse got,
      http->send({.method = "GET", .target = url.substr(path), .headers = {}, .body = {}}, 30s));
  if (got.status != 200) {
    return unavailable("presigned GET: HTTP " + std::to_string(got.status) + ", " +
                       aws::xml_element(got.body, "Code").value_or("no error code") +
                       " (AWS request ID " +
                       std::string(got.header("x-amz-request-id").value_or("none")) + ")");
  }
  return got.body;
}

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read back " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Put, read back whole (as the media download a movie: ranged GETs under
// If-Match, into the file `copy`, removed after), by a range, and through a
// presigned URL.
void s3_object_steps(aws::S3Client& s3, const std::string& key, const std::string& copy,
                     Report& report, Clock& clock) {
  const std::string body = "leasehold aws smoke test: " + key + "\n";
  const auto put = [&]() -> Result<std::string> {
    LEASEHOLD_RETURN_IF_ERROR(s3.put(key, body, "text/plain"));
    return std::to_string(body.size()) + " bytes at " + key;
  };
  if (!report.step("s3", "object put", put)) return;
  const bool read = report.step("s3", "object read back", [&]() -> Result<std::string> {
    LEASEHOLD_RETURN_IF_ERROR(s3.get_to_file(key, copy));
    Result<std::string> got = read_file(copy);
    std::error_code ignored;
    std::filesystem::remove(copy, ignored);
    LEASEHOLD_RETURN_IF_ERROR(got.status());
    LEASEHOLD_RETURN_IF_ERROR(expect(*got == body, "the object read back differs"));
    return std::string();
  });
  if (!read) return;
  const bool ranged = report.step("s3", "ranged read", [&]() -> Result<std::string> {
    LEASEHOLD_ASSIGN_OR_RETURN(const aws::S3Range range, s3.get_range(key, 9, 17));
    LEASEHOLD_RETURN_IF_ERROR(
        expect(range.bytes == body.substr(9, 9) && range.object_size == body.size(),
               "the range read differs"));
    return std::string("bytes 9-17");
  });
  if (!ranged) return;
  report.step("s3", "presigned GET", [&]() -> Result<std::string> {
    LEASEHOLD_ASSIGN_OR_RETURN(const std::string url, s3.presign_get(key, 60s, clock.wall_now()));
    LEASEHOLD_ASSIGN_OR_RETURN(const std::string got, fetch_presigned(url));
    LEASEHOLD_RETURN_IF_ERROR(expect(got == body, "the presigned GET's body differs"));
    return std::string("fetched unsigned, ") +
           (url.starts_with("https:") ? "over HTTPS" : "over HTTP");
  });
}

void check_s3(const Setup& s, Report& report, Clock& clock) {
  if (!s.s3) {
    report.note("s3",
                "skipped: LEASEHOLD_AWS_SMOKE_BUCKET is not set (a bucket, or BUCKET/PREFIX, "
                "this deployment may write to; it is never created)");
    return;
  }
  const std::string key = s.s3->prefix + s.name + "/smoke.txt";
  std::unique_ptr<aws::S3Client> s3;
  const bool opened = report.step("s3", "client opened", [&]() -> Result<std::string> {
    // As the media open it for --media-dir s3://BUCKET/PREFIX.
    LEASEHOLD_ASSIGN_OR_RETURN(s3, aws::S3Client::open({.bucket = s.s3->bucket,
                                                        .region = s.s3->region,
                                                        .endpoint = s.s3->endpoint,
                                                        .credentials = s.credentials,
                                                        .clock = &clock}));
    return "bucket " + s.s3->bucket;
  });
  if (!opened) return;
  const Finally cleanup([&] {
    report.step("s3", "object removed", [&]() -> Result<std::string> {
      LEASEHOLD_RETURN_IF_ERROR(s3->remove(key).with_context(key + " may be left"));
      return std::string();
    });
  });
  const std::string copy = std::filesystem::temp_directory_path() / (s.name + "-read-back");
  s3_object_steps(*s3, key, copy, report, clock);
}

// ---------------------------------------------------------------- setup

// LEASEHOLD_AWS_SMOKE_BUCKET, "BUCKET" or "BUCKET/PREFIX", read as the
// media read --media-dir s3://BUCKET/PREFIX: the region and the endpoint
// from the environment. nullopt when it is unset.
Result<std::optional<aws::S3Location>> parse_bucket(const std::string& value,
                                                    const aws::EnvLookup& env) {
  if (value.empty()) return std::optional<aws::S3Location>();
  if (value.find_first_of("?#") != std::string::npos) {
    return invalid_argument("LEASEHOLD_AWS_SMOKE_BUCKET takes BUCKET or BUCKET/PREFIX");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(aws::S3Location location, aws::parse_s3_uri("s3://" + value, env));
  return std::optional<aws::S3Location>(std::move(location));
}

Result<Setup> make_setup(const aws::EnvLookup& env, Random& random) {
  Setup s;
  LEASEHOLD_ASSIGN_OR_RETURN(s.region, aws::resolve_region(env));
  s.name = "lhsmoke" + random_token(random).substr(0, 10);
  s.dynamodb_endpoint = aws::configured_endpoint(env, "DYNAMODB").value_or("");
  s.sqs_endpoint = aws::configured_endpoint(env, "SQS").value_or("");
  LEASEHOLD_ASSIGN_OR_RETURN(s.s3,
                             parse_bucket(env("LEASEHOLD_AWS_SMOKE_BUCKET").value_or(""), env));
  // Found once here, so that missing credentials stop the run before it
  // makes anything; the store finds its own, as every command does.
  LEASEHOLD_ASSIGN_OR_RETURN(s.credentials, aws::default_credentials(env));
  LEASEHOLD_RETURN_IF_ERROR(s.credentials->get().status().with_context("credentials"));
  return s;
}

void print_setup(const Setup& s) {
  const auto where = [](const std::string& endpoint) {
    return endpoint.empty() ? std::string("AWS") : endpoint;
  };
  const std::string s3 =
      s.s3 ? ", s3 on " + where(s.s3->endpoint) + " in bucket " + s.s3->bucket : "";
  std::printf("aws smoke test in %s: everything it makes is named %s*\n", s.region.c_str(),
              s.name.c_str());
  std::printf("  dynamodb on %s, sqs on %s%s\n", where(s.dynamodb_endpoint).c_str(),
              where(s.sqs_endpoint).c_str(), s3.c_str());
  std::fflush(stdout);
}

int run() {
  const aws::EnvLookup env = aws::process_env();
  if (env("LEASEHOLD_AWS_SMOKE") != "1") {
    std::printf(
        "aws smoke test: off (set LEASEHOLD_AWS_SMOKE=1 to run it against AWS; "
        "docs/server.md says what it makes, deletes and costs)\n");
    return kExitSkipped;
  }
  SystemRandom random;
  Result<Setup> setup = make_setup(env, random);
  if (!setup.ok()) {
    std::printf("aws smoke test: cannot start, nothing was made: %s\n",
                setup.status().to_string().c_str());
    return kExitFailed;
  }
  print_setup(*setup);
  RealClock clock;
  Report report(clock);
  check_dynamodb(*setup, report, clock, random);
  check_sqs(*setup, report);
  check_s3(*setup, report, clock);
  return report.finish();
}

}  // namespace
}  // namespace leasehold::aws_smoke

int main() { return leasehold::aws_smoke::run(); }
