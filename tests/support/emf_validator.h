// A checker of CloudWatch embedded metric format (EMF) documents, written
// from the format's specification (CloudWatch User Guide, "Specification:
// Embedded metric format"), for the tests of metrics/emf.h and of the
// processes that print such lines. It knows nothing of the renderer.
//
// What it holds a document to:
//   - the line is one JSON object, nothing before or after it, at most
//     256 KB;
//   - `_aws` is an object of `Timestamp` (an integer, Unix ms) and
//     `CloudWatchMetrics` (an array of at least one MetricDirective), no
//     other member;
//   - a MetricDirective is `Namespace` (a string of 1 to 255 characters),
//     `Dimensions` (an array of at least one DimensionSet: an array of at
//     most 30 strings of 1 to 255 characters, each naming a root member
//     whose value is a string) and `Metrics` (at most 100
//     MetricDefinitions), no other member;
//   - a MetricDefinition is `Name` (1 to 255 characters, names distinct in
//     the directive), optionally `Unit` (one of CloudWatch's units) and
//     `StorageResolution` (1 or 60), no other member; the member it names
//     is on the root, and is a number, an array of at most 100 numbers, or
//     a distribution: {"Values": [...], "Counts": [...]} of the same length
//     (at most 100, counts not negative) with optionally the numbers "Min",
//     "Max", "Count" and "Sum" (the form CloudWatch's own exporters write).
//
// Thread-safe: a plain function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace leasehold::testing {

// What is wrong with `line` as an EMF document (a trailing '\n' allowed);
// empty if nothing.
std::vector<std::string> emf_problems(std::string_view line);

}  // namespace leasehold::testing
