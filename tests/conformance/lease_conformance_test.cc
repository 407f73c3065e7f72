// The lease layer on every backend (see store_conformance.h): LeaseManager
// and Renewer must mean the same on any store, so these cases run on each
// backend's factory. Time is simulated (SimulatedClock, moved by the test and
// by FaultyStore delays) except in RenewsOnRealTime.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>

#include "leasehold/lease.h"
#include "leasehold/renewer.h"
#include "testing/eventually.h"
#include "testing/faulty_store.h"
#include "tests/conformance/store_conformance.h"

namespace leasehold::conformance {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Counts update_each calls, to see heartbeats batched.
class CountingStore final : public store::StoreWrapper {
 public:
  explicit CountingStore(ItemStore& inner) : StoreWrapper(inner) {}
  using StoreWrapper::update_each;
  std::vector<Result<Item>> update_each(std::string_view t, std::span<const UpdateRequest> r,
                                        Duration timeout) override {
    ++batches;
    writes += r.size();
    return StoreWrapper::update_each(t, r, timeout);
  }
  std::atomic<int> batches{0};
  std::atomic<size_t> writes{0};
};

// ---------------------------------------------------------------- LeaseManager

void LeaseConformance::SetUp() {
  Result<std::unique_ptr<ItemStore>> made = GetParam().make();
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  inner_ = std::move(made).value();
  faulty_ = std::make_unique<store::FaultyStore>(*inner_, random_, store::FaultOptions{},
                                                 [this](Duration d) { clock_.advance(d); });
  leases_ = std::make_unique<LeaseManager>(*faulty_, clock_, random_);
  ASSERT_TRUE(faulty_->ensure_table(TableSpec{"leases", "pk", "", {}}).ok());
}

AcquireOptions LeaseConformance::as(std::string owner, Duration ttl) {
  AcquireOptions o;
  o.owner = std::move(owner);
  o.ttl = ttl;
  return o;
}

Item LeaseConformance::stored(const std::string& pk) {
  Result<Item> item = inner_->get("leases", {pk, ""}, true);
  EXPECT_TRUE(item.ok()) << pk << ": " << item.status().to_string();
  return item.ok() ? std::move(item).value() : Item{};
}

namespace {

TEST_P(LeaseConformance, OneHolderUntilExpiryThenEpochGoesUp) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->epoch, 1);
  EXPECT_TRUE(is_well_formed_token(a->token));

  auto b = leases_->acquire(key_, as("b"));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kAlreadyExists);

  clock_.advance(seconds(10) + milliseconds(1));
  EXPECT_FALSE(a->valid_at(clock_.mono_now()));
  b = leases_->acquire(key_, as("b"));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->epoch, 2);
  EXPECT_NE(b->token, a->token);
}

// A token chosen by the caller (a job ID sent ahead) is the lease's, also
// when the acquisition is resolved by reading back; a malformed one is
// refused with nothing written.
TEST_P(LeaseConformance, ACallersTokenNamesTheLease) {
  AcquireOptions o = as("a");
  o.token = "0123456789abcdef0123456789abcdef";
  faulty_->inject_next(store::Fault::kDropReply);
  auto a = leases_->acquire(key_, o);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->token, o.token);
  EXPECT_EQ(*get_string(stored(key_.pk), "lease_token"), o.token);
  ASSERT_TRUE(leases_->release(*a, ReleaseMode::kExpire).ok());

  o.token = "not a token";
  EXPECT_EQ(leases_->acquire(key_, o).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(*get_string(stored(key_.pk), "lease_token"), "0123456789abcdef0123456789abcdef");
}

TEST_P(LeaseConformance, ValidityIsTtlLessSkewAndMarginFromTheSendTime) {
  // The store takes 300 ms to apply the write: validity still counts from the send.
  faulty_->set_options({0, 0, 1.0, milliseconds(300)});
  const MonoTime sent = clock_.mono_now();
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->valid_until, sent + seconds(10) - milliseconds(500) - milliseconds(100));
  EXPECT_GT(clock_.mono_now(), sent);
}

TEST_P(LeaseConformance, RenewExtendsAndKeepsEpoch) {
  AcquireOptions o = as("a");
  o.holder = "pod-7";
  auto a = leases_->acquire(key_, o);
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(3));
  auto r = leases_->renew(*a);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->epoch, a->epoch);
  EXPECT_EQ(r->owner, "a");
  EXPECT_EQ(r->holder, "pod-7");
  EXPECT_EQ(r->token, a->token);
  EXPECT_EQ(r->acquired_at_ms, a->acquired_at_ms);
  // Renewed by token alone, the lease is read from the store, to the same effect.
  auto by_token = leases_->renew(LeaseRef{key_, "lease", "a", a->token}, seconds(10));
  ASSERT_TRUE(by_token.ok()) << by_token.status().to_string();
  EXPECT_EQ(by_token->owner, "a");
  EXPECT_EQ(by_token->holder, "pod-7");
  EXPECT_EQ(by_token->epoch, a->epoch);
  EXPECT_EQ(by_token->acquired_at_ms, a->acquired_at_ms);
  r = leases_->renew(*r);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->expires_at_ms, a->expires_at_ms + 3000);
  EXPECT_GT(r->valid_until, a->valid_until);
  EXPECT_EQ(*get_int(stored("k"), "lease_expires_at_ms"), r->expires_at_ms);
}

