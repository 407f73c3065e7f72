# find_package(OpenCV COMPONENTS core imgcodecs imgproc videoio) on Debian's smaller
# packages too.
#
# OpenCV's own CMake package (OpenCVConfig.cmake) comes only with Debian's
# libopencv-dev, which pulls in every module and their dependencies (Qt, VTK,
# GDAL, MPI: about 670 MB). The tracer needs four modules, which
# libopencv-core-dev, -imgcodecs-dev, -imgproc-dev and -videoio-dev provide
# (about 250 MB), without a CMake package. So this module uses OpenCV's
# package when it is there, and otherwise finds the headers and the libraries
# of the requested modules itself and defines the same imported targets
# (opencv_<module>) and OpenCV_LIBS.

find_package(OpenCV CONFIG QUIET COMPONENTS ${OpenCV_FIND_COMPONENTS})
if(OpenCV_FOUND)
  include(FindPackageHandleStandardArgs)
  find_package_handle_standard_args(OpenCV CONFIG_MODE)
  return()
endif()

find_path(OpenCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4)
if(OpenCV_INCLUDE_DIR AND EXISTS ${OpenCV_INCLUDE_DIR}/opencv2/core/version.hpp)
  file(STRINGS ${OpenCV_INCLUDE_DIR}/opencv2/core/version.hpp version_lines
       REGEX "#define CV_VERSION_(MAJOR|MINOR|REVISION) ")
  foreach(part MAJOR MINOR REVISION)
    string(REGEX REPLACE ".*#define CV_VERSION_${part} +([0-9]+).*" "\\1" OpenCV_VERSION_${part}
           "${version_lines}")
  endforeach()
  set(OpenCV_VERSION ${OpenCV_VERSION_MAJOR}.${OpenCV_VERSION_MINOR}.${OpenCV_VERSION_REVISION})
endif()

set(OpenCV_LIBS)
set(required_vars OpenCV_INCLUDE_DIR)
foreach(module ${OpenCV_FIND_COMPONENTS})
  find_library(OpenCV_${module}_LIBRARY opencv_${module})
  list(APPEND required_vars OpenCV_${module}_LIBRARY)
  if(OpenCV_${module}_LIBRARY)
    set(OpenCV_${module}_FOUND TRUE)
    if(NOT TARGET opencv_${module})
      add_library(opencv_${module} UNKNOWN IMPORTED)
      # Imported include directories are system directories: OpenCV's headers
      # do not compile cleanly under C++20 with -Wall -Wextra -Werror.
      set_target_properties(opencv_${module} PROPERTIES
        IMPORTED_LOCATION ${OpenCV_${module}_LIBRARY}
        INTERFACE_INCLUDE_DIRECTORIES ${OpenCV_INCLUDE_DIR})
    endif()
    list(APPEND OpenCV_LIBS opencv_${module})
  endif()
endforeach()
set(OpenCV_INCLUDE_DIRS ${OpenCV_INCLUDE_DIR})

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenCV
  REQUIRED_VARS ${required_vars}
  VERSION_VAR OpenCV_VERSION
  HANDLE_COMPONENTS)
mark_as_advanced(OpenCV_INCLUDE_DIR)
