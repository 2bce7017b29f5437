func.func @main(%a: tensor<?xf32>) -> tensor<4xf32> {
}