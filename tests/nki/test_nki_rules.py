"""Every hardware rule the interpreter enforces, each broken on purpose, with the text the AWS
simulator or the NKI compiler documents (or, for what they do not check, vtrn's own)."""

import numpy as np
import pytest

import neuronxcc.nki as lnki
import neuronxcc.nki.language as lnl
import nki
import nki.isa as nisa
import nki.language as nl


def f32(*shape):
    return np.random.default_rng(0).random(shape).astype(np.float32)


# -- partition dimension ----------------------------------------------------------------------


def test_partition_dimension_over_128_is_the_simulators_assertion():
    # The example of the simulator guide ("Hardware Constraint Validation").
    @nki.jit
    def bad_kernel(a_ptr):
        tile = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.sbuf)  # exceeds 128
        out = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=tile, data2=tile, op=nl.add)
        return a_ptr

    with pytest.raises(
        AssertionError, match="^tensor_tensor data1 partition dimension 256 exceeds maximum 128$"
    ):
        nki.simulate(bad_kernel)(f32(256, 512))


def test_partition_mismatch_is_the_compilers_error():
    @nki.jit
    def k(a):
        x = nl.load(a[0:128, :])
        y = nl.load(a[0:1, :])
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=x, data2=y, op=nl.add)
        return a

    with pytest.raises(
        nisa.NkiValidationError,
        match=r"number of partitions \(dimension 0 size of a tile\) mismatch in parameters "
        r"\(data1\[128, 512\], data2\[1, 512\]\) of 'tensor_tensor'",
    ):
        nki.simulate(k)(f32(128, 512))


# -- matmul ------------------------------------------------------------------------------------


def matmul_kernel(k_rows, m, n, stationary_in="sbuf", dst_in="psum"):
    @nki.jit
    def kernel(lhsT, rhs):
        # The operands stay uninitialized: the checks run when the matmul is issued.
        st = nl.ndarray((k_rows, m), dtype=lhsT.dtype, buffer=getattr(nl, stationary_in))
        mv = nl.ndarray((k_rows, n), dtype=rhs.dtype, buffer=nl.sbuf)
        acc = nl.ndarray((m, n), dtype=nl.float32, buffer=getattr(nl, dst_in))
        nisa.nc_matmul(acc, st, mv)
        return lhsT

    return kernel


def test_matmul_stationary_free_size_limit():
    with pytest.raises(
        nisa.NkiValidationError,
        match="^nc_matmul stationary free dimension 256 exceeds maximum 128$",
    ):
        nki.simulate(matmul_kernel(128, 256, 512))(f32(128, 256), f32(128, 512))


def test_matmul_moving_free_size_limit():
    with pytest.raises(
        nisa.NkiValidationError, match="^nc_matmul moving free dimension 1024 exceeds maximum 512$"
    ):
        nki.simulate(matmul_kernel(128, 128, 1024))(f32(128, 128), f32(128, 1024))


def test_matmul_contraction_over_128_partitions():
    with pytest.raises(
        nisa.NkiValidationError,
        match="^nc_matmul stationary partition dimension 256 exceeds maximum 128$",
    ):
        nki.simulate(matmul_kernel(256, 128, 512))(f32(256, 128), f32(256, 512))


def test_matmul_operands_must_be_in_sbuf():
    with pytest.raises(
        nisa.NkiValidationError,
        match=r"^Expected operand 'stationary' of 'nc_matmul' to be in address space 'sbuf', but got a tile in 'psum' instead\.$",
    ):
        nki.simulate(matmul_kernel(128, 128, 512, stationary_in="psum"))(
            f32(128, 128), f32(128, 512)
        )


def test_matmul_result_must_be_in_psum():
    with pytest.raises(
        nisa.NkiValidationError,
        match=r"^Expected operand 'dst' of 'nc_matmul' to be in address space 'psum', but got a tile in 'sbuf' instead\.$",
    ):
        nki.simulate(matmul_kernel(128, 128, 512, dst_in="sbuf"))(f32(128, 128), f32(128, 512))


def test_matmul_accumulates_in_float32_before_trn3(monkeypatch):
    @nki.jit
    def kernel(lhsT, rhs):
        st = nl.ndarray(lhsT.shape, dtype=lhsT.dtype, buffer=nl.sbuf)
        mv = nl.ndarray(rhs.shape, dtype=rhs.dtype, buffer=nl.sbuf)
        acc = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.psum)
        nisa.nc_matmul(acc, st, mv)
        return lhsT

    a, b = f32(128, 128).astype(nl.bfloat16), f32(128, 512).astype(nl.bfloat16)
    with pytest.raises(
        nisa.NkiValidationError,
        match=r"^nc_matmul dst dtype bfloat16 is not supported on trn2: matmul accumulates in PSUM as float32 "
        r"\(trn3 also accepts bfloat16\)$",
    ):
        nki.simulate(kernel)(a, b)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn3")
    nki.simulate(kernel)(a, b)


