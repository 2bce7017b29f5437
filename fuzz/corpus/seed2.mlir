module {
  func.func @main(%arg0: tensor<4x6xf32>) -> tensor<2x3xf32> {
    %0 = "stablehlo.slice"(%arg0) {limit_indices = dense<[4, 6]> : tensor<2xi64>, start_indices = dense<[0, 0]> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} : (tensor<4x6xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}