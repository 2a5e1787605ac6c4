/* kname: kernel names demangled and shortened. The names are real: every
 * distinct short form among the kernels of the recordings in tests/fixtures
 * (gpuwhy dump --type kernel), with the short form a report shows: the same
 * in every build, libiberty or not (src/util/demangle.c). */
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "util/kname.h"

static const struct {
	const char *name, *short_form;
} real[] = {
	{ "_Z13gen_sequencedI17curandStateXORWOWfiXadL_Z21curand_uniform_noargsIS0_EfPT_iEE10rng_co"
	  "nfigIS0_L14curandOrdering101EEEvS3_PT0_mmT1_",
	  "gen_sequenced" },
	{ "_Z16gemmSN_NN_kernelIfLi128ELi2ELi4ELi8ELi2ELi4ELb0E30cublasGemvTensorStridedBatchedIKfE"
	  "S2_S0_IfEEv22cublasGemmSmallNParamsIT7_T8_T9_T_E",
	  "gemmSN_NN_kernel" },
	{ "_Z16gemmSN_TN_kernelIfLi128ELi16ELi2ELi4ELi2ELi2ELb1E30cublasGemvTensorStridedBatchedIKf"
	  "ES2_S0_IfEEv22cublasGemmSmallNParamsIT7_T8_T9_T_E",
	  "gemmSN_TN_kernel" },
	{ "_Z20generate_seed_pseudoI10rng_configI17curandStateXORWOWL14curandOrdering101EEEvyyyS2_P"
	  "S1_Pj",
	  "generate_seed_pseudo" },
	{ "_Z23implicit_convolve_sgemmI13__nv_bfloat16S0_Li1024ELi6ELi7ELi3ELi3ELi5ELi1ELb0ELb0ELb1"
	  "EEviiiPKT_iPT0_S3_18kernel_conv_paramsyiffiPKS4_S8_bbii",
	  "implicit_convolve_sgemm" },
	{ "_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE",
	  "ncclDevKernel_AllGather_RING_LL" },
	{ "_Z31ncclDevKernel_Broadcast_RING_LL24ncclDevKernelArgsStorageILm4096EE",
	  "ncclDevKernel_Broadcast_RING_LL" },
	{ "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
	  "ncclDevKernel_AllReduce_Sum_f32_RING_LL" },
	{ "_Z8gw_scalePfif",
	  "gw_scale" },
	{ "_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock"
	  "22ImplicitGemmMultistageINS_4gemm9GemmShapeILi256ELi64ELi32EEENS4_52Conv2dWgradOutputGra"
	  "dientTileAccessIteratorOptimizedINS_11MatrixShapeILi256ELi32EEENS_10bfloat16_tENS_9trans"
	  "form29PitchLinearWarpRakedThreadMapINS_16PitchLinearShapeILi256ELi32EEELi128ENSF_ILi8ELi"
	  "4EEELi8EEENS_12AlignedArrayISC_Li8ELi16EEEEENSD_11threadblock25RegularTileAccessIterator"
	  "ISB_SC_NS_6layout40ColumnMajorTensorOpMultiplicandCongruousILi16ELi64EEELi1ESI_Li16EEELN"
	  "S_4arch14CacheOperation4KindE0ENS4_48Conv2dWgradActivationTileAccessIteratorOptimizedINS"
	  "A_ILi32ELi64EEESC_NSE_INSF_ILi64ELi32EEELi128ESH_Li8EEESK_EENSN_ISW_SC_NSO_37RowMajorTen"
	  "sorOpMultiplicandCongruousILi16ELi64EEELi0ESY_Li16EEELSU_0ENS6_11threadblock9MmaPolicyIN"
	  "S6_4warp11MmaTensorOpINS7_ILi64ELi64ELi32EEESC_SQ_SC_S11_fNSO_8RowMajorENS15_17MmaTensor"
	  "OpPolicyINSS_3MmaINS7_ILi16ELi8ELi16EEELi32ESC_S18_SC_NSO_11ColumnMajorEfS18_NSS_13OpMul"
	  "tiplyAddEEENSA_ILi1ELi1EEEEELi1ELb0EbEENSA_ILi0ELi0EEES1I_Li1EEELi4EbEENS_8epilogue11thr"
	  "eadblock8EpilogueIS8_S1H_Li1ENS1M_22PredicatedTileIteratorINS1M_26OutputTileOptimalThrea"
	  "dMapINS1M_15OutputTileShapeILi64ELi8ELi4ELi1ELi1EEENS1Q_ILi1ELi8ELi1ELi1ELi8EEELi128ELi4"
	  "ELi32EEEfLb0ENSO_9NoPermuteELb0EEENS1L_4warp24FragmentIteratorTensorOpIS17_S1B_fNS_5Arra"
	  "yIfLi4ELb1EEES18_EENS1W_20TileIteratorTensorOpIS17_S1B_fS18_EENS1M_18SharedLoadIteratorI"
	  "NS1T_18CompactedThreadMapEfLi16EEENS1L_6thread17LinearCombinationIfLi4EffLNS26_9ScaleTyp"
	  "e4KindE0ELNS_15FloatRoundStyleE2EEENSA_ILi0ELi8EEELi2ELi1EEENS13_30GemmIdentityThreadblo"
	  "ckSwizzleILi4EEELNS1_8OperatorE2ENS1_17Conv2dProblemSizeELNS1_9GroupModeE0EEEEEvNT_6Para"
	  "msE",
	  "cutlass ImplicitGemmConvolution" },
	{ "_ZN17cutlass__5x_cudnn6KernelINS_9reduction6kernel12ReduceSplitKINS_11MatrixShapeILi4ELi"
	  "256EEENS_8epilogue6thread17LinearCombinationINS_10bfloat16_tELi8EffLNS7_9ScaleType4KindE"
	  "0ELNS_15FloatRoundStyleE2EEENS1_6thread9ReduceAddIffLi8EEELi4EEEEEvNT_6ParamsE",
	  "cutlass ReduceSplitK" },
	{ "_ZN21cask_plugin__5x_cudnn14xmma__5x_cudnn28init_device_workspace_kernelIN14xmma__5x_cud"
	  "nn13implicit_gemm13wgrad_indexed23Warp_specialized_paramsINS2_20Grid_constant_paramsEEEE"
	  "EvT_b",
	  "init_device_workspace_kernel" },
	{ "_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIN3c108BFloat16ENS0_14func_wrapper_t"
	  "IS4_ZNS0_11sum_functorIS4_fS4_EclERNS_14TensorIteratorEEUlffE_EEjS4_Li4ELi8EEEEEvT1_",
	  "reduce_kernel (sum)" },
	{ "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIN3c108BFloat16ENS0_7MeanOpsIS4_ffS4"
	  "_EEjS4_Li4ELi8EEEEEvT1_",
	  "reduce_kernel (Mean)" },
	{ "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_13BUnaryFu"
	  "nctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EE"
	  "viT1_",
	  "elementwise_kernel (Mul)" },
	{ "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_15CUDAFunc"
	  "tor_addIfEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
	  "elementwise_kernel (add)" },
	{ "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direc"
	  "t_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_EEvS4_RKT_EU"
	  "liE_EEviT1_",
	  "elementwise_kernel (direct_copy)" },
	{ "_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18Tensor"
	  "IteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculat"
	  "orILi1EjESB_NS0_6memory12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_T2_T3_T4_"
	  "T5_",
	  "unrolled_elementwise_kernel (direct_copy)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEE"
	  "viT0_T1_",
	  "vectorized_elementwise_kernel (Fill)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13AUnaryFunctorIfffNS0_15binary_int"
	  "ernal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (Mul)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffZNS0_67_GLOBAL__"
	  "N__06c19b41_28_ActivationThresholdKernel_cu_751192d7_1581121threshold_kernel_implIfEEvRN"
	  "S_18TensorIteratorBaseET_S7_EUlffE_EESt5arrayIPcLm3EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (threshold)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3"
	  "EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (add)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_51_GLOBAL__N__b1108092_12_PowKerne"
	  "l_cu_751192d7_2139629pow_tensor_scalar_kernel_implIffEEvRNS_18TensorIteratorBaseET0_EUlf"
	  "E_St5arrayIPcLm2EEEEviS6_T1_",
	  "vectorized_elementwise_kernel (pow_tensor_scalar)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_16tanh_kernel_cudaERNS_18TensorI"
	  "teratorBaseEENKUlvE0_clEvENKUlvE0_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (tanh)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_49_GLOBAL__N__d2ba64fb_16_Tensor"
	  "Compare_cu_71e06f4e19launch_clamp_scalarERNS_18TensorIteratorBaseEN3c106ScalarES6_NS0_6d"
	  "etail11ClampLimitsEENKUlvE_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (clamp_scalar)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_18"
	  "TensorIteratorBaseEEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (bfloat16_copy)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_18GeluCUDAKernelImplERNS_18Tenso"
	  "rIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2"
	  "EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (Gelu)" },
	{ "_ZN2at6native29vectorized_elementwise_kernelILi8EZZZNS0_26GeluBackwardCUDAKernelImplERNS"
	  "_18TensorIteratorBaseENS0_8GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16ES8_E_St5"
	  "arrayIPcLm3EEEEviT0_T1_",
	  "vectorized_elementwise_kernel (GeluBackward)" },
	{ "_ZN2at6native38_GLOBAL__N__7649b931_6_RNN_cu_eca79a6d6kernel17lstm_cell_forwardIffiLi1EE"
	  "EvNS_4cuda6detail10TensorInfoIT_T1_EES9_S9_S9_S9_S9_S9_S9_S8_S8_",
	  "lstm_cell_forward" },
	{ "_ZN2at6native38_GLOBAL__N__7649b931_6_RNN_cu_eca79a6d6kernel18lstm_cell_backwardIffiLi1E"
	  "EEvNS_4cuda6detail10TensorInfoIT_T1_EES9_S9_S9_S9_S9_S9_S8_S8_",
	  "lstm_cell_backward" },
	{ "_ZN2at6native39_GLOBAL__N__5cd812b1_7_Loss_cu_5b0651e138nll_loss_forward_reduce_cuda_ker"
	  "nel_2dIfflEEvPT_S4_PKS3_PKT1_S6_bllll",
	  "nll_loss_forward_reduce_cuda_kernel_2d" },
	{ "_ZN2at6native39_GLOBAL__N__5cd812b1_7_Loss_cu_5b0651e139nll_loss_backward_reduce_cuda_ke"
	  "rnel_2dIflEEvPT_PKS3_PKT0_S6_S6_biill",
	  "nll_loss_backward_reduce_cuda_kernel_2d" },
	{ "_ZN2at6native40_GLOBAL__N__0f1a8107_8_Shape_cu_49f7391c30CatArrayBatchedCopy_vectorizedI"
	  "NS1_10OpaqueTypeILj4EEEjLi1ELi128ELi1ELi16ELi4EEEvPcNS1_25CatArrInputTensorMetadataIT_T0"
	  "_XT2_EXT3_EEENS1_16TensorSizeStrideIS8_Lj4EEEiS8_",
	  "CatArrayBatchedCopy_vectorized" },
	{ "_ZN2at6native50_GLOBAL__N__b6ca21f8_17_ForeachUnaryOp_cu_77fe623d25multi_tensor_apply_ke"
	  "rnelINS1_18TensorListMetadataILi2EEENS1_14UnaryOpFunctorIfLi2ELi1ELi1EEEJNS0_4SqrtIfEEEE"
	  "EvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (Sqrt)" },
	{ "_ZN2at6native52_GLOBAL__N__4671fab5_19_ForeachTernaryOp_cu_5285c63625multi_tensor_apply_"
	  "kernelINS1_18TensorListMetadataILi2EEENS1_22TernaryOpScalarFunctorIfLi2ELi2ELi0EEEJNS0_1"
	  "1LerpFunctorIfEEfEEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (Lerp)" },
	{ "_ZN2at6native52_GLOBAL__N__c815dac0_19_fused_adamw_impl_cu_8b44fa2325multi_tensor_apply_"
	  "kernelINS1_32FusedOptimizerTensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIfLi4ELNS0"
	  "_9ADAM_MODEE1ELb0EEEJPKfdddddbS9_S9_EEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (FusedAdam)" },
	{ "_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e8543distribution_elem"
	  "entwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda20normal_and_transformIN3c108BFloat1"
	  "6EfPNS_17CUDAGeneratorImplEZZZNS4_13normal_kernelIS9_EEvRKNS_10TensorBaseEddT_ENKUlvE_cl"
	  "EvENKUlvE2_clEvEUlfE_EEvRNS_18TensorIteratorBaseET1_T2_EUlP24curandStatePhilox4_32_10E0_"
	  "ZNS1_27distribution_nullary_kernelIS7_f6float4S9_SO_SH_EEvSJ_SL_RKT3_T4_EUlifE_EEvlNS_15"
	  "PhiloxCudaStateESK_SL_",
	  "distribution_elementwise_grid_stride_kernel (normal)" },
	{ "_ZN2at6native54_GLOBAL__N__f8a10d72_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_appl"
	  "y_kernelINS1_18TensorListMetadataILi3EEENS1_24PointwiseOpScalarFunctorIfLi3ELi3ELi0EEEJS"
	  "t10multipliesIfEfEEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (multiplies)" },
	{ "_ZN2at6native54_GLOBAL__N__f8a10d72_21_ForeachPointwiseOp_cu_ef478fac25multi_tensor_appl"
	  "y_kernelINS1_28TensorListScalarListMetadataIfLi3EEENS1_28PointwiseOpScalarListFunctorIfL"
	  "i3ELi3ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (divides)" },
	{ "_ZN2at6native55_GLOBAL__N__d25d856e_22_ForeachBinaryOpList_cu_a911ec4325multi_tensor_app"
	  "ly_kernelINS1_18TensorListMetadataILi2EEENS1_24BinaryOpListAlphaFunctorIfLi2ELi2ELi0EEEJ"
	  "St4plusIfEfEEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (plus)" },
	{ "_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_a"
	  "pply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJS"
	  "t10multipliesIfEfEEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (multiplies)" },
	{ "_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_a"
	  "pply_kernelINS1_18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJS"
	  "t4plusIfEfEEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (plus)" },
	{ "_ZN2at6native60_GLOBAL__N__2b2da9da_27_DistributionRandomKernel_cu_f88cee4443distributio"
	  "n_elementwise_grid_stride_kernelIjLi4EZZZNS0_9templates4cuda21random_from_to_kernelIPNS_"
	  "17CUDAGeneratorImplEEEvRNS_18TensorIteratorBaseEmlT_ENKUlvE_clEvENKUlvE2_clEvEUlP24curan"
	  "dStatePhilox4_32_10E0_ZNS1_27distribution_nullary_kernelIlj5uint4S7_SF_ZZZS5_IS7_EvS9_ml"
	  "SA_ENKSB_clEvENKSC_clEvEUljE_EEvS9_T2_RKT3_T4_EUlijE_EEvlNS_15PhiloxCudaStateET1_SJ_",
	  "distribution_elementwise_grid_stride_kernel (random_from_to)" },
	{ "_ZN2at6native61_GLOBAL__N__538ad94b_28_ForeachBinaryOpScalarList_cu_dda10a6925multi_tens"
	  "or_apply_kernelINS1_28TensorListScalarListMetadataIfLi1EEENS1_25BinaryOpScalarListFuncto"
	  "rIfLi1ELi1ELi0EEEJSt7dividesIfEEEEvT_T0_DpT1_",
	  "multi_tensor_apply_kernel (divides)" },
	{ "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6320softmax_warp_forwardIN3c108BFloat16ES2"
	  "_fLi4ELb1ELb0EEEvPT0_PKT_iiiPKbib",
	  "softmax_warp_forward" },
	{ "_ZN43_GLOBAL__N__b6de9c8c_10_SoftMax_cu_9f978f6321softmax_warp_backwardIN3c108BFloat16ES"
	  "2_fLi4ELb1ELb0EEEvPT0_PKT_S7_iiiPKb",
	  "softmax_warp_backward" },
	{ "_ZN5cudnn19engines_precompiled16nchwToNhwcKernelI13__nv_bfloat16S2_fLb0ELb1EL21cudnnKern"
	  "elDataType_t0EEEvNS0_18nchw2nhwc_params_tIT1_EEPKT_PT0_",
	  "nchwToNhwcKernel" },
	{ "_ZN5cudnn19engines_precompiled16nhwcToNchwKernelI13__nv_bfloat16S2_fLb1ELb0EL21cudnnKern"
	  "elDataType_t0EEEvNS0_18nhwc2nchw_params_tIT1_EEPKT_PT0_",
	  "nhwcToNchwKernel" },
	{ "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE",
	  "cutlass_80_simt_sgemm_64x64_8x5_nn_align1" },
	{ "_ZN7cutlass7Kernel2I42cutlass_80_simt_sgemm_128x32_8x5_nn_align1EEvNT_6ParamsE",
	  "cutlass_80_simt_sgemm_128x32_8x5_nn_align1" },
	{ "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE",
	  "cutlass_80_simt_sgemm_256x128_8x4_nn_align1" },
	{ "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nt_align1EEvNT_6ParamsE",
	  "cutlass_80_simt_sgemm_256x128_8x4_nt_align1" },
	{ "_ZN7cutlass7Kernel2I55cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nt_align1EEvNT_6Para"
	  "msE",
	  "cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_nt_align1" },
	{ "_ZN7cutlass7Kernel2I62cutlass_80_tensorop_bf16_s16816gemm_bf16_128x64_64x3_nt_align2EEvN"
	  "T_6ParamsE",
	  "cutlass_80_tensorop_bf16_s16816gemm_bf16_128x64_64x3_nt_align2" },
	{ "_ZN7cutlass7Kernel2I63cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_32x3_nn_align2EEv"
	  "NT_6ParamsE",
	  "cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_32x3_nn_align2" },
	{ "_ZN7cutlass7Kernel2I67cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_32x1_nt_align"
	  "2EEvNT_6ParamsE",
	  "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_32x1_nt_align2" },
	{ "_ZN7cutlass7Kernel2I67cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_64x1_nn_align"
	  "2EEvNT_6ParamsE",
	  "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_64x1_nn_align2" },
	{ "_ZN7cutlass7Kernel2I68cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_alig"
	  "n2EEvNT_6ParamsE",
	  "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align2" },
	{ "_ZN7cutlass7Kernel2I68cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_alig"
	  "n2EEvNT_6ParamsE",
	  "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_nn_align2" },
	{ "_ZN7cutlass7Kernel2I68cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_alig"
	  "n2EEvNT_6ParamsE",
	  "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align2" },
	{ "_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb0EfffLb1ELb0ELb0ELb0EEEvNS_18cublasSp"
	  "litKParamsIT4_EEPKT2_PKT8_PT7_PT3_PKS2_SF_PKT9_S6_PSG_PvlPS2_PiSL_SL_SF_SF_SF_SF_SF_",
	  "splitKreduce_kernel" },
	{ "_ZN8internal5gemvx6kernelIiiffffLb0ELb1ELb0ELb0ELi6ELb0E18cublasGemvParamsExIi30cublasGe"
	  "mvTensorStridedBatchedIKfES5_S3_IfEfEEENSt9enable_ifIXntT5_EvE4typeET11_",
	  "gemvx::kernel" },
	{ "cupy_absolute__float32_float32",
	  "cupy_absolute__float32_float32" },
	{ "cupy_add__float32_float_float32",
	  "cupy_add__float32_float_float32" },
	{ "cupy_maximum__float32_float_float32",
	  "cupy_maximum__float32_float_float32" },
	{ "cupy_multiply__float32_float32_float32",
	  "cupy_multiply__float32_float32_float32" },
	{ "cupy_multiply__float32_float_float32",
	  "cupy_multiply__float32_float_float32" },
	{ "cupy_random_x_mod_1",
	  "cupy_random_x_mod_1" },
	{ "cupy_sqrt__float32_float32",
	  "cupy_sqrt__float32_float32" },
	{ "cupy_subtract__float32_float_float32",
	  "cupy_subtract__float32_float_float32" },
	{ "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN",
	  "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN" },
	{ "nvjet_sm90_tst_192x192_64x3_1x2_h_bz_coopB_NNN",
	  "nvjet_sm90_tst_192x192_64x3_1x2_h_bz_coopB_NNN" },
	{ "nvjet_sm90_tst_192x192_64x3_1x2_h_bz_coopB_NTN",
	  "nvjet_sm90_tst_192x192_64x3_1x2_h_bz_coopB_NTN" },
	{ "nvjet_sm90_tst_192x192_64x4_1x2_h_bz_coopB_bias_TNN",
	  "nvjet_sm90_tst_192x192_64x4_1x2_h_bz_coopB_bias_TNN" },
	{ "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
	  "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT" },
	{ "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT",
	  "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT" },
	{ "nvjet_sm90_tst_48x64_64x15_4x2_h_bz_bias_TNN",
	  "nvjet_sm90_tst_48x64_64x15_4x2_h_bz_bias_TNN" },
	{ "nvjet_sm90_tst_64x128_64x8_2x1_v_bz_NTN",
	  "nvjet_sm90_tst_64x128_64x8_2x1_v_bz_NTN" },
	{ "nvjet_sm90_tst_64x32_64x16_1x2_h_bz_NNT",
	  "nvjet_sm90_tst_64x32_64x16_1x2_h_bz_NNT" },
	{ "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT",
	  "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT" },
	{ "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_bias_TNT",
	  "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_bias_TNT" },
	{ "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_stage3_wa"
	  "rpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn",
	  "sm80_xmma_fprop_implicit_gemm_f32f32 128x32x8" },
	{ "sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize"
	  "128x16x64_stage1_warpsize4x1x1_g1_tensor16x8x8_alignc4_execute_kernel__5x_cudnn",
	  "sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_tf32f32 128x16x64" },
	{ "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma_aligna4"
	  "_alignc4_execute_kernel__5x_cublas",
	  "sm80_xmma_gemm_f32f32 128x64x8" },
	{ "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna"
	  "4_alignc4_execute_kernel__5x_cublas",
	  "sm80_xmma_gemm_f32f32 256x128x8" },
	{ "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_"
	  "alignc4_execute_kernel__5x_cublas",
	  "sm80_xmma_gemm_f32f32 32x32x8" },
	{ "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna"
	  "4_alignc4_execute_kernel__5x_cublas",
	  "sm80_xmma_gemm_f32f32 128x128x8" },
	{ "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64"
	  "_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn",
	  "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32 64x64x64" },
	{ "sm80_xmma_wgrad_implicit_gemm_indexed_wo_smem_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize"
	  "32x16x64_stage1_warpsize2x1x1_g1_tensor16x8x8_aligna4_alignc4_execute_kernel__5x_cudnn",
	  "sm80_xmma_wgrad_implicit_gemm_indexed_wo_smem_tf32f32 32x16x64" },
	{ "sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_warp"
	  "groupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
	  "sm90_xmma_dgrad_implicit_gemm_bf16bf16 128x128x32" },
	{ "sm90_xmma_dgrad_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize256x64x32_warpgro"
	  "upsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
	  "sm90_xmma_dgrad_implicit_gemm_f32f32 256x64x32" },
	{ "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warp"
	  "groupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
	  "sm90_xmma_fprop_implicit_gemm_bf16bf16 128x128x64" },
	{ "sm90_xmma_wgrad_indexed_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128"
	  "x64_warpgroupsize1x1x1_g1_execute_segment_k_on_kernel__5x_cudnn",
	  "sm90_xmma_wgrad_indexed_implicit_gemm_bf16bf16 128x128x64" },
};

