// The oneDNN CPU backend. Conv/FusedConv, ConvTranspose, Gemm/FusedGemm, MatMul, pools,
// BatchNormalization, LayerNormalization, activations, binary ops, Softmax and Concat on float32,
// in the plain format and (4-D activations) in oneDNN's blocked format nChw16c (AVX-512) / nChw8c. It
// declines what oneDNN would run with its own reference implementation (ours is faster) and
// gives every primitive a user-managed scratchpad in the run context's scratch memory.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace infera {

std::shared_ptr<const Backend> make_dnnl_backend();

// The blocked format of this CPU (nChw16c with AVX-512, else nChw8c).
Format dnnl_blocked_format();

}  // namespace infera
