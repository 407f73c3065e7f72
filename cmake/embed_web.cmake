# Writes OUTPUT, a C++ file that holds every file of WEB_DIR (the web shell's
# static files) as data for src/web/assets.cc: its path ("/js/api.js"), its
# content type (from the extension), its ETag (the first 16 hex digits of the
# SHA-256 of its bytes, quoted) and its bytes; and the page aliases PAGES
# ("/signin=signin.html;..."), each naming a file that must exist; and the
# files from outside web/ that EXTRA names ("/vendor/uplot.js=/abs/path;...",
# third-party files installed by npm). A file
# whose extension has no known type, or whose name needs escaping in a URL,
# stops the build. Files whose name starts with "." (editors' swap files) are
# left out. Run by src/web/CMakeLists.txt whenever a file of web/ changes;
# OUTPUT is rewritten only when its content changes.
#
#   cmake -DWEB_DIR=... -DOUTPUT=... "-DPAGES=/=index.html;/signin=signin.html" \
#         "-DEXTRA=/vendor/x.js=/path/to/x.js" -P embed_web.cmake
cmake_minimum_required(VERSION 3.25)

function(web_content_type file out)
  get_filename_component(name "${file}" NAME)
  string(REGEX MATCH "[^.]+$" ext "${name}")
  string(TOLOWER "${ext}" ext)
  if(NOT name MATCHES "\\.")
    set(ext "")
  endif()
  set(types_html "text/html; charset=utf-8")
  set(types_css "text/css; charset=utf-8")
  set(types_js "text/javascript; charset=utf-8")
  set(types_svg "image/svg+xml")
  set(types_png "image/png")
  set(types_ico "image/x-icon")
  set(types_json "application/json")
  set(types_woff2 "font/woff2")
  if(ext STREQUAL "" OR NOT DEFINED types_${ext})
    message(FATAL_ERROR "web/${file}: no content type is known for this extension; add one to "
                        "cmake/embed_web.cmake (html, css, js, svg, png, ico, json, woff2)")
  endif()
  set(${out} "${types_${ext}}" PARENT_SCOPE)
endfunction()

# The bytes of `path` as a C++ string literal, 32 bytes a line, every byte
# a \x escape (so no following character can extend one).
function(web_literal path out)
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" escaped "${hex}")
  string(REPEAT "\\\\x[0-9a-f][0-9a-f]" 32 line)
  string(REGEX REPLACE "(${line})" "\\1\"\n    \"" escaped "${escaped}")
  # A file of exactly 32×n bytes leaves an empty literal at the end: harmless.
  set(${out} "\"${escaped}\"" PARENT_SCOPE)
endfunction()

if(NOT WEB_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "usage: cmake -DWEB_DIR=... -DOUTPUT=... -DPAGES=... -P embed_web.cmake")
endif()

file(GLOB_RECURSE files RELATIVE "${WEB_DIR}" "${WEB_DIR}/*")
list(FILTER files EXCLUDE REGEX "(^|/)\\.")
list(SORT files)
if(NOT files)
  message(FATAL_ERROR "${WEB_DIR} holds no files")
endif()

# url path (without the leading "/") -> file on disk
set(names "")
foreach(file IN LISTS files)
  if(NOT file MATCHES "^[A-Za-z0-9_./-]+$")
    message(FATAL_ERROR
            "web/${file}: use only letters, digits and . _ - / in the names of web/ files")
  endif()
  list(APPEND names "${file}")
  set(source_${file} "${WEB_DIR}/${file}")
endforeach()
foreach(extra IN LISTS EXTRA)
  if(NOT extra MATCHES "^/([A-Za-z0-9_./-]+)=(.+)$")
    message(FATAL_ERROR "extra file '${extra}': write it as /path=file")
  endif()
  set(file "${CMAKE_MATCH_1}")
  if(file IN_LIST names)
    message(FATAL_ERROR "extra file '/${file}' is also a file of web/")
  endif()
  if(NOT EXISTS "${CMAKE_MATCH_2}")
    message(FATAL_ERROR "${CMAKE_MATCH_2} (served at /${file}) is missing; run scripts/setup.sh "
                        "(npm ci) first")
  endif()
  list(APPEND names "${file}")
  set(source_${file} "${CMAKE_MATCH_2}")
endforeach()

set(data "")
set(table "")
set(index 0)
foreach(file IN LISTS names)
  set(source "${source_${file}}")
  web_content_type("${file}" type)
  file(SHA256 "${source}" sha256)
  string(SUBSTRING "${sha256}" 0 16 etag)
  web_literal("${source}" literal)
  file(SIZE "${source}" size)
  string(APPEND data "// ${file}\nconstexpr char kFile${index}[] =\n    ${literal};\n\n")
  string(APPEND table "    {\"/${file}\", \"${type}\", \"\\\"${etag}\\\"\",\n"
                      "     std::string_view(kFile${index}, ${size})},\n")
  math(EXPR index "${index} + 1")
endforeach()

set(aliases "")
foreach(page IN LISTS PAGES)
  if(NOT page MATCHES "^(/[a-z0-9/_-]*)=([A-Za-z0-9_./-]+)$")
    message(FATAL_ERROR "page alias '${page}': write it as /path=file")
  endif()
  if(NOT CMAKE_MATCH_2 IN_LIST names)
    message(FATAL_ERROR "page alias '${page}': web/${CMAKE_MATCH_2} does not exist")
  endif()
  string(APPEND aliases "    {\"${CMAKE_MATCH_1}\", \"/${CMAKE_MATCH_2}\"},\n")
endforeach()

set(content "// Generated from web/ by cmake/embed_web.cmake; do not edit.
#include \"web/embedded.h\"

namespace leasehold::web::embedded {
namespace {

${data}constexpr Asset kAssets[] = {
${table}};

constexpr PageAlias kPages[] = {
${aliases}};

}  // namespace

std::span<const Asset> assets() { return kAssets; }
std::span<const PageAlias> pages() { return kPages; }

}  // namespace leasehold::web::embedded
")

if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
