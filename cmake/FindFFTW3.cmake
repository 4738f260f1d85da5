# FindFFTW3: single-precision FFTW (libfftw3f), which Debian ships without a
# CMake package config. Defines FFTW3::fftw3f.
include(${CMAKE_CURRENT_LIST_DIR}/dwsrFindLibrary.cmake)
dwsr_find_library(FFTW3 FFTW3::fftw3f fftw3.h fftw3f)
