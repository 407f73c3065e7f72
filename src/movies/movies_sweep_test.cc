// Tests for the sweep (Movies::sweep) on the memory store and a simulated
// clock: a movie left `processing`, `queued`, `tracing` or `deleting` by a
// crash is repaired once its bound has passed, not before; each repair is
// audited once; two sweeps racing repair a movie once; a sweep racing the
// probe, the trace worker or the removal it took for dead changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "metrics/registry.h"
#include "movies/movies.h"
#include "movies/movies_test_fixture.h"
#include "movies/probe_worker.h"
#include "movies/schema.h"
#include "movies/sweeper.h"
#include "store/store_wrapper.h"
#include "testing/eventually.h"

namespace leasehold::movies::testing {
namespace {

namespace json = boost::json;

constexpr Duration kGrace = seconds(10);
constexpr Duration kPastGrace = seconds(11);
constexpr Duration kPastTracingTtl = seconds(4);  // the fixture's tracing ttl is 3 s

// Runs `before` once, just before the first write of a sweep's repair (one
// that sets swept_for), as if another process wrote between the sweep's
// read and its write.
class BeforeSweepWrite : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::function<void()> before;

  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    const bool repair = std::ranges::any_of(
        update.actions(), [](const UpdateAction& a) { return a.attr == attr::kSweptFor; });
    if (before && repair && table == kMoviesTable) std::exchange(before, nullptr)();
    return StoreWrapper::update(table, key, update, condition);
  }
};

class SweepTest : public MoviesTest {
 protected:
  void SetUp() override {
    MoviesTest::SetUp();
    if (HasFatalFailure()) return;
    auto queue = StoreQueue::open(*store_, clock_, random_, QueueOptions{.name = kProbeQueueName});
    ASSERT_TRUE(queue.ok());
    probe_queue_ = std::move(queue).value();
    MoviesOptions o;
    o.media = media_.get();
    o.tracing_ttl = seconds(3);
    o.lease.max_clock_skew = milliseconds(100);
    o.lease.safety_margin = milliseconds(50);
    auto other = Movies::open(racing_store_, clock_, random_, *queue_, o);
    ASSERT_TRUE(other.ok()) << other.status().to_string();
    racing_ = std::move(other).value();
  }

  // A sweep by `movies` (the fixture's by default), which must not fail.
  SweepReport sweep(Movies* movies = nullptr) {
    Result<SweepReport> r = (movies != nullptr ? movies : movies_.get())
                                ->sweep(*probe_queue_, SweepOptions{.grace = kGrace});
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (!r.ok()) return {};
    EXPECT_EQ(r->errors, 0u) << r->first_error.to_string();
    return *r;
  }

  // The bodies of the messages waiting in `queue`, received and removed.
  std::vector<std::string> take_all(Queue& queue) {
    auto got = queue.receive(kReceiveBatchMax, seconds(60));
    EXPECT_TRUE(got.ok());
    std::vector<std::string> bodies;
    for (const Message& m : got.ok() ? *got : std::vector<Message>{}) {
      bodies.push_back(m.body);
      EXPECT_TRUE(queue.remove(m.receipt).ok());
    }
    return bodies;
  }

  // The audit as "event job_id" (or "event: summary" for a repair).
  std::vector<std::string> events(const std::string& id) {
    auto audit = movies_->audit(id);
    EXPECT_TRUE(audit.ok()) << audit.status().to_string();
    std::vector<std::string> out;
    for (const AuditEntry& e : audit.ok() ? *audit : std::vector<AuditEntry>{}) {
      out.push_back(e.event + " " + (e.event == kEventRepaired ? e.summary : e.job_id));
    }
    return out;
  }