static void test_real_names(void)
{
	char out[KNAME_SHORT_MAX];
	size_t distinct = 0;

	for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
		const char *want = real[i].short_form;
		size_t n = kname_short(real[i].name, out, sizeof(out));

		CHECK(!strcmp(out, want), "%.60s...: got \"%s\", want \"%s\"", real[i].name, out, want);
		CHECK(n == strlen(out), "%.60s: returned %zu for \"%s\"", real[i].name, n, out);
		distinct += !i || strcmp(real[i].short_form, real[i - 1].short_form);
	}
	CHECK(distinct >= 25, "only %zu distinct short forms", distinct);
}

/* The forms people read, given as demangled text (as some tools record them),
 * and names that must come back unchanged. */
static void test_text_names(void)
{
	static const char *const cases[][2] = {
		{ "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
		  "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
		  "vectorized_elementwise_kernel (add)" },
		{ "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
		  "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::"
		  "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float const*, double>("
		  "at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, int)",
		  "multi_tensor_apply_kernel (FusedAdam)" },
		{ "void cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::"
		  "SoftMaxForwardEpilogue>(float*, float const*, int)",
		  "cunn_SoftMaxForward (SoftMaxForward)" },
		{ "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MaxOps<"
		  "float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MaxOps<float>,"
		  " unsigned int, float, 4, 4>)",
		  "reduce_kernel (Max)" },
		{ "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float>(int)",
		  "gemvx::kernel" },
		{ "triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0" },
		{ "triton_red_fused__softmax_1", "triton_red_fused__softmax_1" },
		{ "gw_scale", "gw_scale" },
		{ "ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn" },
		{ "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
		  "segment_k_off_kernel__5x_cublas",
		  "sm90_xmma_gemm_bf16bf16 128x128x64" },
		{ "sm90_xmma_gemm_nodtype_kernel", "sm90_xmma_gemm_nodtype_kernel" },
		{ "", "" },
	};
	char out[KNAME_SHORT_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kname_short(cases[i][0], out, sizeof(out));
		CHECK(!strcmp(out, cases[i][1]), "%.60s: got \"%s\", want \"%s\"", cases[i][0], out, cases[i][1]);
	}
}