TEST_P(LeaseConformance, NoRenewalPastTheLocalDeadline) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  const Item before = stored("k");
  clock_.advance(seconds(10) - milliseconds(600));  // exactly the validity window
  auto r = leases_->renew(*a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("k"), before) << "a lease past its deadline must not even send a renewal";
}

TEST_P(LeaseConformance, RenewByTokenRefusesAnExpiredLease) {
  auto a = leases_->acquire(key_, as("a", seconds(2)));
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(2) + milliseconds(1));
  auto r = leases_->renew(LeaseRef{key_, "lease", "a", a->token}, seconds(2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
}

TEST_P(LeaseConformance, ReleaseModes) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(leases_->release(*a, ReleaseMode::kExpire).ok());
  auto v = leases_->inspect(key_);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->held);
  EXPECT_EQ(v->owner, "a") << "expire mode keeps the owner for history";
  EXPECT_EQ(v->expires_at_ms, 0);

  auto b = leases_->acquire(key_, as("b"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->epoch, 2);
  ASSERT_TRUE(leases_->release(*b, ReleaseMode::kClear).ok());
  const Item item = stored("k");
  EXPECT_FALSE(item.contains("lease_owner"));
  EXPECT_FALSE(item.contains("lease_token"));
  EXPECT_EQ(*get_int(item, "lease_epoch"), 2) << "clear mode never resets the epoch";

  auto c = leases_->acquire(key_, as("c"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->epoch, 3);
}

TEST_P(LeaseConformance, StaleTokensAreRefused) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(leases_->release(*a, ReleaseMode::kExpire).ok());
  auto b = leases_->acquire(key_, as("b"));
  ASSERT_TRUE(b.ok());
  const Item before = stored("k");
  EXPECT_EQ(leases_->release(*a, ReleaseMode::kClear).code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_->renew(*a).status().code(), Code::kFailedPrecondition);
  auto w = leases_->fenced_write(*a, Update().set("data", std::string("stale")));
  EXPECT_EQ(w.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("k"), before);

  w = leases_->fenced_write(*b, Update().set("data", std::string("fresh")));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*get_string(*w, "data"), "fresh");
}

TEST_P(LeaseConformance, FencedWriteIsNotSentPastTheDeadline) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(9) + milliseconds(400));
  auto w = leases_->fenced_write(*a, Update().set("data", std::string("late")));
  EXPECT_EQ(w.status().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(stored("k").contains("data"));
}

TEST_P(LeaseConformance, ReplaceEndsOneSlotAndStartsAnother) {
  AcquireOptions analysis = as("alice");
  analysis.slot = "analysis";
  auto a = leases_->acquire(key_, analysis);
  ASSERT_TRUE(a.ok());
  AcquireOptions tracing = as("worker");
  tracing.slot = "tracing";
  tracing.extra_update.set("status", std::string("tracing"));
  auto t = leases_->replace(*a, tracing);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->epoch, 1);
  const Item item = stored("k");
  EXPECT_FALSE(item.contains("analysis_token"));
  EXPECT_EQ(*get_int(item, "analysis_epoch"), 1);
  EXPECT_EQ(*get_string(item, "status"), "tracing");
  EXPECT_EQ(*get_string(item, "tracing_token"), t->token);

  // The analysis lease is gone: replacing it again fails as "not yours".
  auto again = leases_->replace(*a, tracing);
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition);
}