def psum_semantics_kernel(accumulate, times):
    @nki.jit
    def kernel(lhsT, rhs):
        out = nl.ndarray(rhs.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        st = nl.ndarray(lhsT.shape, dtype=lhsT.dtype, buffer=nl.sbuf)
        mv = nl.ndarray(rhs.shape, dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=st, src=lhsT)
        nisa.dma_copy(dst=mv, src=rhs)
        acc = nl.ndarray(rhs.shape, dtype=nl.float32, buffer=nl.psum)  # holds NaN sentinels
        for _ in range(times):
            nisa.nc_matmul(acc, st, mv, accumulate=accumulate)
        res = nl.ndarray(rhs.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out, src=res)
        return out

    return kernel


def test_psum_first_write_overwrites_later_writes_add():
    a, b = f32(128, 128), f32(128, 512)
    ref = a.T @ b
    np.testing.assert_allclose(
        nki.simulate(psum_semantics_kernel(None, 3))(a, b), 3 * ref, rtol=1e-5
    )
    np.testing.assert_allclose(nki.simulate(psum_semantics_kernel(False, 3))(a, b), ref, rtol=1e-5)
    # accumulate=True on a fresh PSUM tile adds to its sentinel: undefined, here NaN.
    assert np.isnan(nki.simulate(psum_semantics_kernel(True, 1))(a, b)).all()


# -- fresh allocations -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,check", [(np.float32, np.isnan), (np.int32, lambda x: x == 4)])
def test_new_allocations_hold_sentinels(dtype, check):
    @nki.jit
    def uninitialized(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nl.store(out, t)
        return out

    assert check(nki.simulate(uninitialized)(np.zeros((4, 8), dtype=dtype))).all()


# -- capacity (not checked by the AWS simulator) -----------------------------------------------


def live_tiles_kernel(count, free):
    @nki.jit
    def kernel(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        tiles = []
        for i in range(count):
            big_tile = nl.load(a[:, i * free : (i + 1) * free])
            tiles.append(big_tile)
        for i in range(count):
            nl.store(out[:, i * free : (i + 1) * free], tiles[i])
        return out

    return kernel


@pytest.mark.parametrize(
    "target,per_partition,fits",
    [("trn1", 196608, 3), ("trn2", 229376, 3), ("trn3", 262144, 4)],
)
def test_sbuf_capacity_per_generation(monkeypatch, target, per_partition, fits):
    # 64 KiB per partition per tile: SBUF holds 192 KiB (trn1), 224 KiB (trn2), 256 KiB (trn3).
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", target)
    a = f32(128, 16384 * (fits + 1))
    out = nki.simulate(live_tiles_kernel(fits, 16384))(a[:, : 16384 * fits].copy())
    np.testing.assert_array_equal(out, a[:, : 16384 * fits])
    with pytest.raises(nisa.NkiCapacityError) as err:
        nki.simulate(live_tiles_kernel(fits + 1, 16384))(a)
    text = str(err.value)
    assert text.startswith(f"SBUF capacity exceeded on {target}")
    assert f"need {65536 * (fits + 1)} bytes per partition" in text
    assert f"SBUF has {per_partition} bytes per partition ({per_partition * 128 >> 20} MiB)" in text
    assert "big_tile (128x16384 float32, 65536 B per partition" in text


def test_psum_holds_eight_banks():
    def kernel_with(count):
        @nki.jit
        def kernel(lhsT, rhs):
            out = nl.ndarray((128, 512 * count), dtype=nl.float32, buffer=nl.shared_hbm)
            st, mv = nl.load(lhsT), nl.load(rhs)
            banks = []
            for _ in range(count):
                acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                nisa.nc_matmul(acc, st, mv)
                banks.append(acc)
            for i, acc in enumerate(banks):
                nl.store(out[:, i * 512 : (i + 1) * 512], nl.copy(acc))
            return out

        return kernel

    a, b = f32(128, 128), f32(128, 512)
    assert nki.simulate(kernel_with(8))(a, b).shape == (128, 4096)
    with pytest.raises(nisa.NkiCapacityError, match="PSUM capacity exceeded on trn2") as err:
        nki.simulate(kernel_with(9))(a, b)
    assert "9 live PSUM tiles need 18432 bytes per partition" in str(err.value)
    assert "PSUM has 16384 bytes per partition (2 MiB, 8 banks of 2 KiB per partition)" in str(
        err.value
    )


# -- masks ----------------------------------------------------------------------------------------


def test_masks_limit_writes_and_a_false_mask_skips_the_instruction():
    @lnki.jit
    def k(a):
        out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
        ix = lnl.arange(128)[:, None]
        iy = lnl.arange(64)[None, :]
        t = lnl.load(a[ix, iy])
        lnl.store(out[ix, iy], value=t, mask=(ix < 10) & (iy >= 32))
        lnl.store(out[ix, iy], value=t, mask=False)  # never runs: would overwrite everything
        return out

    a = f32(128, 64)
    out = nki.simulate_kernel(k, a)
    np.testing.assert_array_equal(out[:10, 32:], a[:10, 32:])
    assert np.isnan(out[10:]).all() and np.isnan(out[:, :32]).all()


def test_out_of_bound_access_needs_a_mask():
    def kernel(masked):
        @lnki.jit
        def k(a):
            out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
            for i in lnl.affine_range((4000 + 512 - 1) // 512):
                tile = lnl.mgrid[0:128, 0:512]
                t = lnl.load(
                    a[tile.p, i * 512 + tile.x], mask=(i * 512 + tile.x < 4000) if masked else None
                )
                lnl.store(
                    out[tile.p, i * 512 + tile.x],
                    value=t,
                    mask=(i * 512 + tile.x < 4000) if masked else None,
                )
            return out

        return k

    a = f32(128, 4000)
    np.testing.assert_array_equal(nki.simulate_kernel(kernel(True), a), a)
    # The compiler's text (err_tensor_access_out_of_bound).
    with pytest.raises(
        IndexError,
        match=r"Out-of-bound access for tensor `a` on dimension 1: index range \[3584, 4095\] exceed dimension size of 4000",
    ):
        nki.simulate_kernel(kernel(False), a)


def test_one_dimensional_arange_index_is_refused():
    @lnki.jit
    def k(a):
        i = lnl.arange(64)
        return lnl.exp(lnl.load(a)[i, 0])

    with pytest.raises(IndexError, match="Indexing a NKI tensor with 1D arange is not supported"):
        nki.simulate_kernel(k, f32(128, 1))


def test_mixing_basic_and_advanced_indexing_is_refused():
    @lnki.jit
    def k(a):
        i = lnl.arange(4)[:, None]
        return lnl.load(a[i, :])

    with pytest.raises(
        IndexError,
        match="Mixing basic tensor indexing and advanced tensor indexing is not supported",
    ):
        nki.simulate_kernel(k, f32(4, 4))


# -- memories ----------------------------------------------------------------------------------


def test_compute_engines_cannot_read_hbm():
    @lnki.jit
    def k(a):
        return lnl.exp(a)

    with pytest.raises(
        TypeError,
        match=r"Expected operand 'x' of 'exp' to be in address space 'psum\|sbuf', but got a tile in 'hbm' instead\.",
    ):
        nki.simulate_kernel(k, f32(4, 4))


def test_load_reads_hbm_only():
    @lnki.jit
    def k(a):
        tmp = lnl.ndarray((4, 4), dtype=lnl.float32, buffer=lnl.sbuf)
        lnl.load(tmp)
        return a

    with pytest.raises(
        TypeError,
        match=r"Expected operand 'src' of 'load' to be in address space 'hbm', but got a tile in 'sbuf' instead\.",
    ):
        nki.simulate_kernel(k, f32(4, 4))


def test_transpose_is_limited_to_128_by_128():
    @lnki.jit
    def k(a):
        return lnl.transpose(lnl.load(a))

    with pytest.raises(
        nisa.NkiValidationError,
        match=r"size of dimension 1 in 'data\[128, 512\]' of 'transpose' exceed architecture limitation of 128\.",
    ):
        nki.simulate_kernel(k, f32(128, 512))


# -- loops ---------------------------------------------------------------------------------------


def accumulating_kernel(range_fn):
    @lnki.jit
    def k(a):
        out = lnl.ndarray((128, 512), dtype=lnl.float32, buffer=lnl.shared_hbm)
        acc = lnl.zeros((128, 512), dtype=lnl.float32, buffer=lnl.sbuf)
        for i in range_fn(4):
            acc[...] = lnl.add(acc, lnl.load(a[:, i * 512 : (i + 1) * 512]))
        lnl.store(out, acc)
        return out

    return k


def test_affine_range_iterations_must_not_write_the_same_tile():
    """Legacy affine_range promises independent iterations (the compiler's
    err_unexpected_output_dependencies); sequential_range allows the loop-carried sum."""
    a = f32(128, 2048)
    expected = sum(a[:, i * 512 : (i + 1) * 512] for i in range(4))
    np.testing.assert_allclose(
        nki.simulate_kernel(accumulating_kernel(lnl.sequential_range), a), expected, rtol=1e-6
    )
    with pytest.raises(
        nisa.NkiValidationError,
        match="Unexpected output dependencies: iterations 0 and 1 of the nl.affine_range loop",
    ):
        nki.simulate_kernel(accumulating_kernel(lnl.affine_range), a)
    # In NKI 0.2+ affine_range is plain range(): the same kernel runs.
    np.testing.assert_allclose(
        nki.simulate_kernel(accumulating_kernel(nl.affine_range), a), expected, rtol=1e-6
    )
