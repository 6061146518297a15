// Every kernel variant of the GPU kernel library, one line each: the name says precision, op,
// layout, algorithm and tile. KernelId (kernels.h) is generated from this list, conv_candidates /
// gemm_candidates return these ids, and tests/gpu/test_kernels enumerates it, so a variant added
// here gets its test without further registration (the test fails if a variant is never run).
// No include guard: included with INFERA_GPU_KERNEL(name, family, dtype, what) defined.
//
//                name                                            family      dtype  what

// fp16 implicit GEMM on the matrix units (BMxBN block tile: output pixels x output channels).
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_256x128, kConv, kF16, "8 warps, multistage cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_256x64, kConv, kF16, "8 warps, multistage cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_128x128, kConv, kF16, "8 warps, multistage cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_128x64, kConv, kF16, "4 warps, multistage cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_64x128, kConv, kF16, "4 warps, multistage cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_64x64, kConv, kF16, "4 warps, multistage cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_64x64_splitk, kConv, kF16, "split-K partials + epilogue pass")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_mma_64x128_splitk, kConv, kF16, "split-K partials + epilogue pass")
// fp16 implicit GEMM on Hopper's warpgroup MMA (sm_90a code; offered only where it can run).
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_wgmma_128x128, kConv, kF16, "2 warpgroups, k-tile 64, cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_wgmma_128x256, kConv, kF16, "2 warpgroups, k-tile 64, cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_wgmma_256x128, kConv, kF16, "4 warpgroups, k-tile 64, cp.async")
INFERA_GPU_KERNEL(f16_conv_nhwc_implicit_gemm_wgmma_64x128, kConv, kF16, "1 warpgroup, k-tile 64, cp.async")
// fp32 implicit GEMM on the FMA units (no TF32).
INFERA_GPU_KERNEL(f32_conv_nhwc_implicit_gemm_simt_128x128, kConv, kF32, "8x8 per thread")
INFERA_GPU_KERNEL(f32_conv_nhwc_implicit_gemm_simt_64x64, kConv, kF32, "4x4 per thread")
// direct convolution: depthwise (one input channel per output channel) and small groups.
INFERA_GPU_KERNEL(f16_conv_nhwc_depthwise_direct, kConv, kF16, "channel vectors, fp32 accumulation")
INFERA_GPU_KERNEL(f32_conv_nhwc_depthwise_direct, kConv, kF32, "channel vectors")
INFERA_GPU_KERNEL(f16_conv_nhwc_grouped_direct, kConv, kF16, "one output element per thread")
INFERA_GPU_KERNEL(f32_conv_nhwc_grouped_direct, kConv, kF32, "one output element per thread")

// int8 implicit GEMM (com.infera.QConv) on the integer matrix units, requantize epilogue.
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_256x128, kQConv, kS8, "8 warps, k-tile 64, cp.async")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_128x128, kQConv, kS8, "8 warps, k-tile 64, cp.async")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_128x64, kQConv, kS8, "4 warps, k-tile 64, cp.async, any even C")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_64x64, kQConv, kS8, "4 warps, k-tile 64, cp.async, any even C")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_64x64_splitk, kQConv, kS8,
                  "split-K int32 partials + requantize pass (small grids: batch 1)")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_64x64_persist, kQConv, kS8,
                  "persistent, K <= 256: N tile's weights resident, next tile + residual prefetched")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_64x128_persist, kQConv, kS8,
                  "persistent, K <= 256: N tile's weights resident, next tile + residual prefetched")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_mma_128x128_persist, kQConv, kS8,
                  "persistent, 8 warps, K <= 256: weights resident, next tile + residual prefetched")
// int8 implicit GEMM on Hopper's warpgroup MMA (wgmma s8, sm_90a code; offered only where it can run).
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_wgmma_128x128, kQConv, kS8, "2 warpgroups, k-tile 128, cp.async")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_wgmma_128x256, kQConv, kS8, "2 warpgroups, k-tile 128, cp.async")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_wgmma_256x128, kQConv, kS8, "4 warpgroups, k-tile 128, cp.async")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_wgmma_64x128, kQConv, kS8, "1 warpgroup, k-tile 128, cp.async")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_wgmma_128x128_s2, kQConv, kS8,
                  "2 warpgroups, k-tile 128, 2 stages, 2 blocks/SM")
