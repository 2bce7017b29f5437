#loc1 = loc("x")
#loc2 = loc("y")
"builtin.module"() <{sym_name = "jit_f"}> ({
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>, res_attrs = [{jax.result_info = "result"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<2x3xf32> loc("x"), %arg1: tensor<3xf32> loc("y")):
    %0 = "func.call"(%arg0) <{callee = @_scale}> : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(#loc8)
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32> loc(#loc)
    %2 = "stablehlo.reduce"(%0, %1) <{dimensions = array<i64: 0>}> ({
    ^bb0(%arg2: tensor<f32> loc("jit(f)/reduce_sum"(#loc5)), %arg3: tensor<f32> loc("jit(f)/reduce_sum"(#loc5))):
      %4 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(#loc9)
      "stablehlo.return"(%4) : (tensor<f32>) -> () loc(#loc9)
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32> loc(#loc9)
    %3 = "stablehlo.add"(%2, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc(#loc10)
    "func.return"(%3) : (tensor<3xf32>) -> () loc(#loc)
  }) : () -> () loc(#loc)
  "func.func"() <{function_type = (tensor<2x3xf32>) -> tensor<2x3xf32>, sym_name = "_scale", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<2x3xf32> loc("jit(f)/jit(_scale)"(#loc5))):
    %0 = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32> loc(#loc)
    %1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x3xf32> loc(#loc11)
    %2 = "stablehlo.multiply"(%arg0, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc(#loc11)
    "func.return"(%2) : (tensor<2x3xf32>) -> () loc(#loc)
  }) : () -> () loc(#loc)
}) {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} : () -> () loc(#loc)
#loc = loc(unknown)
#loc3 = loc("/tmp/f.py":7:11 to :23)
#loc4 = loc("/tmp/f.py":11:0)
#loc5 = loc("f"(#loc3))
#loc6 = loc(callsite(#loc5 at #loc4))
#loc7 = loc(fused[#loc1, #loc2])
#loc8 = loc("jit(f)/jit(_scale)"(#loc6))
#loc9 = loc("jit(f)/reduce_sum"(#loc6))
#loc10 = loc("jit(f)/add"(#loc6))
#loc11 = loc("jit(f)/jit(_scale)/mul"(#loc6))
