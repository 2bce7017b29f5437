#include "vtrn/torch/gil.h"

#include <Python.h>

namespace vtrn::torch_adapter {

WithoutGil::WithoutGil() {
  if (Py_IsInitialized() && PyGILState_Check()) saved_ = PyEval_SaveThread();
}

WithoutGil::~WithoutGil() {
  if (saved_ != nullptr) PyEval_RestoreThread(static_cast<PyThreadState*>(saved_));
}

}  // namespace vtrn::torch_adapter
