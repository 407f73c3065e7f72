// `--metrics-format emf` on the real binary, for each process that takes it
// (`worker`, `serve`, `trace-worker`), on SQLite: the lines it prints on
// stdout every --metrics-every, each checked against the embedded metric
// format's specification (testing/emf_validator.h, which a planted bad line
// fails) and against the contract the CloudWatch dashboards and alarms read
// (docs/server.md, "Metrics in CloudWatch (EMF)"): the namespace, one
// dimension set [["Service"]], no per-connection metric. A worker printing
// its messages on stdout too never mixes the two within a line, and its
// counters' increases over every line add up to the messages it wrote, the
// last line (at SIGTERM) included. Bad values of the flags exit 2 naming
// the flag.
#include <signal.h>

#include <functional>
#include <regex>
#include <set>

#include "process_util.h"
#include "testing/emf_validator.h"

namespace leasehold::process_test {
namespace {

using namespace std::chrono_literals;
namespace json = boost::json;

constexpr char kNamespace[] = "Leasehold/emf-test";

// The whole lines of `text` (a line still being written is left out) that
// are EMF documents.
size_t emf_lines_in(const std::string& text) {
  size_t n = 0;
  size_t start = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
    if (std::string_view(text).substr(start, end - start).starts_with("{\"_aws\":")) ++n;
    start = end + 1;
  }
  return n;
}

// The metric names a document defines.
std::set<std::string> metric_names(const json::object& doc) {
  std::set<std::string> names;
  for (const json::value& d : doc.at("_aws").at("CloudWatchMetrics").as_array()) {
    for (const json::value& m : d.at("Metrics").as_array()) {
      names.insert(std::string(m.at("Name").as_string()));
    }
  }
  return names;
}

class EmfProcessTest : public ProcessTest {
 protected:
  // Checks `line` against the specification and the contract; its object.
  json::object check_emf(const std::string& line, const std::string& service) {
    for (const std::string& problem : testing::emf_problems(line)) {
      ADD_FAILURE() << problem << ": " << line;
    }
    const json::object doc = parse_object(line);
    EXPECT_EQ(str(doc, "Service"), service);
    for (const json::value& d : doc.at("_aws").at("CloudWatchMetrics").as_array()) {
      EXPECT_EQ(d.at("Namespace").as_string(), kNamespace);
      EXPECT_EQ(json::serialize(d.at("Dimensions")), R"([["Service"]])") << "one dimension set";
    }
    for (const std::string& name : metric_names(doc)) {
      EXPECT_TRUE(name.starts_with("leasehold_")) << name;
      EXPECT_EQ(name.find("_connection_"), std::string::npos) << "a per-connection family";
    }
    EXPECT_FALSE(doc.contains("conn")) << "no connection's ID as a member";
    return doc;
  }

  // Starts `args` with the EMF flags, waits for `lines` EMF lines on its
  // stdout, calls `meanwhile` (if given), stops it with SIGTERM and returns
  // what it printed (exit 0).
  RunResult run_until_lines(std::vector<std::string> args, size_t lines,
                            const std::function<void(Process&)>& meanwhile = nullptr) {
    for (const char* flag :
         {"--metrics-format", "emf", "--metrics-every", "1s", "--metrics-namespace", kNamespace}) {
      args.push_back(flag);
    }
    auto p = start_lh(args);
    EXPECT_TRUE(eventually(
        [&] { return emf_lines_in(p->out_so_far()) >= lines || p->wait_for(0ms); }, kEventTimeout))
        << p->err_so_far();
    if (meanwhile) meanwhile(*p);
    EXPECT_EQ(::kill(p->pid(), SIGTERM), 0);
    EXPECT_TRUE(p->wait_for(kEventTimeout));
    const RunResult r = p->exited() ? p->result() : RunResult{};
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }

  // The EMF lines of `out`, checked; at least `min` besides the last one,
  // which the stop printed.
  std::vector<json::object> emf_documents(const std::string& out, const std::string& service,
                                          size_t min) {
    std::vector<json::object> docs;
    for (const std::string& line : lines_of(out)) {
      if (line.starts_with("{\"_aws\":")) docs.push_back(check_emf(line, service));
    }
    EXPECT_GE(docs.size(), min + 1) << out;
    const std::vector<std::string> all = lines_of(out);
    EXPECT_TRUE(!all.empty() && all.back().starts_with("{\"_aws\":"))
        << "the last thing printed is the stop's EMF line";
    return docs;
  }
};

TEST_F(EmfProcessTest, ThePlantedBadLineFailsTheValidator) {
  std::filesystem::create_directories(dir() / "media");
  const RunResult r = run_until_lines(
      {"trace-worker", "--media-dir", (dir() / "media").string(), "--trace-workers", "0"}, 1);
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty()) << r.err;
  EXPECT_TRUE(testing::emf_problems(lines[0]).empty()) << lines[0];
  std::string planted = lines[0];
  planted.replace(planted.find("\"Service\":\"trace-worker\""), 24, "\"Servic\":\"trace-worker\"");
  EXPECT_FALSE(testing::emf_problems(planted).empty()) << "the dimension's member is gone";
  planted = lines[0];
  planted.replace(planted.find("\"Timestamp\":"), 12, "\"Timestamp\":-");
  EXPECT_FALSE(testing::emf_problems(planted).empty()) << "a negative Timestamp";
  EXPECT_FALSE(testing::emf_problems(lines[0].substr(0, lines[0].size() - 1)).empty())
      << "part of a line";
}

TEST_F(EmfProcessTest, TraceWorkerPrintsALineEveryIntervalAndOneAtTheStop) {
  const auto media = dir() / "media";
  std::filesystem::create_directories(media);
  const RunResult r = run_until_lines({"trace-worker", "--media-dir", media.string()}, 2);
  const std::vector<json::object> docs = emf_documents(r.out, "trace-worker", 2);
  ASSERT_GE(docs.size(), 3u);
  EXPECT_TRUE(metric_names(docs[0]).contains("leasehold_store_items_read_total"));
  for (size_t i = 1; i < docs.size(); ++i) {
    EXPECT_GE(docs[i].at("_aws").at("Timestamp").as_int64(),
              docs[i - 1].at("_aws").at("Timestamp").as_int64());
  }
}

TEST_F(EmfProcessTest, AStopBeforeTheFirstIntervalStillPrintsItsLine) {
  const auto media = dir() / "media";
  std::filesystem::create_directories(media);
  auto p = start_lh({"trace-worker", "--media-dir", media.string(), "--metrics-format", "emf",
                     "--metrics-namespace", kNamespace});
  ASSERT_TRUE(
      eventually([&] { return p->err_so_far().find("trace worker started") != std::string::npos; },
                 kEventTimeout))
      << p->err_so_far();
  ASSERT_EQ(::kill(p->pid(), SIGTERM), 0);
  ASSERT_TRUE(p->wait_for(kEventTimeout));
  const RunResult r = p->result();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(emf_documents(r.out, "trace-worker", 0).size(), 1u) << "60s default: only the stop's";
}

TEST_F(EmfProcessTest, ServePrintsTheFleetSummarysFigures) {
  for (const char* id : {"c0", "c1"}) {
    const RunResult added =
        lh({"conn", "add", id, "--url", std::string("ws://127.0.0.1:9/s/") + id});
    ASSERT_EQ(added.exit_code, 0) << added.err;
  }
  const auto metrics_served = [&](Process& serve) {
    const std::regex listening(R"re("msg":"listening","address":"127\.0\.0\.1:([0-9]+)")re");
    std::smatch port;
    const std::string err = serve.err_so_far();
    ASSERT_TRUE(std::regex_search(err, port, listening)) << err;
    const RunResult metrics =
        run({"curl", "-sf", "http://127.0.0.1:" + port[1].str() + "/metrics"});
    EXPECT_NE(metrics.out.find("\nleasehold_fleet_connections_not_streaming 2\n"),
              std::string::npos)
        << "GET /metrics has the figures an EMF line read: " << metrics.out;
  };
  const RunResult r = run_until_lines(
      {"serve", "--listen", "127.0.0.1:0", "--media-dir", (dir() / "media").string()}, 2,
      metrics_served);
  const std::vector<json::object> docs = emf_documents(r.out, "serve", 2);
  ASSERT_FALSE(docs.empty());
  const json::object& last = docs.back();
  EXPECT_EQ(last.at("leasehold_fleet_connections_started").to_number<double>(), 2) << r.out;
  EXPECT_EQ(last.at("leasehold_fleet_connections_streaming").to_number<double>(), 0);
  EXPECT_EQ(last.at("leasehold_fleet_connections_not_streaming").to_number<double>(), 2)
      << "no worker: both started connections are not streaming";
}

