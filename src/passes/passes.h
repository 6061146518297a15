// Factories of the graph passes, one per verb-named file in src/passes/. Each pass's
// file header says what it does and what it assumes; pipeline.cpp orders them.
#pragma once

#include <cstddef>
#include <memory>

#include "passes/pass.h"

namespace infera {

// Folded tensors larger than this are left to the runtime (a hostile model cannot blow memory).
constexpr size_t kFoldMaxTensorBytes = size_t(64) << 20;
// Total bytes of new constants one fold_constants run may create.
constexpr size_t kFoldMaxTotalBytes = size_t(2) << 30;

std::unique_ptr<Pass> make_eliminate_identity();
std::unique_ptr<Pass> make_fold_constants(size_t max_tensor_bytes = kFoldMaxTensorBytes,
                                          size_t max_total_bytes = kFoldMaxTotalBytes);
std::unique_ptr<Pass> make_eliminate_noops();
std::unique_ptr<Pass> make_eliminate_dead_nodes();
std::unique_ptr<Pass> make_fold_batchnorm();
std::unique_ptr<Pass> make_fuse_matmul_add();
std::unique_ptr<Pass> make_fuse_conv_activation();
std::unique_ptr<Pass> make_fuse_layer_norm();
std::unique_ptr<Pass> make_fuse_gelu();
std::unique_ptr<Pass> make_fuse_channel_shuffle();
std::unique_ptr<Pass> make_fuse_squeeze_excite();
std::unique_ptr<Pass> make_fuse_inverted_residual();
std::unique_ptr<Pass> make_fuse_concat_batchnorm();
std::unique_ptr<Pass> make_pool_before_pointwise_conv();
std::unique_ptr<Pass> make_quantize_qdq();

}  // namespace infera
