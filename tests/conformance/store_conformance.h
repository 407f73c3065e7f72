// The item store conformance suite: one set of value-parameterised test cases
// (store_conformance_test.cc) that every backend must pass, so that backends
// differ in speed, never in meaning.
//
// A backend joins the suite with one line in backends_test.cc:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
//                            ::testing::Values(StoreFactory{"sqlite", make_sqlite}),
//                            factory_name);
//
// `make` is called once per test and must return a store with no tables,
// isolated from every other test's store; whatever it creates (files, remote
// tables) must go away when the store is destroyed. Each test uses its store
// from one or several threads of its own.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "leasehold/store.h"

namespace leasehold::conformance {

struct StoreFactory {
  std::string name;  // a test-name suffix: [A-Za-z0-9_] only
  std::function<Result<std::unique_ptr<ItemStore>>()> make;
};

// Test output names the backend instead of dumping the struct's bytes.
inline void PrintTo(const StoreFactory& factory, std::ostream* os) { *os << factory.name; }

// For INSTANTIATE_TEST_SUITE_P: names each instantiation after its factory.
inline std::string factory_name(const ::testing::TestParamInfo<StoreFactory>& info) {
  return info.param.name;
}

// Every test starts with two tables:
//   kItems  "conf_items":  partition key "id", no sort key, with the indexes
//           kByState (hash "state", int range "n") and kByName (hash "state",
//           string range "name")
//   kSorted "conf_sorted": partition key "p", sort key "s"
class StoreConformance : public ::testing::TestWithParam<StoreFactory> {
 public:
  static constexpr const char* kItems = "conf_items";
  static constexpr const char* kSorted = "conf_sorted";
  static constexpr const char* kByState = "state-n-index";
  static constexpr const char* kByName = "state-name-index";

 protected:
  void SetUp() override;

  ItemStore& store() { return *store_; }
  static TableSpec items_spec();
  static TableSpec sorted_spec();

  std::unique_ptr<ItemStore> store_;
};

}  // namespace leasehold::conformance