// A lease held elsewhere (a browser's, through a server) is named by its
// owner and token; with no local deadline, its writes check the expiry.
TEST_P(LeaseConformance, ALeaseHeldElsewhereWritesOnlyWhileMineAndUnexpired) {
  AcquireOptions analysis = as("alice");
  analysis.slot = "analysis";
  auto a = leases_->acquire(key_, analysis);
  ASSERT_TRUE(a.ok());
  const LeaseRef ref{key_, "analysis", "alice", a->token};
  ASSERT_TRUE(leases_->fenced_write(ref, Update().set("markers", std::string("m1"))).ok());
  LeaseRef wrong_owner = ref;
  wrong_owner.owner = "bob";
  EXPECT_EQ(
      leases_->fenced_write(wrong_owner, Update().set("markers", std::string("x"))).status().code(),
      Code::kFailedPrecondition);
  EXPECT_EQ(leases_
                ->fenced_write(ref, Update().set("markers", std::string("x")),
                               cond::eq("status", std::string("ready")))
                .status()
                .code(),
            Code::kConditionFailed);
  EXPECT_EQ(*get_string(stored("k"), "markers"), "m1");

  // Expired, though nobody took it: refused all the same.
  clock_.advance(seconds(10) + milliseconds(1));
  EXPECT_EQ(
      leases_->fenced_write(ref, Update().set("markers", std::string("late"))).status().code(),
      Code::kFailedPrecondition);
  AcquireOptions tracing = as("alice");
  tracing.slot = "tracing";
  EXPECT_EQ(leases_->replace(ref, tracing).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(*get_string(stored("k"), "markers"), "m1");
  EXPECT_FALSE(stored("k").contains("tracing_token"));
  LeaseRef malformed = ref;
  malformed.token = "nope";
  EXPECT_EQ(
      leases_->fenced_write(malformed, Update().set("markers", std::string("x"))).status().code(),
      Code::kInvalidArgument);
}

// The analysis lease of a page becomes the tracing lease of a job in one
// write; the page's late release then touches nothing.
TEST_P(LeaseConformance, ALeaseHeldElsewhereIsReplacedAndItsLateReleaseChangesNothing) {
  AcquireOptions analysis = as("alice");
  analysis.slot = "analysis";
  auto a = leases_->acquire(key_, analysis);
  ASSERT_TRUE(a.ok());
  const LeaseRef ref{key_, "analysis", "alice", a->token};
  AcquireOptions tracing = as("alice");
  tracing.slot = "tracing";
  tracing.extra_update.set("status", std::string("tracing"));
  auto t = leases_->replace(ref, tracing);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  const Item after = stored("k");
  EXPECT_FALSE(after.contains("analysis_token"));
  EXPECT_EQ(*get_string(after, "tracing_token"), t->token);
  EXPECT_EQ(leases_->release(ref, ReleaseMode::kClear).code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_->replace(ref, tracing).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("k"), after);

  // A new page takes the analysis lease while the job traces; it cannot
  // start a second trace over the live one.
  auto b = leases_->acquire(key_, analysis);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(
      leases_->replace(LeaseRef{key_, "analysis", "alice", b->token}, tracing).status().code(),
      Code::kAlreadyExists);
  EXPECT_EQ(*get_string(stored("k"), "tracing_token"), t->token);
}

TEST_P(LeaseConformance, ExtraConditionJoinsTheAcquireWrite) {
  AcquireOptions o = as("a");
  o.extra_condition = cond::eq("status", std::string("ready"));
  EXPECT_EQ(leases_->acquire(key_, o).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(inner_->get("leases", key_, true).status().code(), Code::kNotFound);
}

TEST_P(LeaseConformance, UnknownOutcomesAreResolvedByReadingBack) {
  faulty_->inject_next(store::Fault::kDropReply);
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(*get_string(stored("k"), "lease_token"), a->token);

  faulty_->inject_next(store::Fault::kDropReply);
  auto r = leases_->renew(*a);
  ASSERT_TRUE(r.ok()) << r.status().to_string();

  // The acquire write was lost before applying: the read-back says so.
  faulty_->inject_next(store::Fault::kUnavailable);
  EXPECT_EQ(leases_->acquire({"other", ""}, as("b")).status().code(), Code::kUnavailable);
  EXPECT_EQ(inner_->get("leases", {"other", ""}, true).status().code(), Code::kNotFound);

  // Applied but unreported, and the read-back fails every time: unavailable,
  // never a lease the caller believes it has without proof.
  for (int i = 0; i < 4; ++i)
    faulty_->inject_next(i == 0 ? store::Fault::kDropReply : store::Fault::kUnavailable);
  EXPECT_EQ(leases_->acquire({"third", ""}, as("c")).status().code(), Code::kUnavailable);
}

// The acquire write was lost on its way, yet reported as an unknown outcome
// (a connection dropped after sending): "held by another owner" only when
// another owner's live lease is there; otherwise unavailable, and a retry
// takes the lease.
TEST_P(LeaseConformance, AnAcquireLostOnItsWayIsNeverReportedAsHeld) {
  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(leases_->acquire(key_, as("a")).status().code(), Code::kUnavailable);
  EXPECT_EQ(inner_->get("leases", key_, true).status().code(), Code::kNotFound);
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->epoch, 1);

  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(leases_->acquire(key_, as("b")).status().code(), Code::kAlreadyExists);

  clock_.advance(seconds(10) + milliseconds(1));  // a's lease has expired
  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(leases_->acquire(key_, as("b")).status().code(), Code::kUnavailable);
  EXPECT_EQ(*get_string(stored("k"), "lease_token"), a->token);
  auto b = leases_->acquire(key_, as("b"));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->epoch, 2);
}

// The stream fleet's reference pattern, sharing the table: it takes an
// expired (or released) lease by setting only the owner and the expiry, and
// knows nothing of tokens or epochs.
Status take_as_reference_worker(ItemStore& store, const Key& key, const std::string& worker,
                                int64_t now_ms) {
  return store
      .update("leases", key,
              Update().set("lease_owner", worker).set("lease_expires_at_ms", now_ms + 60'000),
              cond::not_exists("lease_owner") || cond::lt("lease_expires_at_ms", now_ms))
      .status();
}

// After such a takeover the old token is still in the slot. Every holder-side
// write of the old holder must fail, even one sent while its lease was still
// valid locally and delivered late (modelled by a lease whose local deadline
// is pushed out): they all name the owner as well as the token.
TEST_P(LeaseConformance, ATokenlessTakeoverDefeatsEveryWriteOfTheOldHolder) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(10) + milliseconds(1));
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  ASSERT_TRUE(take_as_reference_worker(*inner_, key_, "F", now_ms).ok());
  const Item taken = stored("k");
  ASSERT_EQ(*get_string(taken, "lease_token"), a->token);

  Lease in_flight = *a;
  in_flight.valid_until = clock_.mono_now() + seconds(1);
  const LeaseRef ref{key_, "lease", "a", a->token};
  EXPECT_EQ(leases_->release(ref, ReleaseMode::kExpire).code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_->release(ref, ReleaseMode::kClear).code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_->renew(ref, seconds(10)).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_->renew(in_flight).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_->renew_each(std::span(&in_flight, 1))[0].status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(
      leases_->fenced_write(in_flight, Update().set("data", std::string("stale"))).status().code(),
      Code::kFailedPrecondition);
  AcquireOptions tracing = as("a");
  tracing.slot = "tracing";
  EXPECT_EQ(leases_->replace(in_flight, tracing).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("k"), taken) << "F's lease must be untouched";
  EXPECT_EQ(leases_->acquire(key_, as("b")).status().code(), Code::kAlreadyExists);
}

