#include "store/store_wrapper.h"

#include <gtest/gtest.h>

#include <memory>

#include "store/memory/memory_store.h"

namespace leasehold::store {
namespace {

// A store whose reads are not local, as a remote backend's are.
class RemoteReads final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  bool reads_are_local() const override { return false; }
  std::string_view backend_name() const override { return "remote"; }
};

TEST(StoreWrapper, SaysWhatTheWrappedStoreSaysOfItself) {
  const std::unique_ptr<ItemStore> memory = make_memory_store();
  const StoreWrapper local(*memory);
  EXPECT_TRUE(memory->reads_are_local());
  EXPECT_TRUE(local.reads_are_local());
  EXPECT_EQ(local.backend_name(), "memory");

  RemoteReads remote(*memory);
  ItemStore& remote_store = remote;
  const StoreWrapper over_remote(remote_store);
  EXPECT_FALSE(over_remote.reads_are_local());
  EXPECT_EQ(over_remote.backend_name(), "remote");
}

TEST(StoreWrapper, ForwardsCallsToTheWrappedStore) {
  const std::unique_ptr<ItemStore> memory = make_memory_store();
  StoreWrapper wrapper(*memory);
  ASSERT_TRUE(wrapper.ensure_table(TableSpec{"t", "pk", "", {}}).ok());
  Item item;
  item["pk"] = std::string("a");
  ASSERT_TRUE(wrapper.put("t", item, {}).ok());
  EXPECT_TRUE(memory->get("t", Key{"a", ""}, true).ok());
  EXPECT_EQ(wrapper.change_stamp(), memory->change_stamp());
  EXPECT_EQ(&wrapper.inner(), memory.get());
}

}  // namespace
}  // namespace leasehold::store
