#loc1 = loc("x")
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"} loc("x"), %arg1: tensor<3x4xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x4xf32> {jax.result_info = "", mhlo.layout_mode = "default"}, tensor<2xf32> {jax.result_info = "[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc(#loc1)
    %1 = call @relu(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %3 = stablehlo.iota dim = 0 : tensor<2xi32>
    %4 = stablehlo.convert %3 : (tensor<2xi32>) -> tensor<2xf32>
    %5 = stablehlo.compare  GT, %2, %4,  FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %6 = stablehlo.select %5, %2, %4 : tensor<2xi1>, tensor<2xf32>
    %7 = stablehlo.slice %1 [0:2, 1:4:2] : (tensor<2x4xf32>) -> tensor<2x2xf32>
    %8 = stablehlo.transpose %7, dims = [1, 0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %9 = stablehlo.reshape %8 : (tensor<2x2xf32>) -> tensor<4xf32>
    %10 = stablehlo.concatenate %9, %9, dim = 0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %11 = stablehlo.dynamic_slice %10, %c, sizes = [2] : (tensor<8xf32>, tensor<i32>) -> tensor<2xf32>
    %12 = stablehlo.add %6, %11 : tensor<2xf32>
    %13 = stablehlo.reduce(%1 init: %cst) across dimensions = [0] : (tensor<2x4xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%arg2: tensor<f32>, %arg3: tensor<f32>)  {
      %16 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %16 : tensor<f32>
    }
    %14 = stablehlo.pad %13, %cst, low = [1], high = [0], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<5xf32>
    %15 = stablehlo.reverse %14, dims = [0] : tensor<5xf32>
    return %1, %12 : tensor<2x4xf32>, tensor<2xf32>
  }
  func.func private @relu(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
}
#loc2 = loc("y")
