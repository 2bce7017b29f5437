func.func @main(%a: tensor<4xf8E4M3FN>) -> tensor<4xf32> {
}