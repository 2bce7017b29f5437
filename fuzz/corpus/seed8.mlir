func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}