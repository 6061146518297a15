// Tensor files, the parts below the public load_tensor_file/save_npy: the .npy header parser
// and the in-memory decoders (tests and fuzz targets call them without a file).
#pragma once

#include <string>
#include <vector>

#include "infera/infera.h"

namespace infera {

struct NpyHeader {
  std::string descr;  // e.g. "<f4"
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the header text of a .npy file (after the length field) as numpy does: a Python dict
// literal with exactly the keys 'descr' (a string), 'fortran_order' (True/False) and 'shape' (a
// tuple of non-negative ints; "(3,)" for one dim), then only whitespace. Refuses with the reason
// (never throws, no recursion: a header of any length or content is safe).
Status parse_npy_header(const std::string& text, NpyHeader& out);

// Decodes a whole .npy file held in memory (path is for messages). Bool bytes become 0/1.
// lim: rank and elements as a session limits them (the parser itself stops at the hard caps).
Result<Tensor> tensor_from_npy_bytes(const std::string& bytes, const std::string& path, const limits::Limits& lim = {});

// load_tensor_file under a session's limits: the file's size (max_tensor_file_bytes) before it is
// read, rank and elements before the tensor is allocated. load_tensor_file is this with the
// defaults.
Result<Tensor> load_tensor_file_limited(const std::string& path, const limits::Limits& lim);

}  // namespace infera
