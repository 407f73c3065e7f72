#include "aws/actions.h"

#include <gtest/gtest.h>

namespace leasehold::aws {
namespace {

TEST(IamActionTest, NamesTheServiceAndTheOperationAndSqsBatchesByTheirSingleAction) {
  EXPECT_EQ(iam_action("dynamodb", "GetItem"), "dynamodb:GetItem");
  EXPECT_EQ(iam_action("dynamodb", "BatchGetItem"), "dynamodb:BatchGetItem");
  EXPECT_EQ(iam_action("sqs", "ChangeMessageVisibilityBatch"), "sqs:ChangeMessageVisibility");
  EXPECT_EQ(iam_action("sqs", "DeleteMessageBatch"), "sqs:DeleteMessage");
  EXPECT_EQ(iam_action("sqs", "ReceiveMessage"), "sqs:ReceiveMessage");
}

TEST(LimitActionsTest, WithoutALimitAnythingGoesAndWithOneOnlyItsActionsAreSentAndCounted) {
  EXPECT_TRUE(check_action("dynamodb:DeleteTable").ok());
  EXPECT_TRUE(actions_sent().empty());

  limit_actions({"sqs:ReceiveMessage", "dynamodb:GetItem", "dynamodb:GetItem"});
  EXPECT_TRUE(check_action("dynamodb:GetItem").ok());
  EXPECT_TRUE(check_action("dynamodb:GetItem").ok());
  const Status refused = check_action("dynamodb:Scan");
  EXPECT_EQ(refused.code(), Code::kPermissionDenied);
  EXPECT_NE(refused.message().find("dynamodb:Scan"), std::string::npos) << refused.message();
  EXPECT_EQ(check_action("dynamodb:GetItemX").code(), Code::kPermissionDenied);
  EXPECT_EQ(check_action("").code(), Code::kPermissionDenied);
  using Sent = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(actions_sent(), (Sent{{"dynamodb:GetItem", 2}, {"sqs:ReceiveMessage", 0}}));

  internal::forget_limit_for_test();
  EXPECT_TRUE(check_action("dynamodb:Scan").ok());
}

}  // namespace
}  // namespace leasehold::aws