// A holder handing a lease over writes its last checkpoint in the release
// itself: one write, applied whole or not at all.
TEST_P(LeaseConformance, AReleaseCarriesAnUpdateInTheSameWrite) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  const Update checkpoint = Update().set("last_seq", int64_t{41});
  EXPECT_EQ(leases_->release(*a, ReleaseMode::kClear, checkpoint).code(), Code::kInvalidArgument);
  EXPECT_FALSE(stored("k").contains("last_seq"));
  ASSERT_TRUE(leases_->release(*a, ReleaseMode::kExpire, checkpoint).ok());
  Item item = stored("k");
  EXPECT_EQ(*get_int(item, "last_seq"), 41);
  EXPECT_EQ(*get_int(item, "lease_expires_at_ms"), 0);

  // Once another owner holds it, neither the release nor its update applies.
  auto b = leases_->acquire(key_, as("b"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(
      leases_->release(*a, ReleaseMode::kExpire, Update().set("last_seq", int64_t{99})).code(),
      Code::kFailedPrecondition);
  EXPECT_EQ(*get_int(stored("k"), "last_seq"), 41);

  // An answer lost on its way back: the read-back shows the release applied.
  faulty_->inject_next(store::Fault::kDropReply);
  ASSERT_TRUE(
      leases_->release(*b, ReleaseMode::kExpire, Update().set("last_seq", int64_t{50})).ok());
  EXPECT_EQ(*get_int(stored("k"), "last_seq"), 50);

  // A request lost on its way, and a token-less writer took the lease since:
  // the update did not apply, and the holder must not be told it did.
  auto c = leases_->acquire(key_, as("c"));
  ASSERT_TRUE(c.ok());
  clock_.advance(seconds(10) + milliseconds(1));
  ASSERT_TRUE(take_as_reference_worker(*inner_, key_, "F", to_unix_ms(clock_.wall_now())).ok());
  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(
      leases_->release(*c, ReleaseMode::kExpire, Update().set("last_seq", int64_t{60})).code(),
      Code::kFailedPrecondition);
  EXPECT_EQ(*get_int(stored("k"), "last_seq"), 50);
}

// A write whose outcome is unknown is resolved by reading the slot back; a
// live lease of a token-less writer there is "held", whatever token the slot
// kept (here none: the last holder cleared it).
TEST_P(LeaseConformance, AReadBackSeesATokenlessLeaseAsHeld) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(leases_->release(*a, ReleaseMode::kClear).ok());
  ASSERT_TRUE(take_as_reference_worker(*inner_, key_, "F", to_unix_ms(clock_.wall_now())).ok());
  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(leases_->acquire(key_, as("b")).status().code(), Code::kAlreadyExists);
  // And an acquire of ours that applied is ours only with our owner and token.
  clock_.advance(seconds(61));
  faulty_->inject_next(store::Fault::kDropReply);
  auto b = leases_->acquire(key_, as("b"));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->epoch, 2) << "the token-less takeover did not raise the epoch";
}

// A renewal held on its way (a request the client gave up on, which the
// server applies later) reaches the store after a later renewal of the same
// lease. It must not move the expiry back under the later one, which the
// holder already trusts.
TEST_P(LeaseConformance, ARenewalDeliveredLateNeverShortensALaterOne) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(3));
  faulty_->inject_next(store::Fault::kDeliverLate);
  auto first = leases_->renew(*a);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), Code::kUnavailable) << "not applied yet: retry";
  clock_.advance(seconds(2));
  auto second = leases_->renew(*a);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  ASSERT_EQ(faulty_->deliver_late(), 1u);
  EXPECT_EQ(*get_int(stored("k"), "lease_expires_at_ms"), second->expires_at_ms);
  EXPECT_EQ(*get_int(stored("k"), "lease_heartbeat_at_ms"), second->heartbeat_at_ms);
}

// A store that answers after the lease's local deadline: by then its expiry
// may have passed. The lease is given back instead of returned, so that the
// caller never acts on it and the next taker need not wait.
TEST_P(LeaseConformance, AnAcquireAnsweredAfterItsDeadlineIsGivenBack) {
  faulty_->delay_next(seconds(10) - milliseconds(600));
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Code::kDeadlineExceeded) << a.status().to_string();
  EXPECT_EQ(*get_int(stored("k"), "lease_expires_at_ms"), 0) << "given back";
  auto b = leases_->acquire(key_, as("b"));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->epoch, 2);
  // Just inside the deadline, it is returned as usual.
  clock_.advance(seconds(11));
  faulty_->delay_next(seconds(10) - milliseconds(601));
  EXPECT_TRUE(leases_->acquire(key_, as("c")).ok());
}

