// The pool_norm op family: pooling ops live in pool.cpp, normalization ops in norm.cpp.
#include "ops/op.h"

namespace infera {

void register_pool_ops(OpRegistry& r);  // pool.cpp
void register_norm_ops(OpRegistry& r);  // norm.cpp

void register_pool_norm_ops(OpRegistry& r) {
  register_pool_ops(r);
  register_norm_ops(r);
}

}  // namespace infera