  // A ready movie with a trace started: its ID and the job's. The job's
  // message is in the trace queue.
  std::pair<std::string, std::string> queued_movie() {
    const std::string id = ready_movie();
    auto lease = movies_->acquire_analysis(id, kAda);
    EXPECT_TRUE(lease.ok());
    EXPECT_TRUE(movies_->set_markers(id, "ada", lease->lease_id, one_marker(0)).ok());
    auto started = movies_->start_trace(id, kAda, lease->lease_id);
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    return {id, started.ok() ? started->job_id : ""};
  }

  // A worker's claim of a queued job (TraceWorker::claim's write).
  Status claim(const std::string& id, const std::string& job) {
    Update update;
    update.set(attr::kStatus, std::string(kStatusTracing))
        .set(attr::kJobClaimedBy, std::string("w1"))
        .set("tracing_expires_at_ms", to_unix_ms(clock_.wall_now()) + 3000);
    return store_
        ->update(kMoviesTable, movie_key(id), update,
                 cond::eq("tracing_token", job) && cond::eq(attr::kStatus, kStatusQueued))
        .status();
  }

  std::string status_of(const std::string& id) { return get_string_or(raw(id), attr::kStatus); }

  // A ready movie of a copy of the test movie, which its removal may take
  // away.
  std::string removable_movie() {
    std::filesystem::copy_file(dir_ / "spots.avi", dir_ / "removable.avi",
                               std::filesystem::copy_options::overwrite_existing);
    return ready_movie("removable.avi");
  }

  std::unique_ptr<StoreQueue> probe_queue_;
  // A second process's Movies, whose repairs wait for `racing_store_.before`.
  BeforeSweepWrite racing_store_{*store_};
  std::unique_ptr<Movies> racing_;
};

std::string probe_job(const std::string& id) {
  return json::serialize(json::object{{"movie_id", id}});
}
std::string remove_job(const std::string& id) {
  return json::serialize(json::object{{"movie_id", id}, {"job", "remove"}});
}
std::string trace_job(const std::string& id, const std::string& job) {
  return json::serialize(json::object{{"movie_id", id}, {"job_id", job}});
}

const std::string kRequeuedProbe =
    "movie.repaired the probe was queued again: nothing was seen of it for the sweep's grace";
const std::string kGivenUp =
    "the movie could not be probed: its probe never finished, however often it was queued";
const std::string kRequeuedTrace =
    "movie.repaired the trace job was queued again: its lease expired while it waited in the "
    "queue";

// An upload whose process died before its probe job was queued: nothing
// for a grace, then the probe job again (each grace, twice), then invalid.
TEST_F(SweepTest, AMovieLeftProcessingIsProbedAgainThenGivenUp) {
  auto created = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(created.ok());
  const std::string id = created->id;
  clock_.advance(seconds(9));
  EXPECT_EQ(sweep().repairs(), 0u) << "within the grace of its creation";
  EXPECT_TRUE(take_all(*probe_queue_).empty());

  for (int64_t n = 1; n <= kProbeRequeuesMax; ++n) {
    clock_.advance(seconds(2));
    const SweepReport r = sweep();
    EXPECT_EQ(r.read, 1u);
    EXPECT_EQ(r.probes_requeued, 1u) << n;
    EXPECT_EQ(take_all(*probe_queue_), std::vector<std::string>{probe_job(id)});
    EXPECT_EQ(sweep().repairs(), 0u) << "the next sweep, within the grace of the repair";
    EXPECT_EQ(status_of(id), kStatusProcessing);
    clock_.advance(seconds(8));
  }
  clock_.advance(seconds(2));
  EXPECT_EQ(sweep().probes_given_up, 1u);
  EXPECT_TRUE(take_all(*probe_queue_).empty());
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kStatusInvalid);
  EXPECT_EQ(m->failure_summary, kGivenUp);
  EXPECT_EQ(movies_->probe(id).status().code(), Code::kFailedPrecondition);
  clock_.advance(kPastGrace);
  EXPECT_EQ(sweep().read, 0u) << "an invalid movie is not the sweep's";
  EXPECT_EQ(events(id), (std::vector<std::string>{kRequeuedProbe, kRequeuedProbe,
                                                  "movie.repaired " + kGivenUp}));
  EXPECT_EQ(get_string(raw(id), attr::kSweepAuditPending), nullptr);
}

