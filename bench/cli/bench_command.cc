#include "bench/cli/bench_command.h"

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "base/duration.h"
#include "bench/cli/bench_fleet_page.h"
#include "bench/cli/bench_http.h"
#include "bench/cli/bench_leases.h"
#include "bench/cli/bench_movies.h"
#include "cli/common.h"

namespace leasehold::bench {
namespace {

Status check_bench(const BenchLeasesOptions& b) {
  const auto check = [](std::string_view flag, int64_t v, int64_t max) {
    if (v >= 1 && v <= max) return Status::ok_status();
    return invalid_argument(std::string(flag) + " " + std::to_string(v) + ": must be 1.." +
                            std::to_string(max));
  };
  LEASEHOLD_RETURN_IF_ERROR(check("--leases", b.leases, kBenchLeasesMax));
  LEASEHOLD_RETURN_IF_ERROR(check("--seconds", b.seconds, kBenchSecondsMax));
  LEASEHOLD_RETURN_IF_ERROR(check("--threads", b.threads, kBenchThreadsMax));
  if (b.threads > b.leases) return invalid_argument("--threads may not exceed --leases");
  return {};
}

Status check_bench_renewer(const BenchRenewerOptions& b) {
  if (b.leases < 1 || b.leases > kBenchLeasesMax) {
    return invalid_argument("--leases must be 1.." + std::to_string(kBenchLeasesMax));
  }
  if (b.seconds < 1 || b.seconds > kBenchSecondsMax) {
    return invalid_argument("--seconds must be 1.." + std::to_string(kBenchSecondsMax));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const Duration every, parse_duration(b.every));
  if (every < std::chrono::milliseconds(100))
    return invalid_argument("--every must be at least 100ms");
  return {};
}

Status check_bench_movies(const BenchMoviesOptions& m) {
  if (m.viewers < 1 || m.viewers > kBenchViewersMax) {
    return invalid_argument("--viewers must be 1.." + std::to_string(kBenchViewersMax));
  }
  if (m.seconds < 2 || m.seconds > kBenchSecondsMax) {
    return invalid_argument("--seconds must be 2.." + std::to_string(kBenchSecondsMax));
  }
  if (m.trace_nice < 0 || m.trace_nice > 19) return invalid_argument("--trace-nice must be 0..19");
  const Result<Duration> every = parse_duration(m.every);
  if (!every.ok()) return every.status().with_context("--every");
  if (*every < std::chrono::milliseconds(10))
    return invalid_argument("--every must be at least 10ms");
  return {};
}

Status check_bench_fleet_page(const BenchFleetPageOptions& f) {
  if (f.connections > kBenchFleetConnectionsMax) {
    return invalid_argument("--connections must be 0.." +
                            std::to_string(kBenchFleetConnectionsMax));
  }
  if (f.seconds < 2 || f.seconds > kBenchSecondsMax) {
    return invalid_argument("--seconds must be 2.." + std::to_string(kBenchSecondsMax));
  }
  if (f.fill_threads < 1 || f.fill_threads > 64) {
    return invalid_argument("--fill-threads must be 1..64");
  }
  const Result<Duration> every = parse_duration(f.every);
  if (!every.ok()) return every.status().with_context("--every");
  const Result<Duration> every_max = parse_duration(f.every_max);
  if (!every_max.ok()) return every_max.status().with_context("--every-max");
  if (*every < std::chrono::milliseconds(100) || *every_max < *every) {
    return invalid_argument("--every must be at least 100ms, and --every-max at least --every");
  }
  return {};
}

Status check_bench_http(const BenchHttpOptions& h) {
  if (h.seconds < 1 || h.seconds > kBenchSecondsMax) {
    return invalid_argument("--seconds must be 1.." + std::to_string(kBenchSecondsMax));
  }
  return parse_connection_levels(h.connections).status();
}

class BenchCommand final : public cli::Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    BenchLeasesOptions& b = leases_args_;
    leases_ = bench->add_subcommand("leases", "Keep many leases alive; report throughput");
    leases_->add_option("--leases", b.leases, "How many leases")->capture_default_str();
    leases_->add_option("--seconds", b.seconds, "How long to run")->capture_default_str();
    leases_->add_option("--threads", b.threads, "Client threads")->capture_default_str();
    leases_
        ->add_option("--sdk-baseline", b.sdk_script,
                     "DynamoDB only: also measure the AWS SDK for JavaScript with this script "
                     "(bench/sdk_renew_loop.mjs; needs node)")
        ->check(CLI::ExistingFile);

    BenchRenewerOptions& r = renewer_args_;
    renewer_ = bench->add_subcommand(
        "renewer", "One process renews many leases with one Renewer; report its CPU and memory");
    renewer_->add_option("--leases", r.leases, "How many leases")->capture_default_str();
    renewer_->add_option("--every", r.every, "Renew period (1500ms, 5s)")->capture_default_str();
    renewer_->add_option("--seconds", r.seconds, "How long to measure")->capture_default_str();

