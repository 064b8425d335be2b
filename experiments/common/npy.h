#pragma once
// NumPy .npy files: the image-feature matrices of the order-embedding
// experiment (ResNet-50 average-pool features, float16, shape (1000, 2048)).
//
// The format (numpy/lib/format.py, "NEP 1"):
//   bytes 0-5   magic "\x93NUMPY"
//   byte  6     major version (1, 2 or 3)
//   byte  7     minor version (0)
//   then        header length HLEN, little-endian: a u16 (2 bytes) in
//               version 1.0, a u32 (4 bytes) in 2.0 and 3.0
//   then        HLEN bytes of header: a Python dict literal, e.g.
//                 {'descr': '<f2', 'fortran_order': False, 'shape': (1000, 2048), }
//               padded with spaces and ending in '\n' so that the data starts
//               at a multiple of 64 bytes (16 in files from old NumPy).
//               Version 3.0 only differs in allowing UTF-8 in the header.
//   then        the raw elements, in C (row-major) order unless fortran_order
//               is True, and nothing after them.
// 'descr' is a typestr: a byte-order character ('<' little-endian, '>' big,
// '|' not applicable, '=' native), a kind ('f' float, 'i' int, ...) and the
// item size in bytes: '<f2' is float16, '<f4' float32. 'shape' is a tuple of
// integers, with a trailing comma for one dimension: (5,). () is a scalar.
#include <cstdint>
#include <string>

#include "rmsgrad/core/tensor.h"

namespace rg {

// Reads a 2-D float matrix (N, D) into a float32 Tensor [N, D]. Accepts
// format versions 1.0, 2.0 and 3.0, dtype float16 ('<f2') or float32 ('<f4')
// in little-endian or native order ('=' and '|' are read as little-endian),
// C order. float16 is widened exactly (subnormals, infinities, NaN kept).
// Anything else throws rg::Error with one message that starts with the path
// and says what is wrong (bad magic, version, header, dtype, order, rank, or
// a data size that does not match the shape).
Tensor read_npy_matrix(const std::string& path);

// Writes a float32 tensor of any rank as a version 1.0 .npy file ('<f4',
// C order, data starting at byte 64 or a multiple of it).
void write_npy(const std::string& path, const Tensor& t);

// float16 bits to float32, exactly (every half is representable as a float).
float half_to_float(uint16_t bits);

}  // namespace rg
