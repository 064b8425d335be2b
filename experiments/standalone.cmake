# The settings a lab project needs when it is built on its own, against an
# installed rmsgrad rather than inside the whole project: the language
# standard, the build type, the warnings, and the lab's headers under the
# path they have in the whole project, "rmsgrad/experiments/...". Included
# right after project() by experiments/CMakeLists.txt and bench/CMakeLists.txt.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
set(CMAKE_CXX_FLAGS_RELEASE "-O3 -DNDEBUG")
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
find_package(rmsgrad REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(PkgConfig REQUIRED)
option(RG_NATIVE "Optimise for the vector units of the build machine (-march=native)" ON)
function(rg_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -fno-math-errno)
  if(RG_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
endfunction()
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/include/rmsgrad)
file(CREATE_LINK ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_BINARY_DIR}/include/rmsgrad/experiments SYMBOLIC)
set(RG_LAB_INCLUDE_DIR ${CMAKE_BINARY_DIR}/include)
