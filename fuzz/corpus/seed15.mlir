func.func @main(%a: tensor<4xf32>, %c: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.divide across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}