# Findsegyio: segyio's own config when it is complete, else the header and
# library found directly (Debian 12's config declares the target without a
# library location). Defines segyio::segyio.
find_package(segyio CONFIG QUIET)
include(${CMAKE_CURRENT_LIST_DIR}/dwsrFindLibrary.cmake)
dwsr_find_library(segyio segyio::segyio segyio/segy.h segyio LINK m)