// A probe that says it is alive (its worker does, every third of its
// visibility) holds the sweep off a grace from then; the probe job queued
// again once it is not, probes the movie.
TEST_F(SweepTest, AProbeSeenAliveIsLeftBeAndARequeuedProbeFinishesTheMovie) {
  auto created = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(created.ok());
  const std::string id = created->id;
  clock_.advance(seconds(8));
  ASSERT_TRUE(movies_->probe_alive(id).ok());
  clock_.advance(seconds(8));
  EXPECT_EQ(sweep().repairs(), 0u) << "16 s after its creation, 8 s after its probe was seen";
  clock_.advance(seconds(3));
  EXPECT_EQ(sweep().probes_requeued, 1u);
  EXPECT_EQ(take_all(*probe_queue_), std::vector<std::string>{probe_job(id)});
  auto probed = movies_->probe(id);  // the job's worker
  ASSERT_TRUE(probed.ok()) << probed.status().to_string();
  EXPECT_EQ(probed->status, kStatusReady);
  clock_.advance(kPastGrace);
  EXPECT_EQ(sweep().read, 0u);
  EXPECT_EQ(events(id), std::vector<std::string>{kRequeuedProbe});
  EXPECT_EQ(movies_->probe_alive(id).code(), Code::kFailedPrecondition);
}

// A trace whose message was lost (a process killed before it was queued, or
// a dead letter): the queued job keeps its movie while its lease lasts; then
// its message is sent again, once; and a grace later, still queued, it is
// ended as failed, its start and end audited once each.
TEST_F(SweepTest, AQueuedJobWhoseMessageWasLostIsQueuedAgainThenEnded) {
  const auto [id, job] = queued_movie();
  ASSERT_EQ(drain_queue().size(), 1u);  // lost
  EXPECT_EQ(sweep().repairs(), 0u) << "its lease is live";
  clock_.advance(kPastTracingTtl);
  EXPECT_EQ(sweep().traces_requeued, 1u);
  EXPECT_EQ(take_all(*queue_), std::vector<std::string>{trace_job(id, job)});
  EXPECT_EQ(status_of(id), kStatusQueued);
  clock_.advance(seconds(9));
  EXPECT_EQ(sweep().repairs(), 0u) << "within the grace of the repair";
  clock_.advance(seconds(2));
  EXPECT_EQ(sweep().traces_ended, 1u);
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kStatusTracingFailed);
  EXPECT_EQ(m->failure_summary, "the trace never started: its job was lost");
  EXPECT_FALSE(m->lock.has_value());
  EXPECT_TRUE(take_all(*queue_).empty());
  clock_.advance(kPastGrace);
  EXPECT_EQ(sweep().read, 0u);
  EXPECT_EQ(events(id), (std::vector<std::string>{"movie.tracing.started " + job, kRequeuedTrace,
                                                  "movie.tracing.failed " + job}));
  // The movie is free: it is traced again.
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  EXPECT_TRUE(movies_->start_trace(id, kAda, lease->lease_id).ok());
}

// The message sent again is claimed: the job runs, and the sweep leaves it.
TEST_F(SweepTest, ARequeuedJobThatIsClaimedIsLeftToItsWorker) {
  const auto [id, job] = queued_movie();
  ASSERT_EQ(drain_queue().size(), 1u);
  clock_.advance(kPastTracingTtl);
  EXPECT_EQ(sweep().traces_requeued, 1u);
  ASSERT_TRUE(claim(id, job).ok());
  clock_.advance(seconds(2));
  EXPECT_EQ(sweep().repairs(), 0u) << "its worker's lease is live";
  EXPECT_EQ(status_of(id), kStatusTracing);
}

