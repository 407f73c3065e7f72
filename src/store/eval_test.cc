// The evaluator on its own; the conformance suite checks it through every
// backend.
#include "store/eval.h"

#include <gtest/gtest.h>

namespace leasehold::store {
namespace {

TEST(Evaluate, AbsentAndMistypedAttributesFollowDynamoDb) {
  const Item item{{"s", std::string("b")}, {"n", int64_t{5}}, {"t", true}};
  EXPECT_TRUE(evaluate(cond::eq("n", int64_t{5}), &item));
  EXPECT_FALSE(evaluate(cond::eq("n", std::string("5")), &item));
  EXPECT_TRUE(evaluate(cond::ne("n", std::string("5")), &item));
  EXPECT_FALSE(evaluate(cond::lt("missing", int64_t{1}), &item));
  EXPECT_TRUE(evaluate(cond::ne("missing", int64_t{1}), &item));
  EXPECT_FALSE(evaluate(cond::lt("t", true), &item));
  EXPECT_TRUE(evaluate(cond::gt("s", std::string("a")), &item));
  EXPECT_TRUE(evaluate(!cond::exists("missing") && cond::exists("s"), &item));
  EXPECT_TRUE(evaluate(cond::not_exists("n"), nullptr));
  EXPECT_FALSE(evaluate(cond::eq("n", int64_t{5}) || cond::exists("x"), nullptr));
}

TEST(ApplyUpdate, AddRefusesNonIntsAndOverflow) {
  Item item{{"s", std::string("x")}, {"n", INT64_MAX}};
  EXPECT_EQ(apply_update(Update().add("s", 1), item).code(), Code::kInvalidArgument);
  EXPECT_EQ(apply_update(Update().add("n", 1), item).code(), Code::kInvalidArgument);
  Item fresh;
  ASSERT_TRUE(apply_update(Update().add("c", 3).set_if_absent("d", int64_t{1}), fresh).ok());
  EXPECT_EQ(std::get<int64_t>(fresh["c"]), 3);
}

TEST(ValidateUpdate, RefusesKeyAttributesAndDuplicates) {
  const TableSpec spec{"t", "pk", "sk", {}};
  EXPECT_EQ(validate_update(spec, Update().set("pk", std::string("x"))).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(validate_update(spec, Update().set("a", int64_t{1}).remove("a")).code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(validate_update(spec, Update().set("a", int64_t{1}).remove("b")).ok());
}

TEST(ValidateCondition, BoundsDepth) {
  Condition c = cond::exists("a");
  for (int i = 0; i < kConditionDepthMax + 2; ++i) c = !c;
  EXPECT_EQ(validate_condition(c).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::store