static void test_demangle(void)
{
	char out[512];

	kname_demangle("_Z8gw_scalePfif", out, sizeof(out));
	CHECK(!strcmp(out, "gw_scale(float*, int, float)"), "got %s", out);
	CHECK(kname_demangler() >= 1, "every build demangles");
	kname_demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
		       out, sizeof(out));
	CHECK(!strcmp(out, "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
				   "<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, "
				   "std::array<char*, 3ul>)"),
		      "got %s", out);
	kname_demangle("triton_poi_fused_add_mul_0", out, sizeof(out));
	CHECK(!strcmp(out, "triton_poi_fused_add_mul_0"), "got %s", out);
	/* cut to the buffer, always terminated */
	size_t n = kname_demangle("_Z8gw_scalePfif", out, 6);
	CHECK(n == 5 && strlen(out) == 5, "n %zu, \"%s\"", n, out);
	n = kname_short("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_",
			out, 11);
	CHECK(n == 10 && !strcmp(out, "vectorized"), "n %zu, \"%s\"", n, out);
	CHECK(kname_short("x", out, 0) == 0, "a zero-length buffer takes nothing");
}

/* Damaged or hostile names (recordings are input): something printable comes
 * back, within the buffer, and nothing is read past the name. */
static void test_damaged(void)
{
	static const char *const cases[] = {
		"_Z", "_ZN", "_ZNE", "_ZN2at", "_ZN2at6native", "_ZN99x", "_Z999999999999999999999x",
		"_ZN2at6native13reduce_kernelILi128ELi4ENS0_8ReduceOpIN3c108BFloat16ENS0_14func_wrapper_tIS4_ZNS0_11sum",
		"_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm", "_ZILi", "_Z1aILi", "_ZSt", "_ZS", "_ZT", "_ZDp",
		"a<<<<", "a>>>>(", "(anonymous namespace", "(anonymous namespace)::", "::", "a::<b>", "x<y(z>",
		"void f<(", "sm90_xmma_", "sm9",
	};
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(out, 'X', sizeof(out));
		size_t n = kname_short(cases[i], out, sizeof(out));

		CHECK(n < sizeof(out) && out[n] == 0 && strlen(out) == n, "%s: n %zu", cases[i], n);
	}
	kname_short("_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm", out, sizeof(out));
	CHECK(!strcmp(out, "cutlass::Kernel2"), "a cut name: as far as it can be read: %s", out);
	kname_short("_ZN2at", out, sizeof(out));
	CHECK(!strcmp(out, "_ZN2at"), "too little to read: as recorded: %s", out);
	/* nesting deep enough to exhaust a naive recursive reader */
	size_t len = 200000;
	char *deep = malloc(len + 1);

	if (deep) {
		memcpy(deep, "_Z1a", 4);
		memset(deep + 4, 'I', len - 4);
		deep[len] = 0;
		size_t n = kname_short(deep, out, sizeof(out));

		CHECK(n < sizeof(out) && strlen(out) == n, "deep nesting: n %zu", n);
		memset(deep + 2, 'N', len - 2);
		n = kname_short(deep, out, sizeof(out));
		CHECK(n < sizeof(out) && strlen(out) == n, "deep nesting: n %zu", n);
		free(deep);
	}
}

