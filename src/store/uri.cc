#include "store/uri.h"

#include <string>

namespace leasehold::store {

Result<SchemeAndRest> split_store_uri(std::string_view uri) {
  const size_t colon = uri.find(':');
  if (colon == std::string_view::npos) {
    return invalid_argument("malformed store URI '" + std::string(uri) +
                            "' (expected sqlite:PATH, dynamodb://REGION/PREFIX or memory:)");
  }
  return SchemeAndRest{uri.substr(0, colon), uri.substr(colon + 1)};
}

PathAndQuery split_path_and_query(std::string_view rest) {
  const size_t q = rest.find('?');
  if (q == std::string_view::npos) return {rest, std::nullopt};
  return {rest.substr(0, q), rest.substr(q + 1)};
}

std::vector<UriParam> split_uri_params(std::string_view query) {
  std::vector<UriParam> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    UriParam param;
    param.text = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = param.text.find('=');
    param.has_equals = eq != std::string_view::npos;
    param.name = param.text.substr(0, eq);
    if (param.has_equals) param.value = param.text.substr(eq + 1);
    out.push_back(param);
  }
  return out;
}

}  // namespace leasehold::store
