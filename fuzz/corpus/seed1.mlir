"builtin.module"() <{sym_name = "jit_g"}> ({
  "func.func"() <{arg_attrs = [{mhlo.layout_mode = "default"}], function_type = (tensor<5x3xf32>, tensor<2x1xi32>) -> (tensor<2x3xf32>, tensor<3xf32>), res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<5x3xf32>, %arg1: tensor<2x1xi32>):
    %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}> : (tensor<5x3xf32>, tensor<2x1xi32>) -> tensor<2x3xf32>
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.reduce"(%0, %1) <{dimensions = array<i64: 0>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %5 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%5) : (tensor<f32>) -> ()
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
    %3 = "stablehlo.sort"(%2) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %6 = "stablehlo.compare"(%arg4, %arg5) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%6) : (tensor<i1>) -> ()
    }) : (tensor<3xf32>) -> tensor<3xf32>
    %4 = "stablehlo.dot_general"(%0, %0) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
    %7 = "stablehlo.scatter"(%arg0, %arg1, %0) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
      "stablehlo.return"(%arg7) : (tensor<f32>) -> ()
    }) : (tensor<5x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<5x3xf32>
    "func.return"(%0, %3) : (tensor<2x3xf32>, tensor<3xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
