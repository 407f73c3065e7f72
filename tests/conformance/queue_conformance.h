// The job queue's contract (include/leasehold/queue.h), which every Queue
// keeps whatever it is built on: StoreQueue on each store
// (queue_conformance_test.cc instantiates it through store_queue_backend()),
// SqsQueue on SQS (tests/aws/sqs_queue_test.cc). A backend joins with one line:
//
//   INSTANTIATE_TEST_SUITE_P(Sqs, QueueConformance,
//                            ::testing::Values(QueueBackendFactory{"sqs", make_sqs}),
//                            queue_backend_name);
//
// The cases speak only through Queue and a QueueBackend, which owns the time
// the queue lives in: simulated time that the test moves for a store queue,
// real time for SQS (a visibility of a second: SQS counts in seconds). What
// a backend may not promise is said by its flags, and its cases check the
// weaker promise instead (for SQS, the differences its header lists).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "leasehold/queue.h"
#include "tests/conformance/store_conformance.h"

namespace leasehold::conformance {

class QueueBackend {
 public:
  virtual ~QueueBackend() = default;
  // Queue `name` of this test, delivering each message `max_receives` times;
  // a second call with the same name is a second receiver on the same queue
  // (as another process would open it). Null, with a test failure, if it
  // cannot be made.
  virtual std::unique_ptr<Queue> open(const std::string& name, int max_receives) = 0;
  // The visibility timeout the cases use.
  virtual Duration visibility() const = 0;
  // Lets `d` go by on the queue's clock.
  virtual void pass(Duration d) = 0;
  // Unix ms on the clock the queue's times are in.
  virtual int64_t now_ms() = 0;
  // How far a time the queue reports (sent_at_ms) may lie from now_ms()
  // around it: 0 on one clock, more where a server keeps the time.
  virtual Duration clock_tolerance() const = 0;
  // The messages queue `name` holds, visible, hidden or dead.
  virtual int64_t held(const std::string& name) = 0;
  // Whether remove() tells a stale receipt (kFailedPrecondition) and a
  // removed message (kNotFound) apart from a success.
  virtual bool detects_stale_receipts() const = 0;
  // Whether dead letters are paged and redrive() keeps the message's ID.
  virtual bool dead_letters_keep_ids_and_pages() const = 0;
};

struct QueueBackendFactory {
  std::string name;  // a test-name suffix: [A-Za-z0-9_] only
  std::function<std::unique_ptr<QueueBackend>()> make;
};

inline void PrintTo(const QueueBackendFactory& factory, std::ostream* os) { *os << factory.name; }

inline std::string queue_backend_name(const ::testing::TestParamInfo<QueueBackendFactory>& info) {
  return info.param.name;
}

// StoreQueue on the factory's store, in simulated time.
QueueBackendFactory store_queue_backend(StoreFactory store);

class QueueConformance : public ::testing::TestWithParam<QueueBackendFactory> {
 protected:
  void SetUp() override;

  std::unique_ptr<QueueBackend> backend_;
};

}  // namespace leasehold::conformance