static void test_cache(void)
{
	struct kname_cache *c = kname_cache_new();
	const char *add = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
	char want[256];

	CHECK(c != NULL, "no cache");
	kname_short(add, want, sizeof(want));
	const char *s = kname_cached(c, 7, add, KNAME_SHORT);

	CHECK(!strcmp(s, want), "got %s", s);
	CHECK(kname_cached(c, 7, add, KNAME_SHORT) == s, "the second look-up is the same string");
	kname_demangle(add, want, sizeof(want));
	CHECK(!strcmp(kname_cached(c, 7, add, KNAME_FULL), want), "full form");
	/* many keys: the table grows and keeps every entry */
	char name[32];

	for (uint64_t k = 100; k < 1100; k++) {
		snprintf(name, sizeof(name), "k%llu", (unsigned long long)k);
		kname_cached(c, k, name, KNAME_SHORT);
	}
	for (uint64_t k = 100; k < 1100; k += 99) {
		snprintf(name, sizeof(name), "k%llu", (unsigned long long)k);
		CHECK(!strcmp(kname_cached(c, k, "changed", KNAME_SHORT), name), "key %llu", (unsigned long long)k);
	}
	CHECK(kname_cached(c, 7, add, KNAME_SHORT) == s, "kept through growth");
	CHECK(!strcmp(kname_cached(NULL, 1, "abc", KNAME_SHORT), "abc"), "no cache: the name");
	kname_cache_free(c);
}

int main(void)
{
	test_real_names();
	test_text_names();
	test_demangle();
	test_damaged();
	test_cache();
	T_DONE();
}