// A batch of fenced writes: each is judged as fenced_write() would judge
// it alone, and only the ones still ours apply.
TEST_P(LeaseConformance, FencedWritesInOneBatchAreEachJudgedAlone) {
  const Key lost_key{"lost", ""}, late_key{"late", ""}, cond_key{"cond", ""};
  auto mine = leases_->acquire(key_, as("a"));
  auto lost = leases_->acquire(lost_key, as("a"));
  ASSERT_TRUE(mine.ok() && lost.ok());
  clock_.advance(seconds(5));
  auto late = leases_->acquire(late_key, as("a"));
  auto cond = leases_->acquire(cond_key, as("a"));
  ASSERT_TRUE(late.ok() && cond.ok());
  mine = leases_->renew(*mine);
  ASSERT_TRUE(mine.ok());
  clock_.advance(seconds(5) + milliseconds(1));  // lost's lease has expired
  ASSERT_TRUE(leases_->acquire(lost_key, as("b")).ok());
  Lease taken_over = *lost;  // as a holder that slept through its deadline sees it
  taken_over.valid_until = clock_.mono_now() + seconds(1);
  Lease past = *late;
  past.valid_until = clock_.mono_now();
  const Item lost_before = stored("lost");

  const std::vector<FencedWrite> writes = {
      {&*mine, Update().set("data", std::string("mine")), {}},
      {&taken_over, Update().set("data", std::string("stale")), {}},
      {&past, Update().set("data", std::string("late")), {}},
      {&*cond, Update().set("data", std::string("cond")), cond::exists("never")},
  };
  CountingStore counting(*faulty_);
  const std::vector<Result<Item>> results =
      LeaseManager(counting, clock_, random_).fenced_write_each(writes);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(counting.batches, 1) << "one store call";
  EXPECT_EQ(counting.writes, 3u) << "the write past its deadline is not sent";
  ASSERT_TRUE(results[0].ok()) << results[0].status().to_string();
  EXPECT_EQ(*get_string(stored("k"), "data"), "mine");
  EXPECT_EQ(results[1].status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("lost"), lost_before);
  EXPECT_EQ(results[2].status().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(stored("late").contains("data"));
  EXPECT_EQ(results[3].status().code(), Code::kConditionFailed);
  EXPECT_FALSE(stored("cond").contains("data"));
}

// A stopping holder gives many leases back in one store call, each with its
// final update; each release is judged alone, as release() would judge it.
TEST_P(LeaseConformance, ReleasesInOneBatchAreEachJudgedAlone) {
  const Key other{"other", ""}, taken{"taken", ""};
  auto mine = leases_->acquire(key_, as("a"));
  auto second = leases_->acquire(other, as("a"));
  auto lost = leases_->acquire(taken, as("a"));
  ASSERT_TRUE(mine.ok() && second.ok() && lost.ok());
  clock_.advance(seconds(10) + milliseconds(1));  // all three have expired
  mine = leases_->acquire(key_, as("a"));
  second = leases_->acquire(other, as("a"));
  ASSERT_TRUE(mine.ok() && second.ok());
  ASSERT_TRUE(leases_->acquire(taken, as("b")).ok());
  Lease stale = *lost;  // as a holder that slept through its deadline sees it
  stale.valid_until = clock_.mono_now() + seconds(1);
  const Item taken_before = stored("taken");

  const std::vector<Release> releases = {
      {&*mine, Update().set("last_seq", int64_t{7})},
      {&stale, Update().set("last_seq", int64_t{8})},
      {&*second, {}},
  };
  CountingStore counting(*faulty_);
  const std::vector<Status> results =
      LeaseManager(counting, clock_, random_).release_each(releases);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(counting.batches, 1) << "one store call";
  EXPECT_TRUE(results[0].ok()) << results[0].to_string();
  EXPECT_EQ(*get_int(stored("k"), "last_seq"), 7);
  EXPECT_EQ(*get_int(stored("k"), "lease_expires_at_ms"), 0);
  EXPECT_EQ(results[1].code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("taken"), taken_before);
  EXPECT_TRUE(results[2].ok()) << results[2].to_string();
  EXPECT_EQ(*get_int(stored("other"), "lease_expires_at_ms"), 0);
  // Released: free at once, and the next holder's epoch is above.
  auto next = leases_->acquire(key_, as("c"));
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(next->epoch, mine->epoch + 1);

  // No answer from the store: the read-back shows the release applied.
  faulty_->inject_next(store::Fault::kDropReply);
  const std::vector<Release> unanswered = {{&*next, Update().set("last_seq", int64_t{9})}};
  const std::vector<Status> resolved = leases_->release_each(unanswered);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_TRUE(resolved[0].ok()) << resolved[0].to_string();
  EXPECT_EQ(*get_int(stored("k"), "last_seq"), 9);
  EXPECT_EQ(*get_int(stored("k"), "lease_expires_at_ms"), 0);
}

// A fenced write without an answer: the read-back tells a lease still ours
// (kUnknownOutcome: the write may or may not have applied) from a lease lost
// meanwhile (kFailedPrecondition).
TEST_P(LeaseConformance, FencedWritesWithoutAnAnswerAreResolvedAsFarAsTheyCanBe) {
  auto a = leases_->acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  faulty_->inject_next(store::Fault::kDropReply);
  auto w = leases_->fenced_write(*a, Update().add("n", 1));
  EXPECT_EQ(w.status().code(), Code::kUnknownOutcome);
  EXPECT_EQ(*get_int(stored("k"), "n"), 1);
  faulty_->inject_next(store::Fault::kLoseRequest);
  w = leases_->fenced_write(*a, Update().add("n", 1));
  EXPECT_EQ(w.status().code(), Code::kUnknownOutcome);
  EXPECT_EQ(*get_int(stored("k"), "n"), 1);

  Lease in_flight = *a;
  clock_.advance(seconds(10) + milliseconds(1));
  in_flight.valid_until = clock_.mono_now() + seconds(1);
  ASSERT_TRUE(take_as_reference_worker(*inner_, key_, "F", to_unix_ms(clock_.wall_now())).ok());
  faulty_->inject_next(store::Fault::kLoseRequest);
  w = leases_->fenced_write(in_flight, Update().add("n", 1));
  EXPECT_EQ(w.status().code(), Code::kFailedPrecondition);
}

// Two holders' wall clocks differ (within the allowed skew). A renewal from
// a clock behind the last stored heartbeat is refused by the store, yet the
// lease is still ours: that is a failure to retry, never a loss.
TEST_P(LeaseConformance, ARenewalBehindTheStoredHeartbeatIsRetriedNotLost) {
  OffsetClock ahead(clock_, milliseconds(300));
  LeaseManager from_ahead(*faulty_, ahead, random_);
  auto a = from_ahead.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  auto r = leases_->renew(LeaseRef{key_, "lease", "a", a->token}, seconds(10));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().to_string();
  clock_.advance(milliseconds(301));
  r = leases_->renew(LeaseRef{key_, "lease", "a", a->token}, seconds(10));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
}

// A session's leases: kept by its heartbeat, taken once it has expired and
// been ended, whatever their own expiry.
TEST_P(LeaseConformance, ASessionsLeasesAreTakenOnlyOnceItIsEnded) {
  const Key session_key{"session-a", ""};
  auto session = leases_->acquire(session_key, as("a", seconds(3)));
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  AcquireOptions bound = as("a", seconds(600));
  bound.session = session->token;
  auto a = leases_->acquire(key_, bound);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->session, session->token);
  EXPECT_EQ(*get_string(stored("k"), "lease_session"), session->token);
  auto view = leases_->inspect(key_);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->session, session->token);

  const LeaseRef session_ref{session_key, "lease", "a", session->token};
  AcquireOptions taker = as("b", seconds(600));
  taker.ended_session = AcquireOptions::SessionRef{"a", session->token};
  // Live: it cannot be ended, and its lease is held by its own expiry.
  EXPECT_EQ(leases_->end_session(session_ref).code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_->acquire(key_, as("b")).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(*get_int(stored("session-a"), "lease_expires_at_ms"), session->expires_at_ms);

  clock_.advance(seconds(3) + milliseconds(1));
  ASSERT_TRUE(leases_->end_session(session_ref).ok());
  EXPECT_EQ(*get_int(stored("session-a"), "lease_expires_at_ms"), 0);
  EXPECT_TRUE(leases_->end_session(session_ref).ok()) << "ending is idempotent";
  // Ended: no renewal brings it back, even one sent with a clock far behind.
  EXPECT_EQ(leases_->renew(session_ref, seconds(3)).status().code(), Code::kFailedPrecondition);

  auto b = leases_->acquire(key_, taker);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->epoch, a->epoch + 1);
  EXPECT_FALSE(stored("k").contains("lease_session"))
      << "a lease taken without a session keeps none of the old one";
  EXPECT_EQ(leases_->fenced_write(*a, Update().set("data", std::string("late"))).status().code(),
            Code::kFailedPrecondition);
}