// A worker that died after its claim, on a movie nobody reads: the sweep
// ends the job as a read would, once, with its audit.
TEST_F(SweepTest, ADeadWorkersJobIsEndedWithoutAReader) {
  const auto [id, job] = queued_movie();
  ASSERT_TRUE(claim(id, job).ok());
  EXPECT_EQ(sweep().repairs(), 0u);
  clock_.advance(kPastTracingTtl);
  EXPECT_EQ(sweep().dead_traces_ended, 1u);
  EXPECT_EQ(status_of(id), kStatusTracingFailed);
  EXPECT_EQ(sweep().read, 0u);
  EXPECT_EQ(events(id), (std::vector<std::string>{"movie.tracing.started " + job,
                                                  "movie.tracing.failed " + job}));
}

// A removal whose job was lost: its job again each grace until it is done.
TEST_F(SweepTest, AMovieLeftDeletingHasItsRemovalQueuedAgainUntilItIsGone) {
  const std::string id = removable_movie();
  ASSERT_TRUE(movies_->remove(id, "ada", false).ok());
  clock_.advance(seconds(9));
  EXPECT_EQ(sweep().repairs(), 0u);
  for (int n = 1; n <= 3; ++n) {
    clock_.advance(seconds(2));
    EXPECT_EQ(sweep().removals_requeued, 1u) << n;
    EXPECT_EQ(take_all(*probe_queue_), std::vector<std::string>{remove_job(id)});
    clock_.advance(seconds(8));
  }
  ASSERT_TRUE(movies_->finish_remove(id).ok());
  clock_.advance(kPastGrace);
  EXPECT_EQ(sweep().read, 0u);
  EXPECT_EQ(movies_->get(id).status().code(), Code::kNotFound);
  auto audit = store_->query(kAuditTable, movie_pk(id), KeyRange::all(), QueryOptions{});
  ASSERT_TRUE(audit.ok());
  EXPECT_TRUE(audit->items.empty()) << "the audit went with the movie";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "removable.avi"));
}

// Two processes sweep at once: the one whose write comes second finds the
// movie repaired already and does nothing, for every kind of repair. (Each
// queued the job before its write: one message too many, which its worker
// finds stale.)
TEST_F(SweepTest, TwoSweepsRacingRepairEachMovieOnce) {
  auto created = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(created.ok());
  const std::string processing = created->id;
  const std::string deleting = ready_movie();
  ASSERT_TRUE(movies_->remove(deleting, "ada", false).ok());
  const auto [queued, job] = queued_movie();
  ASSERT_EQ(drain_queue().size(), 1u);
  clock_.advance(kPastGrace);

  for (int round = 0; round < 2; ++round) {
    // Each repair of the racing sweep first lets the fixture's sweep run
    // whole (three times: one repair each).
    SweepReport first;
    const std::function<void()> race = [&] {
      const SweepReport r = sweep();
      first.probes_requeued += r.probes_requeued;
      first.traces_requeued += r.traces_requeued;
      first.traces_ended += r.traces_ended;
      first.removals_requeued += r.removals_requeued;
      racing_store_.before = race;
    };
    racing_store_.before = race;
    const SweepReport second = sweep(racing_.get());
    racing_store_.before = nullptr;
    EXPECT_EQ(second.repairs(), 0u) << round;
    EXPECT_EQ(first.probes_requeued, 1u) << round;
    EXPECT_EQ(first.removals_requeued, 1u) << round;
    EXPECT_EQ(round == 0 ? first.traces_requeued : first.traces_ended, 1u);
    clock_.advance(kPastGrace);
  }
  EXPECT_EQ(events(processing), (std::vector<std::string>{kRequeuedProbe, kRequeuedProbe}));
  EXPECT_EQ(events(queued),
            (std::vector<std::string>{"movie.tracing.started " + job, kRequeuedTrace,
                                      "movie.tracing.failed " + job}));
  EXPECT_EQ(get_int_or(raw(processing), attr::kSweeps), 2);
  EXPECT_EQ(get_int_or(raw(deleting), attr::kSweeps), 2);
}

