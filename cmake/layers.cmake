# Include paths that follow the layers.
#
# A layer's headers are included by their path under src/ ("store/uri.h",
# "net/http_client.h"), but src/ itself is on no include path, and neither is
# include/ (each public header belongs to the layer that implements it). Each layer's target
# gets an include root of its own in the build tree, holding a symbolic link
# to its folder, and passes that root on to the targets that link it. So a
# file can include a header only from its own layer and the layers its target
# links, which are the layers below it: an upward include does not compile.

# Makes "<dir>/..." (dir relative to the project's source tree, e.g.
# src/store/sqlite) includable as "<as>/..." from `target` and from what links
# it.
function(leasehold_expose target dir as)
  set(root ${PROJECT_BINARY_DIR}/layers/${target})
  get_filename_component(parent ${root}/${as} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${root}/${as} SYMBOLIC)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
endfunction()

# The same for the headers directly in `dir`, not for its subfolders (a
# layer whose subfolders are layers of their own: src/store and its backends).
function(leasehold_expose_headers target dir as)
  set(root ${PROJECT_BINARY_DIR}/layers/${target})
  file(MAKE_DIRECTORY ${root}/${as})
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.h)
  foreach(header ${headers})
    get_filename_component(name ${header} NAME)
    file(CREATE_LINK ${header} ${root}/${as}/${name} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
endfunction()

# Makes the public headers `names` (in include/leasehold/) includable as
# "leasehold/<name>" from `target` and from what links it: so store/ sees
# leasehold/store.h but not leasehold/lease.h. The installed package puts them
# all in one folder (cmake/install.cmake).
function(leasehold_expose_public target)
  set(root ${PROJECT_BINARY_DIR}/layers/${target})
  file(MAKE_DIRECTORY ${root}/leasehold)
  foreach(name ${ARGN})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/leasehold/${name} ${root}/leasehold/${name} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endfunction()