INFERA_GPU_KERNEL(s8_conv_nhwc_implicit_gemm_wgmma_64x128_s2, kQConv, kS8,
                  "1 warpgroup, k-tile 128, 2 stages, 4 blocks/SM")
// int8 on Hopper through CUTLASS 3 (sm_90a; built when the CUTLASS headers are found, s8_cutlass.h):
// TMA warp-specialized mainloops, the reference's requantize as the epilogue visitor tree (exact).
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_gemm_128x128, kQConv, kS8, "CUTLASS GEMM (1x1 s1), cooperative persistent")
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_gemm_128x256, kQConv, kS8, "CUTLASS GEMM (1x1 s1), cooperative persistent")
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_gemm_256x128, kQConv, kS8, "CUTLASS GEMM (1x1 s1), cooperative persistent")
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_gemm_256x64, kQConv, kS8, "CUTLASS GEMM (1x1 s1), cooperative persistent")
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_gemm_pp_128x64, kQConv, kS8, "CUTLASS GEMM (1x1 s1), ping-pong persistent")
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_gemm_pp_64x128, kQConv, kS8, "CUTLASS GEMM (1x1 s1), ping-pong persistent")
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_conv_128x128, kQConv, kS8, "CUTLASS implicit-GEMM conv, TMA im2col, k-tile 64")
INFERA_GPU_KERNEL(s8_conv_nhwc_cutlass_conv_128x128_k128, kQConv, kS8,
                  "CUTLASS implicit-GEMM conv, TMA im2col, k-tile 128")
// QuantizeLinear / DequantizeLinear per tensor (the float side fp32 or fp16).
INFERA_GPU_KERNEL(s8_quantize_linear, kQuant, kS8, "float -> int8/uint8, round half even, saturate")
INFERA_GPU_KERNEL(s8_dequantize_linear, kQuant, kS8, "int8/uint8 -> float")

// GEMM / batched MatMul (row-major; B given as [N][K] takes the matrix-unit path).
INFERA_GPU_KERNEL(f16_gemm_mma_128x128, kGemm, kF16, "implicit GEMM kernel, B as [N][K]")
INFERA_GPU_KERNEL(f16_gemm_mma_64x64, kGemm, kF16, "implicit GEMM kernel, B as [N][K]")
INFERA_GPU_KERNEL(f16_gemm_mma_64x64_splitk, kGemm, kF16, "implicit GEMM kernel, B as [N][K], split-K")
INFERA_GPU_KERNEL(f16_gemm_simt, kGemm, kF16, "any transposes")
INFERA_GPU_KERNEL(f32_gemm_simt, kGemm, kF32, "any transposes")

// Pooling.
INFERA_GPU_KERNEL(f16_pool_nhwc, kPool, kF16, "max / avg, pads, dilation, ceil mode")
INFERA_GPU_KERNEL(f32_pool_nhwc, kPool, kF32, "max / avg, pads, dilation, ceil mode")
INFERA_GPU_KERNEL(s8_max_pool_nhwc, kPool, kS8, "int8 / uint8 max, pads, dilation, ceil mode")
INFERA_GPU_KERNEL(f16_global_pool_nhwc, kGlobalPool, kF16, "global max / avg")
INFERA_GPU_KERNEL(f32_global_pool_nhwc, kGlobalPool, kF32, "global max / avg")

// Fused elementwise chain (output dtype named; inputs fp16 or fp32 each).
INFERA_GPU_KERNEL(f16_pointwise_nhwc, kPointwise, kF16, "chain of binary/unary ops, NHWC broadcast")
INFERA_GPU_KERNEL(f32_pointwise_nhwc, kPointwise, kF32, "chain of binary/unary ops, NHWC broadcast")
INFERA_GPU_KERNEL(cast_f16_f32, kCast, kF16, "through the pointwise kernel")
INFERA_GPU_KERNEL(f16_batchnorm_affine_nhwc, kBatchNorm, kF16, "unfolded BatchNorm as per-channel affine")
INFERA_GPU_KERNEL(f32_batchnorm_affine_nhwc, kBatchNorm, kF32, "unfolded BatchNorm as per-channel affine")
INFERA_GPU_KERNEL(f16_concat_nhwc_copy, kConcat, kF16, "copy into a channel slice")
INFERA_GPU_KERNEL(f32_concat_nhwc_copy, kConcat, kF32, "copy into a channel slice")