// A sweep that read a movie as stuck, and whose write comes after the probe
// it took for dead: it changes nothing.
TEST_F(SweepTest, ASweepRacingTheProbeChangesNothing) {
  auto created = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(created.ok());
  const std::string id = created->id;
  clock_.advance(kPastGrace);
  racing_store_.before = [&] { ASSERT_TRUE(movies_->probe(id).ok()); };
  EXPECT_EQ(sweep(racing_.get()).repairs(), 0u);
  EXPECT_EQ(status_of(id), kStatusReady);
  EXPECT_EQ(get_string(raw(id), attr::kSweptFor), nullptr);
  EXPECT_TRUE(events(id).empty());
  // Its extra probe job is stale.
  EXPECT_EQ(take_all(*probe_queue_), std::vector<std::string>{probe_job(id)});
  EXPECT_EQ(movies_->probe(id).status().code(), Code::kFailedPrecondition);
}

// The same with the trace worker: its claim comes between the sweep's read
// and its write, when the sweep would send the message again and when it
// would end the job.
TEST_F(SweepTest, ASweepRacingTheTraceWorkerChangesNothing) {
  // Plain strings, not structured bindings, which clang's lambdas do not
  // capture before C++20's P1091.
  std::string id, job;
  std::tie(id, job) = queued_movie();
  ASSERT_EQ(drain_queue().size(), 1u);
  clock_.advance(kPastTracingTtl);
  racing_store_.before = [&] { ASSERT_TRUE(claim(id, job).ok()); };
  EXPECT_EQ(sweep(racing_.get()).repairs(), 0u);
  EXPECT_EQ(status_of(id), kStatusTracing);
  EXPECT_EQ(get_string(raw(id), attr::kSweptFor), nullptr);
  // The message it sent before its write: one too many, stale for a worker.
  EXPECT_EQ(take_all(*queue_), std::vector<std::string>{trace_job(id, job)});

  std::string other, other_job;
  std::tie(other, other_job) = queued_movie();
  ASSERT_EQ(drain_queue().size(), 1u);
  clock_.advance(kPastTracingTtl);
  EXPECT_EQ(sweep().traces_requeued, 1u);  // ends the first job too: its worker is gone
  clock_.advance(kPastGrace);
  racing_store_.before = [&] { ASSERT_TRUE(claim(other, other_job).ok()); };
  EXPECT_EQ(sweep(racing_.get()).traces_ended, 0u);
  EXPECT_EQ(status_of(other), kStatusTracing);
  EXPECT_EQ(events(other),
            (std::vector<std::string>{"movie.tracing.started " + other_job, kRequeuedTrace}));
}

// And with the removal: it finishes between the sweep's read and its write.
TEST_F(SweepTest, ASweepRacingTheRemovalChangesNothing) {
  const std::string id = removable_movie();
  ASSERT_TRUE(movies_->remove(id, "ada", false).ok());
  clock_.advance(kPastGrace);
  racing_store_.before = [&] { ASSERT_TRUE(movies_->finish_remove(id).ok()); };
  EXPECT_EQ(sweep(racing_.get()).repairs(), 0u);
  EXPECT_EQ(movies_->get(id).status().code(), Code::kNotFound);
  EXPECT_EQ(take_all(*probe_queue_), std::vector<std::string>{remove_job(id)});
  EXPECT_EQ(movies_->finish_remove(id).code(), Code::kNotFound);
}