// Why a session is ended before its leases are taken: a renewal its holder
// sent while the session was valid may reach the store after the session
// has expired by a taker's clock (held in the network), and would then
// extend a session whose leases are being taken. Once ended, it cannot.
TEST_P(LeaseConformance, ARenewalArrivingAfterTheEndDoesNotReviveTheSession) {
  const Key session_key{"session-a", ""};
  auto session = leases_->acquire(session_key, as("a", seconds(3)));
  ASSERT_TRUE(session.ok());
  clock_.advance(seconds(2));
  faulty_->inject_next(store::Fault::kDeliverLate);
  (void)leases_->renew(*session);  // held on its way
  clock_.advance(seconds(1) + milliseconds(1));
  ASSERT_TRUE(leases_->end_session(LeaseRef{session_key, "lease", "a", session->token}).ok());
  ASSERT_EQ(faulty_->deliver_late(), 1u);
  EXPECT_EQ(*get_int(stored("session-a"), "lease_expires_at_ms"), 0);
}

// An end without an answer is decided by reading the session back: ended
// if the write applied, to be retried (kUnavailable) if it was lost.
TEST_P(LeaseConformance, AnEndWithoutAnAnswerIsResolvedByReadingBack) {
  const Key session_key{"session-a", ""};
  auto session = leases_->acquire(session_key, as("a", seconds(3)));
  ASSERT_TRUE(session.ok());
  const LeaseRef ref{session_key, "lease", "a", session->token};
  clock_.advance(seconds(3) + milliseconds(1));

  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(leases_->end_session(ref).code(), Code::kUnavailable);
  EXPECT_EQ(*get_int(stored("session-a"), "lease_expires_at_ms"), session->expires_at_ms)
      << "not ended: the write never reached the store";

  faulty_->inject_next(store::Fault::kDropReply);
  EXPECT_TRUE(leases_->end_session(ref).ok());
  EXPECT_EQ(*get_int(stored("session-a"), "lease_expires_at_ms"), 0);
}

