// Tests for placement: who tries which orphan when, and what is handed over.
#include "fleet/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace leasehold::fleet {
namespace {

using std::chrono::milliseconds;

const PlacementOptions kOptions{milliseconds(500), milliseconds(4000)};

std::vector<OrphanSeen> crashed_orphans(int n, const std::string& owner, Duration free_for = {}) {
  std::vector<OrphanSeen> out;
  for (int i = 0; i < n; ++i) out.push_back({"c" + std::to_string(i), owner, true, free_for});
  return out;
}

// The plan of each of `fleet` in turn, as `me` among the others.
std::map<std::string, Placement> plans(const std::vector<MemberFigures>& fleet,
                                       const std::vector<OrphanSeen>& orphans) {
  std::map<std::string, Placement> out;
  for (size_t me = 0; me < fleet.size(); ++me) {
    std::vector<MemberFigures> others;
    for (size_t i = 0; i < fleet.size(); ++i) {
      if (i != me) others.push_back(fleet[i]);
    }
    out[fleet[me].id] = place(fleet[me].id, fleet[me].owned, fleet[me].capacity, others, orphans,
                              /*may_hand_over=*/true, kOptions);
  }
  return out;
}

// Which members try each orphan now.
std::map<std::string, std::set<std::string>> tried_by(const std::map<std::string, Placement>& all,
                                                      const std::vector<OrphanSeen>& orphans) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [member, plan] : all) {
    for (const Attempt& a : plan.attempts) out[orphans[a.orphan].id].insert(member);
  }
  return out;
}

TEST(PlacementTest, EachOrphanOfACrashIsTriedByOneMemberAtFirstAndTheyAreSpread) {
  const std::vector<MemberFigures> fleet = {
      {"w1", 10, 1000, true}, {"w2", 10, 1000, true}, {"w3", 10, 1000, true}};
  const auto orphans = crashed_orphans(300, "w4");
  const auto tried = tried_by(plans(fleet, orphans), orphans);
  ASSERT_EQ(tried.size(), orphans.size());
  std::map<std::string, int> per_member;
  for (const auto& [conn, members] : tried) {
    ASSERT_EQ(members.size(), 1u) << conn;
    ++per_member[*members.begin()];
  }
  for (const auto& [member, n] : per_member) {
    EXPECT_GT(n, 70) << member;  // 100 each on average
    EXPECT_LT(n, 130) << member;
  }
}

TEST(PlacementTest, TheNextRankTriesOneStaggerLaterAndSaysWhen) {
  const std::vector<MemberFigures> fleet = {{"w1", 0, 1000, true}, {"w2", 0, 1000, true}};
  auto orphans = crashed_orphans(40, "w9");
  auto all = plans(fleet, orphans);
  // Each waits for the orphans it ranks second on, one stagger after first sight.
  EXPECT_EQ(all["w1"].next_due, kOptions.stagger);
  EXPECT_EQ(all["w2"].next_due, kOptions.stagger);
  for (OrphanSeen& o : orphans) o.free_for = kOptions.stagger;
  for (const auto& [conn, members] : tried_by(plans(fleet, orphans), orphans)) {
    EXPECT_EQ(members.size(), 2u) << conn;
  }
}

// A free connection the change feed's reader named to a member is its to
// try at once, whatever its rank; but not beyond its share.
TEST(PlacementTest, AHintedOrphanIsTriedAtOnceWhileThereIsRoom) {
  std::vector<OrphanSeen> orphans = {{"c", "w9", false, {}}};
  const std::string second =
      rendezvous_weight("w1", "c") > rendezvous_weight("w2", "c") ? "w2" : "w1";
  const std::string first = second == "w1" ? "w2" : "w1";
  const auto plan_of = [&](const std::string& me, int64_t owned) {
    const std::vector<MemberFigures> others = {{first, 0, 1000, true}};
    return place(me, owned, 1000, others, orphans, true, kOptions);
  };
  EXPECT_TRUE(plan_of(second, 0).attempts.empty()) << "not its turn yet";
  orphans[0].hinted = true;
  EXPECT_EQ(plan_of(second, 0).attempts.size(), 1u);
  // 5 of 6 is beyond its share of 3 by its count; the reader counted
  // otherwise (the other's figures lag), and it has room.
  ASSERT_EQ(plan_of(second, 5).attempts.size(), 1u);
  EXPECT_TRUE(plan_of(second, 5).attempts[0].beyond_share);
  EXPECT_TRUE(plan_of(second, 1000).attempts.empty()) << "full";
}

TEST(PlacementTest, TheDeadOwnerAndMembersThatDoNotTakeAreNotRanked) {
  // w2 owned the orphans and died; w3 does not take. Only w1 may take them,
  // at once, all of them beyond its share if need be.
  const std::vector<MemberFigures> others = {{"w2", 5, 1000, true}, {"w3", 0, 1000, false}};
  const auto orphans = crashed_orphans(20, "w2");
  const Placement p = place("w1", 5, 1000, others, orphans, true, kOptions);
  ASSERT_EQ(p.attempts.size(), 20u);
  for (const Attempt& a : p.attempts) EXPECT_TRUE(a.beyond_share);
  EXPECT_EQ(p.next_due, Duration::max());
}

