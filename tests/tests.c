/* tests.c — the table of test cases. A new case is declared in its file and listed here. */
#include "tests.h"

#define CASES(X)                                                                                  \
	X(test_conv_grouped_strided_dilated) X(test_conv_chain_backward) X(test_gemm) X(test_matmul_batched) \
	X(test_pooling) X(test_batchnorm) X(test_batchnorm_small_maps) X(test_step_cache_share) X(test_weight_passes) X(test_lstm) X(test_lstm_serial_terms) X(test_lstm_backward_memory) X(test_conv_slow_path) X(test_depthwise_backward_term) X(test_fold_view_batch) X(test_fold_range_where)     \
	X(test_einsum) X(test_embedding_tokens) X(test_unknown_op) X(test_memory_breakdown_adds_up)         \
	X(test_truncated_files) X(test_random_bytes) X(test_cycle) X(test_missing_tensor)                  \
	X(test_overflowing_dims) X(test_negative_dim) X(test_bad_batch_and_inputs) X(test_deep_nesting)    \
	X(test_alloc_failure_every_n) X(test_zoo_all_graphs_resolve) X(test_zoo_params_exact)             \
	X(test_resnet50_flops) X(test_fuzz_corpus_replay) X(test_opsets_11_and_17) X(test_external_data) X(test_dataset_parse) X(test_dataset_errors) X(test_dataset_machine) X(test_machine_profile_roundtrip) X(test_machine_profile_corrupt) X(test_eval_lomachine) X(test_predict_machine) X(test_shot_correction) X(test_predictor_roundtrip) X(test_arith_rate_fixed) X(test_predictor_corrupt_bundles) X(test_predictor_two_hw) X(test_predictor_borrowed_terms) X(test_eval_loruntime) X(test_tree_row_weights) X(test_fusion_patterns) X(test_fusion_memory) X(test_activation_arith) X(test_bias_epilogue) X(test_dropout_memory) X(test_loss_memory) X(test_residual_add_grad) X(test_transposed_weight_grad) X(test_tied_weight_grad) X(test_mean_grad_copy) X(test_dispatch_weights) X(test_conv_backward_workspace) X(test_conv_channel_blocks) X(test_no_avx_conv_workspace) X(test_channels_last_depthwise) X(test_eval_fixed_numbers) X(test_million_nodes) X(test_huge_declared_tensor) X(test_onehot_gathernd) X(test_dataset_rows_match_graphs) X(test_bundle_alloc_failure) X(test_large_block_reuse) X(test_large_block_threads) X(test_analyze_shared_graph_threads) X(test_cli_parse_bytes) X(test_fold_mean_mod) X(test_bundle_names) X(test_runtime_selector) X(test_api_versions) X(test_layer_accessors) X(test_cli_opt_table) X(test_cli_fmt_duration) X(test_cli_worker_root) X(test_csv_replaced_under_a_run) X(test_svg_ticks) X(test_svg_label) X(test_cli_progress_line) X(test_train_progress) X(test_train_opts_v1) X(test_plan_batches) X(test_max_batch) X(test_predictor_runtimes) X(test_eval_lofo) X(test_novelty) X(test_novelty_asymmetric) X(test_novelty_memory_rows) X(test_train_family_folds) X(test_eval_quiet_rows) X(test_eval_cross_hw_three) X(test_tf_step_temporaries) X(test_tf_pool_saved) X(test_tf_activation_grad_in_place) X(test_tf_traced_step_state) X(test_tf_adam_update_in_backward) X(test_torch2_embedding_grad_in_place) X(test_torch2_lstm_saved) X(test_tf_xla_grouped_conv) X(test_tf_distinct_shapes) X(test_tf_rnn_parallel_iterations) X(test_tf_depthwise_filter_copies) X(test_tf_sgd_momentum_early) X(test_tf_weight_grads_late) \
	X(test_cumsum_backward_memory) X(test_stop_gradient) X(test_concat_grad_is_narrowed) X(test_split_part_grads) X(test_tensor_overhead_memory) X(test_dilated_depthwise_backward) X(test_broadcast_product_memory) X(test_einsum_copies) X(test_sum_grad_is_view) \
	X(test_glu_fused) X(test_weight_derived_tensor) X(test_second_gradient) X(test_dead_branch_keeps_nothing) X(test_autograd_records) X(test_slow_conv_columns) X(test_slow_conv_1x1_grad) \
	X(test_conv_weight_reorder) X(test_gelu_strided_grad) X(test_mean_dims_saves_input) X(test_reduce_max_backward_mask) \
	X(test_conv_permuted_input_copy) X(test_program_order) X(test_conv_weights_pass_input_copy) X(test_conv_keeps_channels_last) X(test_product_saves_for_other_operand) X(test_reshape_copies_strided) X(test_memory_timeline) X(test_elu_keeps_its_input) X(test_strided_grad_copies) X(test_torch2_fused_lstm)

#define DECLARE(fn) void fn(void);
CASES(DECLARE)
#define ENTRY(fn) { #fn, fn },
const t_case t_cases[] = { CASES(ENTRY) };
const size_t t_n_cases = sizeof t_cases / sizeof t_cases[0];