// A lease its owner took again under a new session is not the old
// session's: ending the old one frees nothing.
TEST_P(LeaseConformance, AnEndedSessionFreesOnlyTheLeasesStillItsOwn) {
  const Key session_key{"session-a", ""};
  auto first = leases_->acquire(session_key, as("a", seconds(3)));
  ASSERT_TRUE(first.ok());
  AcquireOptions bound = as("a", seconds(600));
  bound.session = first->token;
  auto a1 = leases_->acquire(key_, bound);
  ASSERT_TRUE(a1.ok());
  ASSERT_TRUE(leases_->release(*a1, ReleaseMode::kExpire).ok());

  clock_.advance(seconds(4));
  auto second = leases_->acquire(session_key, as("a", seconds(3)));  // a new session
  ASSERT_TRUE(second.ok());
  bound.session = second->token;
  auto a2 = leases_->acquire(key_, bound);
  ASSERT_TRUE(a2.ok()) << a2.status().to_string();

  // The first session was replaced: it counts as ended.
  EXPECT_TRUE(leases_->end_session(LeaseRef{session_key, "lease", "a", first->token}).ok());
  EXPECT_EQ(*get_int(stored("session-a"), "lease_expires_at_ms"), second->expires_at_ms)
      << "ending an old session leaves the new one alone";
  AcquireOptions taker = as("b", seconds(600));
  taker.ended_session = AcquireOptions::SessionRef{"a", first->token};
  EXPECT_EQ(leases_->acquire(key_, taker).status().code(), Code::kAlreadyExists);
  // Nor does another owner's session of the same token name free it.
  taker.ended_session = AcquireOptions::SessionRef{"c", second->token};
  EXPECT_EQ(leases_->acquire(key_, taker).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(*get_string(stored("k"), "lease_owner"), "a");

  // A session whose item is gone can never be renewed either.
  EXPECT_TRUE(leases_->end_session(LeaseRef{{"nothing", ""}, "lease", "a", first->token}).ok());
  // Bad input changes nothing.
  EXPECT_EQ(leases_->end_session(LeaseRef{session_key, "lease", "a", "nope"}).code(),
            Code::kInvalidArgument);
  bound.session = "not a token";
  EXPECT_EQ(leases_->acquire({"k2", ""}, bound).status().code(), Code::kInvalidArgument);
}

// A lease of an ended session that nobody will take (its item is not to be
// worked on) is released on its holder's behalf, so that the item is free
// as soon as it is wanted, not when the lease's own ttl runs out; and
// nothing its dead holder sent can land on it afterwards.
TEST_P(LeaseConformance, ALeaseOfAnEndedSessionIsReleasedOnItsHoldersBehalf) {
  const Key session_key{"session-a", ""};
  auto session = leases_->acquire(session_key, as("a", seconds(3)));
  ASSERT_TRUE(session.ok());
  AcquireOptions bound = as("a", seconds(600));
  bound.session = session->token;
  auto a = leases_->acquire(key_, bound);
  ASSERT_TRUE(a.ok());
  const AcquireOptions::SessionRef ended{"a", session->token};

  clock_.advance(seconds(3) + milliseconds(1));
  ASSERT_TRUE(leases_->end_session(LeaseRef{session_key, "lease", "a", session->token}).ok());
  faulty_->inject_next(store::Fault::kDropReply);
  ASSERT_TRUE(leases_->release_ended(key_, ended).ok()) << "an unknown outcome is read back";
  const Item released = stored("k");
  EXPECT_EQ(*get_int(released, "lease_expires_at_ms"), 0);
  EXPECT_EQ(*get_string(released, "lease_owner"), "a") << "the owner stays, for history";
  EXPECT_FALSE(released.contains("lease_token"));
  EXPECT_FALSE(released.contains("lease_session")) << "out of the session's index";
  EXPECT_EQ(leases_->fenced_write(*a, Update().set("data", std::string("late"))).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(leases_->release_ended(key_, ended).code(), Code::kFailedPrecondition)
      << "released already";

  auto b = leases_->acquire(key_, as("b", seconds(600)));
  ASSERT_TRUE(b.ok()) << "free at once, though its own ttl had ten minutes left";
  EXPECT_EQ(b->epoch, a->epoch + 1);
  EXPECT_EQ(leases_->release_ended(key_, ended).code(), Code::kFailedPrecondition);
  EXPECT_EQ(*get_string(stored("k"), "lease_owner"), "b") << "another's lease stays";
  EXPECT_EQ(leases_->release_ended(key_, {"a", "not a token"}).code(), Code::kInvalidArgument);
}

TEST_P(LeaseConformance, TimingChecks) {
  EXPECT_EQ(leases_->acquire(key_, as("a", milliseconds(800))).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(leases_->check_timing(milliseconds(1500), milliseconds(400)).ok());
  EXPECT_FALSE(leases_->check_timing(milliseconds(1500), milliseconds(500)).ok());
  EXPECT_TRUE(leases_->check_timing(seconds(20), leases_->default_renew_every(seconds(20))).ok());
}

TEST_P(LeaseConformance, BadInputChangesNothing) {
  AcquireOptions o = as("");
  EXPECT_EQ(leases_->acquire(key_, o).status().code(), Code::kInvalidArgument);
  o = as("a");
  o.slot = "Bad-Slot";
  EXPECT_EQ(leases_->acquire(key_, o).status().code(), Code::kInvalidArgument);
  o = as(std::string("a\nb"));
  EXPECT_EQ(leases_->acquire(key_, o).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(leases_->release(LeaseRef{key_, "lease", "a", "zz"}, ReleaseMode::kClear).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(leases_->acquire({"", ""}, as("a")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(inner_->get("leases", key_, true).status().code(), Code::kNotFound);
}

}  // namespace

// ---------------------------------------------------------------- Renewer

RenewerConformance::~RenewerConformance() = default;

void RenewerConformance::SetUp() {
  Result<std::unique_ptr<ItemStore>> made = GetParam().make();
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  inner_ = std::move(made).value();
  faulty_ = std::make_unique<store::FaultyStore>(*inner_, random_);
  counting_ = std::make_unique<CountingStore>(*faulty_);
  leases_ = std::make_unique<LeaseManager>(*counting_, clock_, random_);
  ASSERT_TRUE(counting_->ensure_table(TableSpec{"leases", "pk", "", {}}).ok());
}

Lease RenewerConformance::acquire(const std::string& key, Duration ttl) {
  AcquireOptions o;
  o.owner = "me";
  o.ttl = ttl;
  auto lease = leases_->acquire({key, ""}, o);
  EXPECT_TRUE(lease.ok()) << lease.status().to_string();
  return *lease;
}

void RenewerConformance::run_for(Renewer& renewer, Duration total, Duration step) {
  for (Duration t{}; t < total; t += step) {
    clock_.advance(step);
    renewer.poll();
  }
}

namespace {

TEST_P(RenewerConformance, KeepsManyLeasesAliveInFewBatches) {
  // Enough leases that one write per store call would far exceed the batch
  // bound below, few enough for a remote store (one round trip per write
  // through FaultyStore) to stay quick.
  constexpr int kLeases = 200;
  Renewer renewer(*leases_, clock_, random_);
  int lost = 0;
  std::vector<Renewer::Id> ids;
  for (int i = 0; i < kLeases; ++i) {
    ids.push_back(renewer.add(acquire("k" + std::to_string(i)), [&](auto&, auto&) { ++lost; }));
  }
  run_for(renewer, seconds(60));
  EXPECT_EQ(lost, 0);
  for (Renewer::Id id : ids) {
    auto lease = renewer.get(id);
    ASSERT_TRUE(lease.has_value());
    ASSERT_TRUE(lease->valid_at(clock_.mono_now()));
    const Item item = *inner_->get("leases", lease->key, true);
    ASSERT_GT(*get_int(item, "lease_expires_at_ms"), to_unix_ms(clock_.wall_now()));
  }
  // About 60 s / 3.1 s = 19 renewals per lease, yet at most one batch per
  // batch window, however many leases there are.
  EXPECT_GE(counting_->writes.load(), size_t{kLeases} * 17);
  const auto window_ms = to_ms(RenewerOptions{}.batch_window);
  EXPECT_LE(counting_->batches.load(), 60'000 / window_ms + 10);
}

TEST_P(RenewerConformance, ReportsATakenLeaseAtOnce) {
  Renewer renewer(*leases_, clock_, random_);
  Lease mine = acquire("k");
  std::optional<Status> why;
  const Renewer::Id id = renewer.add(mine, [&](const Lease&, const Status& s) { why = s; });
  ASSERT_TRUE(leases_->release(mine, ReleaseMode::kClear).ok());
  acquire("k");  // someone else
  run_for(renewer, seconds(4));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->code(), Code::kFailedPrecondition);
  EXPECT_FALSE(renewer.get(id).has_value());
  EXPECT_EQ(renewer.size(), 0u);
}

TEST_P(RenewerConformance, ReportsLossBeforeTheDeadlineWhenTheStoreIsDown) {
  Renewer renewer(*leases_, clock_, random_);
  const Lease mine = acquire("k");
  std::optional<MonoTime> reported_at;
  renewer.add(mine, [&](const Lease& lease, const Status& s) {
    reported_at = clock_.mono_now();
    EXPECT_EQ(s.code(), Code::kDeadlineExceeded);
    EXPECT_LT(clock_.mono_now(), lease.valid_until) << "the callback must come before the deadline";
  });
  faulty_->set_options({1.0, 0, 0, {}});
  run_for(renewer, seconds(12));
  ASSERT_TRUE(reported_at.has_value());
  EXPECT_LT(*reported_at, mine.valid_until);
}

TEST_P(RenewerConformance, RetriesThroughABriefOutage) {
  Renewer renewer(*leases_, clock_, random_);
  int lost = 0;
  const Renewer::Id id = renewer.add(acquire("k"), [&](auto&, auto&) { ++lost; });
  faulty_->set_options({1.0, 0, 0, {}});
  run_for(renewer, seconds(4));
  faulty_->set_options({});
  run_for(renewer, seconds(20));
  EXPECT_EQ(lost, 0);
  EXPECT_TRUE(renewer.get(id).has_value());
}

TEST_P(RenewerConformance, RemoveReturnsTheLatestLease) {
  Renewer renewer(*leases_, clock_, random_);
  const Lease first = acquire("k");
  const Renewer::Id id = renewer.add(first, nullptr);
  run_for(renewer, seconds(5));
  auto latest = renewer.remove(id);
  ASSERT_TRUE(latest.has_value());
  EXPECT_GT(latest->expires_at_ms, first.expires_at_ms);
  EXPECT_FALSE(renewer.remove(id).has_value());
}

// Real threads and the real clock, straight on the factory's store: about a
// second of wall time.
TEST_P(RenewerConformance, RenewsOnRealTime) {
  RealClock clock;
  SystemRandom random;
  LeaseManager leases(*inner_, clock, random);
  AcquireOptions o;
  o.owner = "me";
  o.ttl = milliseconds(1500);
  auto lease = leases.acquire({"k", ""}, o);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  Renewer renewer(leases, clock, random);
  renewer.start();
  const Renewer::Id id = renewer.add(*lease, nullptr);
  // Wait (with a deadline) until the lease has been renewed past its first expiry.
  bool lost = false;
  const bool renewed_twice = testing::eventually(
      [&] {
        const std::optional<Lease> now = renewer.get(id);
        lost = !now.has_value();
        return lost || now->expires_at_ms > lease->expires_at_ms + 500;
      },
      seconds(10), milliseconds(20));
  renewer.stop();
  ASSERT_FALSE(lost) << "lease lost";
  EXPECT_TRUE(renewed_twice);
}

}  // namespace
}  // namespace leasehold::conformance