TEST(PlacementTest, AnOwnerBackFromACrashTakesItsOrphansFirstAndTheOthersFollowIt) {
  // w2 crashed and joined again under its ID: each of its old connections
  // is its own to take at once; w1 and w3 rank after it, whatever their
  // weights.
  std::vector<OrphanSeen> orphans = crashed_orphans(20, "w2");
  for (OrphanSeen& o : orphans) o.owner_back = true;
  const std::vector<MemberFigures> fleet = {
      {"w1", 5, 1000, true}, {"w2", 0, 1000, true}, {"w3", 5, 1000, true}};
  const auto all = plans(fleet, orphans);
  EXPECT_EQ(all.at("w2").attempts.size(), orphans.size());
  for (const Attempt& a : all.at("w2").attempts) EXPECT_TRUE(a.beyond_share);
  for (const char* other : {"w1", "w3"}) {
    EXPECT_TRUE(all.at(other).attempts.empty()) << other;
    EXPECT_GE(all.at(other).next_due, kOptions.stagger) << other;
  }
  // Without it, the dead owner is not ranked at all.
  for (OrphanSeen& o : orphans) o.owner_back = false;
  EXPECT_TRUE(plans(fleet, orphans).at("w2").attempts.empty());
}

TEST(PlacementTest, AHandedOverConnectionGoesToAMemberBelowItsShare) {
  // w1 (8) handed 2 over to balance against w2 (0 of 10 total): w2's share
  // is 5; w1, at its share, leaves them to w2.
  const std::vector<OrphanSeen> orphans = {{"a", "w1", false, {}}, {"b", "w1", false, {}}};
  const Placement w1 = place("w1", 8, 1000, std::vector<MemberFigures>{{"w2", 0, 1000, true}},
                             orphans, true, kOptions);
  EXPECT_TRUE(w1.attempts.empty());
  EXPECT_EQ(w1.next_due, Duration::max());
  const Placement w2 = place("w2", 0, 1000, std::vector<MemberFigures>{{"w1", 8, 1000, true}},
                             orphans, true, kOptions);
  ASSERT_EQ(w2.attempts.size(), 2u);
  EXPECT_FALSE(w2.attempts[0].beyond_share);
}

TEST(PlacementTest, AnOrphanNobodyTookIsTakenByAnyoneWithRoomOnceStranded) {
  // Handed to w2, which never takes them: after stranded_after, w1 does.
  std::vector<OrphanSeen> orphans = {{"a", "w1", false, kOptions.stranded_after / 2}};
  const std::vector<MemberFigures> w2 = {{"w2", 0, 1000, true}};
  EXPECT_TRUE(place("w1", 8, 1000, w2, orphans, true, kOptions).attempts.empty());
  orphans[0].free_for = kOptions.stranded_after;
  // Ranked among everyone with room now: w1 tries at once or a stagger later.
  const Placement late = place("w1", 8, 1000, w2, orphans,
                               /*may_hand_over=*/true, kOptions);
  orphans[0].free_for = kOptions.stranded_after + kOptions.stagger;
  const Placement later = place("w1", 8, 1000, w2, orphans, true, kOptions);
  ASSERT_EQ(later.attempts.size(), 1u);
  EXPECT_TRUE(later.attempts[0].beyond_share);
  EXPECT_LE(late.attempts.size(), 1u);
}

TEST(PlacementTest, HandsTheExcessOverOnlyToAMemberThatTakes) {
  const Placement to_taker =
      place("w1", 10, 1000, std::vector<MemberFigures>{{"w2", 0, 1000, true}}, {}, true, kOptions);
  EXPECT_EQ(to_taker.share, 5);
  EXPECT_EQ(to_taker.hand_over, 5);
  EXPECT_EQ(
      place("w1", 10, 1000, std::vector<MemberFigures>{{"w2", 0, 1000, false}}, {}, true, kOptions)
          .hand_over,
      0);
  EXPECT_EQ(place("w1", 10, 1000, std::vector<MemberFigures>{{"w2", 0, 1000, true}}, {},
                  /*may_hand_over=*/false, kOptions)
                .hand_over,
            0);
  // An orphan waiting: recovery first.
  EXPECT_EQ(place("w1", 10, 1000, std::vector<MemberFigures>{{"w2", 0, 1000, true}},
                  crashed_orphans(1, "w3"), true, kOptions)
                .hand_over,
            0);
}

TEST(PlacementTest, OverCapacityAFullWorkerTriesNothingAndOneWithRoomTriesUpToIt) {
  // One worker of 5 with 5 streaming and 1 more: nothing to try, nothing to hand over.
  const std::vector<OrphanSeen> one = {{"f", "", false, {}}};
  const Placement full = place("w1", 5, 5, {}, one, true, kOptions);
  EXPECT_EQ(full.share, 5);
  EXPECT_TRUE(full.attempts.empty());
  EXPECT_EQ(full.hand_over, 0);
  // With room for it (4 of 5), the share is the capacity and it tries it.
  const Placement room =
      place("w1", 4, 5, {}, std::vector<OrphanSeen>{{"f", "w2", false, {}}}, true, kOptions);
  EXPECT_EQ(room.share, 5);
  ASSERT_EQ(room.attempts.size(), 1u);
}

TEST(PlacementTest, WeightsAreTheSameOnEveryMachineAndBuild) {
  // Workers of different builds share a fleet: the ranks must agree, so the
  // hash is pinned (computed by hand from its definition).
  EXPECT_EQ(rendezvous_weight("w1", "c0"), rendezvous_weight("w1", "c0"));
  EXPECT_NE(rendezvous_weight("w1", "c0"), rendezvous_weight("w2", "c0"));
  EXPECT_NE(rendezvous_weight("w1c", "0"), rendezvous_weight("w1", "c0"));
  EXPECT_EQ(rendezvous_weight("w1", "c0"), 0xf9dbadf192611137ull);
}

}  // namespace
}  // namespace leasehold::fleet