// The Sweeper sweeps as its clock moves on, and at once when asked, and
// counts its sweeps and repairs.
TEST_F(SweepTest, TheSweeperSweepsAsItsClockMovesAndWhenAsked) {
  auto created = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(created.ok());
  metrics::Registry registry;
  SweeperOptions options;
  options.id = "s";
  options.every = seconds(1);
  options.sweep.grace = kGrace;
  options.metrics = &registry;
  const MonoTime start = clock_.mono_now();
  auto sweeper = Sweeper::start(*movies_, *probe_queue_, clock_, random_, options);
  ASSERT_TRUE(sweeper.ok()) << sweeper.status().to_string();
  // The clock moves on a little at each look, until a sweep past the
  // movie's grace has repaired it.
  ASSERT_TRUE(leasehold::testing::eventually(
      [&] {
        clock_.advance(milliseconds(200));
        return (*sweeper)->stats().repairs > 0;
      },
      seconds(20)));
  EXPECT_GE(clock_.mono_now() - start, kGrace);
  EXPECT_GE((*sweeper)->stats().sweeps, 2u) << "one sweep a period at least";
  // sweep_now() sweeps at once, the clock standing still.
  const uint64_t before = (*sweeper)->stats().sweeps;
  (*sweeper)->sweep_now();
  ASSERT_TRUE(leasehold::testing::eventually(
      [&] { return (*sweeper)->stats().sweeps > before; }, seconds(20)));
  EXPECT_EQ((*sweeper)->stats().repairs, 1u);
  EXPECT_EQ((*sweeper)->stats().failed, 0u);
  EXPECT_EQ(status_of(created->id), kStatusProcessing);
  EXPECT_EQ(take_all(*probe_queue_), std::vector<std::string>{probe_job(created->id)});
  const std::string text = registry.render();
  EXPECT_NE(text.find("leasehold_movies_sweep_repairs_total{repair=\"probe_requeued\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("leasehold_movies_sweeps_total{outcome=\"ok\"} "), std::string::npos) << text;
  (*sweeper)->stop();
  options.every = Duration::zero();
  EXPECT_EQ(Sweeper::start(*movies_, *probe_queue_, clock_, random_, options).status().code(),
            Code::kInvalidArgument);
}

// Times and counts another program wrote, however far off, are read
// without overflowing (fuzz/movies_stored_fuzz.cc found both): a time long
// past is past the grace, one in the future within it, and a count past
// any the sweep writes is past its most.
TEST_F(SweepTest, TimesAndCountsFarOffAreReadWithoutOverflow) {
  auto created = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(created.ok());
  const std::string id = created->id;
  const auto set = [&](const char* name, Value value) {
    Update u;
    u.set(name, std::move(value));
    ASSERT_TRUE(store_->update(kMoviesTable, movie_key(id), u, {}).ok());
  };
  set(attr::kSweptFor, std::string(kStatusProcessing));
  set(attr::kSweeps, int64_t{1});
  set(attr::kCreatedAtMs, INT64_MIN);
  set(attr::kProbeSeenAtMs, INT64_MIN);
  set(attr::kSweptAtMs, INT64_MAX);
  SweepReport r = sweep();
  EXPECT_EQ(r.read, 1u);
  EXPECT_EQ(r.repairs(), 0u) << "swept in the far future: within the grace";
  set(attr::kSweptAtMs, INT64_MIN);
  EXPECT_EQ(sweep().probes_requeued, 1u) << "every time long past";
  EXPECT_EQ(take_all(*probe_queue_), std::vector<std::string>{probe_job(id)});
  set(attr::kSweptAtMs, INT64_MIN);
  set(attr::kSweeps, INT64_MAX);
  EXPECT_EQ(sweep().probes_given_up, 1u) << "a count past the most";
  EXPECT_EQ(status_of(id), kStatusInvalid);
}

TEST_F(SweepTest, AGraceThatIsNotPositiveIsRefused) {
  EXPECT_EQ(movies_->sweep(*probe_queue_, SweepOptions{.grace = Duration::zero()}).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::movies::testing
