// S3's XML answers and headers (aws/s3.h, aws/s3_internal.h): the elements
// of error documents (xml_element, s3_error_status), whether a 200 is an
// error document, multipart ETags, and Content-Range.
//
// The first byte picks the HTTP status; the rest is the body, or a
// Content-Range value.
// Properties: any text escaped by xml_escape() reads back whole from its
// element; the Status made of an error document holds no control character
// (S3's text goes to logs) and stays bounded; a Content-Range taken has
// FIRST <= LAST < TOTAL and reads back from its own text; parse_u64 takes
// exactly 1 to 19 decimal digits.
#include <cstdint>
#include <string>
#include <string_view>

#include "aws/s3.h"
#include "aws/s3_internal.h"
#include "check.h"

namespace {

namespace aws = leasehold::aws;
namespace s3 = leasehold::aws::s3_internal;
using leasehold::fuzz::escaped;

constexpr int kStatuses[] = {200, 301, 307, 400, 403, 404, 409, 412, 500, 501, 503};
constexpr size_t kStatusMessageBytesMax = 2048;

void check_body(int status, std::string_view body) {
  for (const char* tag : {"Code", "Message", "RequestId", "Region"}) {
    const std::optional<std::string> text = aws::xml_element(body, tag);
    if (!text) continue;
    const std::string element =
        std::string("<") + tag + ">" + s3::xml_escape(*text) + "</" + tag + ">";
    const std::optional<std::string> again =
        aws::xml_element("<Error>" + element + "</Error>", tag);
    FUZZ_CHECK(again && *again == *text, "the text of <" + std::string(tag) +
                                             "> escaped does not read back: " + escaped(element));
  }
  const leasehold::Status error = aws::s3_error_status(status, body, "GetObject", "bucket", "");
  const std::string& message = error.message();
  FUZZ_CHECK(!error.ok(), "an error document read as success");
  FUZZ_CHECK(message.size() <= kStatusMessageBytesMax,
             "a message of " + std::to_string(message.size()) + " bytes");
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_CHECK(byte >= 0x20 && byte < 0x7f, "a control character in " + escaped(message));
  }
  (void)s3::is_error_document(body);
  (void)s3::is_region_refusal(status, body, status == 400);
}

void check_numbers(std::string_view text) {
  const std::optional<uint64_t> n = s3::parse_u64(text);
  const bool digits = !text.empty() && text.size() <= 19 &&
                      text.find_first_not_of("0123456789") == std::string_view::npos;
  FUZZ_CHECK(n.has_value() == digits, "parse_u64 of " + escaped(text));
  if (n) FUZZ_CHECK(*n == std::stoull(std::string(text)), "parse_u64's number " + escaped(text));
  const auto range = s3::parse_content_range(text);
  if (range) {
    FUZZ_CHECK(range->first <= range->last && range->last < range->total,
               "a Content-Range out of order: " + escaped(text));
    const std::string again_text = "bytes " + std::to_string(range->first) + "-" +
                                   std::to_string(range->last) + "/" + std::to_string(range->total);
    const auto again = s3::parse_content_range(again_text);
    FUZZ_CHECK(again && again->first == range->first && again->last == range->last &&
                   again->total == range->total,
               "Content-Range " + escaped(again_text) + " does not read back");
  }
  (void)s3::is_multipart_etag(text, 3);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int status = kStatuses[data[0] % std::size(kStatuses)];
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (status == 200) {
    check_numbers(rest);
  } else {
    check_body(status, rest);
  }
  return 0;
}
