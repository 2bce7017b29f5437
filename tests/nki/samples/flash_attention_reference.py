# Lines 12-68 (the NumPy reference: softmax, cpu_attention_forward) copied unchanged from
# aws-neuron/nki-samples, test/unit/test_flash_attn_fwd.py at commit 8370e11. License: MIT No
# Attribution (the repository's LICENSE), which permits copying without attribution.
import numpy as np

def softmax(x: np.ndarray, dim: int, zero_max_mode=False,
            mixed_precision=False, return_max_reduce=False):
    max_value = np.amax(x, axis=dim, keepdims=True)
    max_value = np.maximum(0, max_value) if zero_max_mode else max_value
    exp = np.exp(x - max_value)
    if mixed_precision:
        reduce = np.add.reduce(exp.astype(np.float32), axis=dim, keepdims=True).astype(x.dtype)
    else:
        reduce = np.add.reduce(exp, axis=dim, keepdims=True)
    if return_max_reduce:
        return exp / reduce, -max_value, np.reciprocal(reduce)
    return exp / reduce
 
 
def cpu_attention_forward(q, k, v, use_causal_mask=True, sliding_window=-1, mixed_precision=True):
    def mixed_precision_matmul(a, b):
        input_dtype = a.dtype
        a, b = a.astype(np.float32), b.astype(np.float32)
        c = np.matmul(a, b)
        return c.astype(input_dtype)

    _, _, d, _ = q.shape

    # Compute golden output
    softmax_scale = 1.0 / (d ** 0.5)
    q_scaled = q * softmax_scale
    nheads = q.shape[1]
    kv_heads = k.shape[1]
    if nheads > kv_heads:
        k = np.repeat(k, nheads//kv_heads, axis=1)
        v = np.repeat(v, nheads//kv_heads, axis=1)
    raw_score = mixed_precision_matmul(q_scaled.transpose(0, 1, 3, 2), k)

    if use_causal_mask:
        _, _, Q, K = raw_score.shape

        q_idx = np.arange(Q)[:, None]
        k_idx = np.arange(K)[None, :]

        if sliding_window > 0:
            mask = (k_idx > q_idx) | (k_idx < q_idx - sliding_window + 1)
        else:  # causal
            mask = k_idx > q_idx

        # Broadcast mask to shape (1, 1, Q, K)
        raw_score = raw_score.copy()
        # -inf triggers invalid input error in softmax implementation, use a small negative instead
        raw_score[:, :, mask] = -9984.0


    norm_score, cached_negative_max, cached_sum_reciprocal = \
        softmax(raw_score, dim=-1, mixed_precision=mixed_precision, return_max_reduce=True)

    # Transpose the result so it has the same layout as ours
    out_golden = mixed_precision_matmul(norm_score, v.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)

    return out_golden, cached_negative_max, cached_sum_reciprocal
