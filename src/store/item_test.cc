// Tests for reading one attribute of an item: a value of the asked-for type
// is returned, and an absent attribute or one of another type is not mistaken
// for it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "leasehold/store.h"

namespace leasehold {
namespace {

const Item kItem{{"name", std::string("ann")}, {"epoch", int64_t{7}}, {"admin", true}};

TEST(ItemAttribute, ReadsAValueOfItsType) {
  ASSERT_NE(get_string(kItem, "name"), nullptr);
  EXPECT_EQ(*get_string(kItem, "name"), "ann");
  ASSERT_NE(get_int(kItem, "epoch"), nullptr);
  EXPECT_EQ(*get_int(kItem, "epoch"), 7);
  EXPECT_EQ(get_string_or(kItem, "name", "fallback"), "ann");
  EXPECT_EQ(get_int_or(kItem, "epoch", -1), 7);
}

TEST(ItemAttribute, AnAbsentAttributeOrOneOfAnotherTypeGivesTheFallback) {
  EXPECT_EQ(get_string(kItem, "missing"), nullptr);
  EXPECT_EQ(get_string(kItem, "epoch"), nullptr);
  EXPECT_EQ(get_int(kItem, "name"), nullptr);
  EXPECT_EQ(get_int(kItem, "admin"), nullptr);
  EXPECT_EQ(get_string_or(kItem, "missing"), "");
  EXPECT_EQ(get_string_or(kItem, "epoch", "none"), "none");
  EXPECT_EQ(get_int_or(kItem, "missing"), 0);
  EXPECT_EQ(get_int_or(kItem, "admin", -1), -1);
}

}  // namespace
}  // namespace leasehold
