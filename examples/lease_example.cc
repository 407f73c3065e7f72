// A program that uses leasehold as an installed library: it opens a store,
// acquires a lease, keeps it alive with a Renewer, writes under it with a
// fenced write, and releases it. Built against the installed CMake package
// (examples/CMakeLists.txt), it is what a C++ user starts from.
//
//   lease_example STORE_URI KEY     e.g. lease_example sqlite:/tmp/ex.db job-1
//
// Prints one line per step and exits 0, or prints the failure and exits 1.
#include <leasehold/clock.h>
#include <leasehold/lease.h>
#include <leasehold/random.h>
#include <leasehold/renewer.h>
#include <leasehold/store.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

int fail(const char* step, const leasehold::Status& status) {
  std::fprintf(stderr, "lease_example: %s: %s\n", step, status.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lease_example STORE_URI KEY\n");
    return 2;
  }
  auto store = leasehold::open_store(argv[1]);
  if (!store.ok()) return fail("open_store", store.status());
  // The table this program keeps its leases in: key attribute "pk".
  const leasehold::TableSpec table{"example_leases", "pk", "", {}};
  if (const auto ready = (*store)->require_table(table); !ready.ok()) {
    return fail("require_table", ready);
  }

  leasehold::RealClock clock;
  leasehold::SystemRandom random;
  leasehold::LeaseConfig config;
  config.table = table.name;
  leasehold::LeaseManager leases(**store, clock, random, config);

  leasehold::AcquireOptions options;
  options.owner = "example";
  options.ttl = std::chrono::seconds(2);
  auto lease = leases.acquire({argv[2], ""}, options);
  if (!lease.ok()) return fail("acquire", lease.status());
  std::printf("acquired epoch %lld\n", static_cast<long long>(lease->epoch));

  // The Renewer keeps the lease alive in the background; wait until it has
  // renewed it at least once (its renew period is a third of the 1.4 s the
  // holder may trust a 2 s lease).
  leasehold::Renewer renewer(leases, clock, random);
  const auto id = renewer.add(*lease, [](const leasehold::Lease&, const leasehold::Status& why) {
    std::fprintf(stderr, "lease_example: lost the lease: %s\n", why.to_string().c_str());
  });
  renewer.start();
  const auto give_up = clock.mono_now() + std::chrono::seconds(10);
  while (renewer.get(id) && renewer.get(id)->expires_at_ms == lease->expires_at_ms) {
    if (clock.mono_now() > give_up)
      return fail("renew", leasehold::deadline_exceeded("no renewal"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto current = renewer.get(id);
  if (!current) return fail("renew", leasehold::failed_precondition("the lease was lost"));
  std::printf("renewed until %lld\n", static_cast<long long>(current->expires_at_ms));

  // A write that lands only while the lease is still ours.
  auto written = leases.fenced_write(*current, leasehold::Update().set("progress", int64_t{1}));
  if (!written.ok()) return fail("fenced_write", written.status());
  std::printf("fenced write done under epoch %lld\n", static_cast<long long>(current->epoch));

  auto latest = renewer.remove(id);
  renewer.stop();
  if (!latest) return fail("remove", leasehold::failed_precondition("the lease was lost"));
  if (const auto released = leases.release(*latest, leasehold::ReleaseMode::kExpire);
      !released.ok()) {
    return fail("release", released);
  }
  std::printf("released\n");
  return 0;
}
