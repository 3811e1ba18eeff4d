# devices/cuda/musa.cmake: the MUSA build of the cuda backend (-DHARNESS_MUSA=ON, Moore Threads
# S4000 and later): the same sources, names mapped by musa_compat.h, kernels compiled by mcc.

# MUSA_PATH: the toolkit (default /usr/local/musa); MUSA_ARCH: the GPU's architecture number
# (22: S4000; 21: S80/S3000), compiled for as --cuda-gpu-arch=mp_<N> as ggml's MUSA build does.
set(MUSA_PATH "$ENV{MUSA_PATH}" CACHE PATH "the MUSA toolkit")
if(NOT MUSA_PATH)
  set(MUSA_PATH /usr/local/musa)
endif()
set(MUSA_ARCH "22" CACHE STRING "the MUSA GPU architecture to compile the kernels for (S4000: 22)")
find_program(MUSA_MCC mcc PATHS ${MUSA_PATH}/bin NO_DEFAULT_PATH)
find_library(MUSA_RT musart PATHS ${MUSA_PATH}/lib NO_DEFAULT_PATH)
find_library(MUSA_BLAS mublas PATHS ${MUSA_PATH}/lib NO_DEFAULT_PATH)
if(NOT MUSA_MCC OR NOT MUSA_RT OR NOT MUSA_BLAS)
  message(FATAL_ERROR "HARNESS_MUSA=ON: mcc, libmusart or libmublas not found under ${MUSA_PATH} "
                      "(set MUSA_PATH)")
endif()
message(STATUS "musa backend: on (${MUSA_MCC}, arch mp_${MUSA_ARCH})")

# the kernels: cu_kernels.cu compiled as MUSA C++ by mcc (a clang), position-independent
set(MUSA_KERNELS_O ${CMAKE_BINARY_DIR}/cu_kernels_musa.o)
file(GLOB MUSA_KERNEL_DEPS ${CMAKE_SOURCE_DIR}/devices/kernels/*)
add_custom_command(OUTPUT ${MUSA_KERNELS_O}
  COMMAND ${MUSA_MCC} -x musa -mtgpu --cuda-gpu-arch=mp_${MUSA_ARCH} -std=c++17 -O2 -fPIC -Wall -Werror
          -DHARNESS_MUSA=1 -I${CMAKE_SOURCE_DIR}/devices -I${CMAKE_SOURCE_DIR}/devices/cuda
          -c ${CMAKE_SOURCE_DIR}/devices/cuda/cu_kernels.cu -o ${MUSA_KERNELS_O}
  DEPENDS ${CMAKE_SOURCE_DIR}/devices/cuda/cu_kernels.cu ${MUSA_KERNEL_DEPS} ${CMAKE_SOURCE_DIR}/devices/philox.h
          ${CMAKE_SOURCE_DIR}/devices/topk_select.h
  COMMENT "Compiling the kernels with mcc for mp_${MUSA_ARCH}" VERBATIM)

file(GLOB CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/devices/cuda/*.c)
add_library(dev_cuda OBJECT ${CUDA_SOURCES})
target_include_directories(dev_cuda PRIVATE ${CMAKE_SOURCE_DIR}/devices ${CMAKE_SOURCE_DIR}/devices/cuda
                           ${MUSA_PATH}/include)
target_compile_definitions(dev_cuda PRIVATE HARNESS_MUSA=1)
target_compile_options(dev_cuda PRIVATE ${WARN})
set_target_properties(dev_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON)
list(APPEND DEVICE_OBJECTS $<TARGET_OBJECTS:dev_cuda> ${MUSA_KERNELS_O})
list(APPEND DEVICE_LIBS ${MUSA_RT} ${MUSA_BLAS})
list(APPEND DEVICE_DEFS HARNESS_CUDA=1 HARNESS_MUSA=1)
