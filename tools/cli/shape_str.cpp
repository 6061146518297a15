// Shapes as text, "[1,3,8,8]" and "[batch,3,8,8]": on their own so that the calibration-data library
// (infera_calib_data: calib_load.cpp, image_*.cpp) has them without the commands' helpers.
#include "cli.h"

namespace infera::cli {

std::string shape_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + (d[i] < 0 ? std::string("?") : std::to_string(d[i]));
  return s + "]";
}

std::string io_shape_str(const IoInfo& io) {
  if (!io.rank_known) return "(shape not declared)";
  std::string s = "[";
  for (size_t i = 0; i < io.dims.size(); ++i) {
    if (i) s += ",";
    s += io.dims[i].value >= 0 ? std::to_string(io.dims[i].value) : io.dims[i].symbol.empty() ? "?" : io.dims[i].symbol;
  }
  return s + "]";
}

}  // namespace infera::cli
