# Finds OpenBLAS (CBLAS and LAPACK in one library) and wraps it in the target
# rmsgrad::openblas. Debian's OpenBLASConfig.cmake gives only variables holding
# absolute paths; linking a target instead keeps those paths out of the
# exported package, which this same file recreates on the consumer's machine
# (rmsgradConfig.cmake includes it), so an installed tree is relocatable.
#
# We prefer Debian's OpenMP build (libopenblas-openmp-dev): its GEMM threads
# are then libgomp's, the same pool our own loops use.
if(NOT TARGET rmsgrad::openblas)
  find_package(OpenBLAS CONFIG REQUIRED
    HINTS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp/cmake/openblas)
  add_library(rmsgrad::openblas INTERFACE IMPORTED)
  set_target_properties(rmsgrad::openblas PROPERTIES
    INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}"
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}")
endif()
