# dwsr_find_library(PACKAGE TARGET HEADER LIBRARY [LINK libs...]): finds a
# library that ships no usable CMake package config by its header and library
# file, reports it like a find module, and defines the imported TARGET.
function(dwsr_find_library package target header library)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  find_path(${package}_INCLUDE_DIR ${header})
  find_library(${package}_LIBRARY NAMES ${library})
  mark_as_advanced(${package}_INCLUDE_DIR ${package}_LIBRARY)
  include(FindPackageHandleStandardArgs)
  find_package_handle_standard_args(${package} REQUIRED_VARS ${package}_LIBRARY ${package}_INCLUDE_DIR)
  set(${package}_FOUND ${${package}_FOUND} PARENT_SCOPE)
  if(${package}_FOUND AND NOT TARGET ${target})
    add_library(${target} UNKNOWN IMPORTED)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LOCATION "${${package}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${${package}_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${ARG_LINK}")
  endif()
endfunction()