TEST_F(EmfProcessTest, AWorkersSinkLinesAndEmfLinesNeverMixAndItsCountsAddUp) {
  auto sim = start_lh({"upstream-sim", "--listen", "127.0.0.1:0", "--rate-per-conn", "200"});
  ASSERT_TRUE(
      eventually([&] { return sim->out_so_far().find('\n') != std::string::npos; }, kEventTimeout))
      << sim->err_so_far();
  const std::string listening(
      parse_object(lines_of(sim->out_so_far()).at(0)).at("listening").as_string());
  for (int i = 0; i < 3; ++i) {
    const std::string id = "c" + std::to_string(i);
    const RunResult added =
        lh({"conn", "add", id, "--url", "ws://" + listening + "/s/" + id + "?from={next_seq}"});
    ASSERT_EQ(added.exit_code, 0) << added.err;
  }
  const auto metrics_served = [&](Process& worker) {
    std::string port;
    for (const std::string& line : lines_of(worker.err_so_far())) {
      const json::object o = parse_object(line);
      if (o.contains("metrics_port")) port = std::to_string(o.at("metrics_port").as_int64());
    }
    ASSERT_FALSE(port.empty()) << worker.err_so_far();
    const RunResult metrics = run({"curl", "-sf", "http://127.0.0.1:" + port + "/metrics"});
    EXPECT_NE(metrics.out.find("# TYPE leasehold_fleet_takeover_gap_seconds histogram"),
              std::string::npos)
        << "GET /metrics is served as before, the takeover gap among its families";
  };
  const RunResult r = run_until_lines({"worker", "--id", "w1", "--reconcile-every", "500ms",
                                       "--sink", "stdout", "--metrics-listen", "127.0.0.1:0"},
                                      3, metrics_served);
  size_t messages = 0;
  std::set<std::string> conns;
  for (const std::string& line : lines_of(r.out)) {
    const json::object o = parse_object(line);  // fails on a line of two halves
    if (o.contains("_aws")) continue;
    EXPECT_TRUE(o.contains("seq") && o.contains("msg")) << "a whole sink line: " << line;
    conns.insert(str(o, "conn"));
    ++messages;
  }
  EXPECT_EQ(conns.size(), 3u) << "it streamed every connection";
  EXPECT_GT(messages, 0u);
  double counted = 0;
  for (const json::object& doc : emf_documents(r.out, "worker", 3)) {
    counted += doc.at("leasehold_fleet_messages_total").to_number<double>();
    EXPECT_TRUE(metric_names(doc).contains("leasehold_fleet_owned_connections"));
  }
  EXPECT_EQ(counted, static_cast<double>(messages))
      << "the increases over every line, the stop's included, are the messages written";
}

TEST_F(EmfProcessTest, BadValuesOfTheFlagsExit2NamingTheFlag) {
  const std::string media = (dir() / "media").string();
  std::filesystem::create_directories(media);
  const std::vector<std::vector<std::string>> commands = {{"worker", "--id", "w1"},
                                                          {"serve", "--media-dir", media},
                                                          {"trace-worker", "--media-dir", media}};
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--metrics-format", "statsd"}, "--metrics-format"},
      {{"--metrics-format", "emf", "--metrics-every", "500ms"}, "--metrics-every"},
      {{"--metrics-format", "emf", "--metrics-every", "soon"}, "--metrics-every"},
      {{"--metrics-format", "emf", "--metrics-namespace", "AWS/EC2"}, "--metrics-namespace"},
      {{"--metrics-format", "emf", "--metrics-namespace", ""}, "--metrics-namespace"}};
  for (const auto& command : commands) {
    for (const auto& [flags, named] : bad) {
      std::vector<std::string> args = command;
      args.insert(args.end(), flags.begin(), flags.end());
      const RunResult r = lh(args);
      EXPECT_EQ(r.exit_code, 2) << command[0] << " " << flags[1];
      EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(db_path())) << "refused before the store is opened";
}

}  // namespace
}  // namespace leasehold::process_test