// Softmax / LogSoftmax over the last axis.
INFERA_GPU_KERNEL(f16_softmax_lastaxis, kSoftmax, kF16, "one block per row")
INFERA_GPU_KERNEL(f32_softmax_lastaxis, kSoftmax, kF32, "one block per row")

// Resize (nearest / bilinear, ONNX coordinate modes).
INFERA_GPU_KERNEL(f16_resize_nhwc, kResize, kF16, "nearest / bilinear")
INFERA_GPU_KERNEL(f32_resize_nhwc, kResize, kF32, "nearest / bilinear")

// Layout transforms at the model boundary, fused with the cast (output dtype named).
INFERA_GPU_KERNEL(f16_layout_nchw_to_nhwc, kLayout, kF16, "tiled transpose, input fp32 or fp16")
INFERA_GPU_KERNEL(f32_layout_nchw_to_nhwc, kLayout, kF32, "tiled transpose, input fp32 or fp16")
INFERA_GPU_KERNEL(f16_layout_nhwc_to_nchw, kLayout, kF16, "tiled transpose, input fp32 or fp16")
INFERA_GPU_KERNEL(f32_layout_nhwc_to_nchw, kLayout, kF32, "tiled transpose, input fp32 or fp16")

// Strided copies of plain tensors (Transpose, Slice, Split, Concat, Expand). Bits are copied: the
// f16 variants move any 2-byte type, the f32 ones any 4-byte type and int64 as pairs of words.
INFERA_GPU_KERNEL(f16_copy_strided, kCopy, kF16, "rank <= 6 gather/scatter, up to 16 bytes per thread")
INFERA_GPU_KERNEL(f32_copy_strided, kCopy, kF32, "rank <= 6 gather/scatter, up to 16 bytes per thread")
INFERA_GPU_KERNEL(f16_transpose_tiled_64x64, kTranspose, kF16, "shared-memory tile, 4-byte accesses")
INFERA_GPU_KERNEL(f16_transpose_tiled_32x32, kTranspose, kF16, "shared-memory tile")
INFERA_GPU_KERNEL(f32_transpose_tiled_32x32, kTranspose, kF32, "shared-memory tile")

// LayerNormalization over the last axis (fp32 statistics).
INFERA_GPU_KERNEL(f16_layernorm_lastaxis_warp, kLayerNorm, kF16, "one warp per row, row in registers, cols <= 1024")
INFERA_GPU_KERNEL(f32_layernorm_lastaxis_warp, kLayerNorm, kF32, "one warp per row, row in registers, cols <= 1024")
INFERA_GPU_KERNEL(f16_layernorm_lastaxis_block, kLayerNorm, kF16, "one block per row, row in registers, cols <= 8192")
INFERA_GPU_KERNEL(f32_layernorm_lastaxis_block, kLayerNorm, kF32, "one block per row, row in registers, cols <= 8192")
INFERA_GPU_KERNEL(f16_layernorm_lastaxis_loop, kLayerNorm, kF16, "one block per row, three reads, any cols")
INFERA_GPU_KERNEL(f32_layernorm_lastaxis_loop, kLayerNorm, kF32, "one block per row, three reads, any cols")

// Sum / mean / max / min reductions (fp32 accumulation, NaN propagating max / min).
INFERA_GPU_KERNEL(f16_reduce_lastaxis_warp, kReduce, kF16, "one warp per row, cols <= 1024")
INFERA_GPU_KERNEL(f32_reduce_lastaxis_warp, kReduce, kF32, "one warp per row, cols <= 1024")
INFERA_GPU_KERNEL(f16_reduce_lastaxis_block, kReduce, kF16, "one block per row")
INFERA_GPU_KERNEL(f32_reduce_lastaxis_block, kReduce, kF32, "one block per row")
INFERA_GPU_KERNEL(f16_reduce_middle, kReduce, kF16, "32 inner x 8 reduce threads per block")
INFERA_GPU_KERNEL(f32_reduce_middle, kReduce, kF32, "32 inner x 8 reduce threads per block")