    BenchHttpOptions& h = http_args_;
    http_ = bench->add_subcommand(
        "http",
        "Authenticated GET /api/me on the server of `serve` against a minimal Beast server; "
        "without --store, on a fresh SQLite file in a temporary directory");
    http_->add_option("--seconds", h.seconds, "Timed seconds per server and level")
        ->capture_default_str();
    http_
        ->add_option("--connections", h.connections, "Concurrent keep-alive connections, per level")
        ->capture_default_str();

    BenchMoviesOptions& m = movies_args_;
    movies_ = bench->add_subcommand(
        "movies",
        "Viewers polling a movie's metadata while a trace of it runs, against the same polling "
        "while nothing runs; without --store, on a fresh SQLite file in a temporary directory");
    movies_->add_option("--viewers", m.viewers, "Viewers, each a keep-alive connection")
        ->capture_default_str();
    movies_->add_option("--every", m.every, "Each viewer's polling period")->capture_default_str();
    movies_->add_option("--seconds", m.seconds, "Timed seconds per kind of round")
        ->capture_default_str();
    movies_
        ->add_option("--trace-nice", m.trace_nice,
                     "The trace worker's nice value (serve's is 10; 0 runs it at the server's)")
        ->capture_default_str();

    BenchFleetPageOptions& f = fleet_page_args_;
    fleet_page_ = bench->add_subcommand(
        "fleet-page",
        "One open Fleet page polling a fleet of --connections: bytes, requests and (on DynamoDB) "
        "read units a minute, and the latency of a page of 100; without --store, on a fresh "
        "SQLite file in a temporary directory");
    fleet_page_
        ->add_option("--connections", f.connections,
                     "Connections added before the window (0: polls the fleet already in --store)")
        ->capture_default_str();
    fleet_page_->add_option("--seconds", f.seconds, "The timed window")->capture_default_str();
    fleet_page_->add_option("--every", f.every, "The page's polling period while things change")
        ->capture_default_str();
    fleet_page_
        ->add_option("--every-max", f.every_max,
                     "The longest period it backs off to while nothing changes")
        ->capture_default_str();
    fleet_page_->add_option("--fill-threads", f.fill_threads, "Threads adding the connections")
        ->capture_default_str();
    return bench;
  }

  int run(const cli::GlobalArgs& global, Logger& log) override {
    const std::string& uri = global.store_uri;
    if (leases_->parsed()) {
      if (const Status ok = check_bench(leases_args_); !ok.ok()) return cli::report(ok);
      BenchLeasesOptions options = leases_args_;
      options.store_uri = uri;
      if (!options.sdk_script.empty() && !uri.starts_with("dynamodb:")) {
        return cli::report(invalid_argument("--sdk-baseline needs a dynamodb:// store"));
      }
      return run_bench_leases(options, log);
    }
    if (renewer_->parsed()) {
      if (const Status ok = check_bench_renewer(renewer_args_); !ok.ok()) return cli::report(ok);
      BenchRenewerOptions options = renewer_args_;
      options.store_uri = uri;
      return run_bench_renewer(options, log);
    }
    if (http_->parsed()) {
      if (const Status ok = check_bench_http(http_args_); !ok.ok()) return cli::report(ok);
      BenchHttpOptions options = http_args_;
      if (global.store_given) options.store_uri = uri;
      return run_bench_http(options, log);
    }
    if (movies_->parsed()) {
      if (const Status ok = check_bench_movies(movies_args_); !ok.ok()) return cli::report(ok);
      BenchMoviesOptions options = movies_args_;
      if (global.store_given) options.store_uri = uri;
      return run_bench_movies(options, log);
    }
    if (fleet_page_->parsed()) {
      if (const Status ok = check_bench_fleet_page(fleet_page_args_); !ok.ok()) {
        return cli::report(ok);
      }
      BenchFleetPageOptions options = fleet_page_args_;
      if (global.store_given) options.store_uri = uri;
      return run_bench_fleet_page(options, log);
    }
    return cli::report(invalid_argument("no command given; see --help"));
  }

 private:
  BenchLeasesOptions leases_args_;
  BenchRenewerOptions renewer_args_;
  BenchHttpOptions http_args_;
  BenchMoviesOptions movies_args_;
  BenchFleetPageOptions fleet_page_args_;
  CLI::App* fleet_page_ = nullptr;
  CLI::App* leases_ = nullptr;
  CLI::App* renewer_ = nullptr;
  CLI::App* http_ = nullptr;
  CLI::App* movies_ = nullptr;
};

}  // namespace

std::unique_ptr<cli::Command> make_bench_command() { return std::make_unique<BenchCommand>(); }

}  // namespace leasehold::bench
