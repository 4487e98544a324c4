"""The CUDA backend's tensor-core dot (backends/cuda/mma.py), modelled without a GPU.

mma.py computes every address and register assignment with plain Python functions that the code
generator runs on LLVM values; here the same functions run on ints, and a numpy model of the
hardware carries out the whole product: operands written into a byte image of shared memory where
``a_offset`` / ``b_offset`` put them, ``ldmatrix`` emulated from the row addresses each lane gives
(``a_address`` / ``b_address``), the words each lane receives read as the PTX ISA's fragment tables
say (written out below from the ISA, independently of mma.py), one ``mma`` per tile, the
accumulators placed and read back through the result layout. The result must be ``a @ b + c``.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from tritium.backends.cuda import layouts as L
from tritium.backends.cuda import mma
from tritium.backends.cuda.lowered import Lowered, as_ir


# The PTX ISA's fragment tables ("Matrix Fragments for mma.m16n8k16 with floating point type",
# "mma.m16n8k8" (.tf32), "mma.m16n8k32" (.s8/.u8)): (row, col) of element i held by a lane.
def _a_position(kind: str, lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    if kind in ("fp16", "bf16"):
        row = g if i in (0, 1, 4, 5) else g + 8
        col = 2 * t + (i & 1) + (8 if i >= 4 else 0)
    elif kind == "tf32":
        row = g if i in (0, 2) else g + 8
        col = t if i < 2 else t + 4
    else:
        row = g if i < 4 or 8 <= i < 12 else g + 8
        col = 4 * t + (i & 3) + (16 if i >= 8 else 0)
    return row, col


def _b_position(kind: str, lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    if kind in ("fp16", "bf16"):
        row = 2 * t + (i & 1) + (8 if i >= 2 else 0)
    elif kind == "tf32":
        row = t if i == 0 else t + 4
    else:
        row = 4 * t + (i & 3) + (16 if i >= 4 else 0)
    return row, g


def _c_position(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), 2 * t + (i & 1)


# element encodings in shared memory --------------------------------------------------------------
def _encode(kind: str, x: float) -> bytes:
    if kind == "fp16":
        return np.float16(x).tobytes()
    if kind == "bf16":
        bits = np.float32(x).view(np.uint32)
        assert bits & 0xFFFF == 0, "the model's bf16 inputs are exact"
        return np.uint16(bits >> 16).tobytes()
    if kind == "tf32":
        return np.float32(x).tobytes()
    return (np.int8 if kind == "int8" else np.uint8)(x).tobytes()


def _decode(kind: str, data: bytes) -> float:
    if kind == "fp16":
        return float(np.frombuffer(data, np.float16)[0])
    if kind == "bf16":
        return float((np.uint32(np.frombuffer(data, np.uint16)[0]) << np.uint32(16)).view(np.float32))
    if kind == "tf32":
        return float(np.frombuffer(data, np.float32)[0])
    return float(np.frombuffer(data, np.int8 if kind == "int8" else np.uint8)[0])


def _truncate_tf32(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


class SharedMemory:
    """A byte image of shared memory that knows which bytes were written."""

    def __init__(self, nbytes: int):
        self.data = bytearray(nbytes)
        self.written = np.zeros(nbytes, bool)

    def write(self, offset: int, data: bytes) -> None:
        assert 0 <= offset and offset + len(data) <= len(self.data), "an operand element outside the reservation"
        assert offset % len(data) == 0, "a misaligned element"
        assert not self.written[offset:offset + len(data)].any(), "two operand elements at one address"
        self.data[offset:offset + len(data)] = data
        self.written[offset:offset + len(data)] = True

    def read(self, offset: int, n: int) -> bytes:
        assert self.written[offset:offset + n].all(), "ldmatrix read bytes no operand element was written to"
        return bytes(self.data[offset:offset + n])


def ldmatrix(smem: SharedMemory, addresses: list[int], count: int, trans: bool) -> list[list[bytes]]:
    """Per lane, the ``count`` 32-bit words ldmatrix.m8n8.x{count}{.trans}.b16 gives it: lane
    8 j + r addresses row r of block j; lane 4 r + w receives word w of row r of each block (with
    .trans: the 16-bit elements (2w, r) and (2w + 1, r) of the block)."""
    for lane in range(8 * count):
        assert addresses[lane] % 16 == 0, "ldmatrix rows are 16-byte aligned"
    out = []
    for lane in range(32):
        r, w = lane >> 2, lane & 3
        words = []
        for j in range(count):
            if trans:
                words.append(smem.read(addresses[8 * j + 2 * w] + 2 * r, 2) +
                             smem.read(addresses[8 * j + 2 * w + 1] + 2 * r, 2))
            else:
                words.append(smem.read(addresses[8 * j + r] + 4 * w, 4))
        out.append(words)
    return out


def _elements(kind: str, words: list[bytes]) -> list[float]:
    """The elements of a lane's fragment registers, low to high."""
    item = mma.INSTRUCTIONS[kind].item
    return [_decode(kind, word[i:i + item]) for word in words for i in range(0, 4, item)]


def _held(layout: L.Layout, warp: int, lane: int, r: int) -> tuple:
    index = list(layout.offsets[r])
    for bits, source in ((layout.lane_bits, lane), (layout.warp_bits, warp)):
        for i, bit in enumerate(bits):
            if bit is not None and source >> i & 1:
                index[bit[0]] += bit[1]
    return tuple(index)


def simulate(plan: mma.Plan, a: np.ndarray, b: np.ndarray, c: np.ndarray, kind: str) -> np.ndarray:
    """What the threads of one program hold after the dot, as the result block (a, b, c 3-D)."""
    layout = plan.layout
    batched = plan.batched

    def at(index):  # a result index in layout's rank -> (batch, row, col)
        return tuple(index) if batched else (0,) + tuple(index)

    parts_a, parts_b = [a], [b]
    if kind == "tf32":
        high_a, high_b = _truncate_tf32(a), _truncate_tf32(b)
        parts_a, parts_b = [high_a], [high_b]
        if plan.parts == 2:
            parts_a.append(_truncate_tf32(a - high_a))
            parts_b.append(_truncate_tf32(b - high_b))
    smem = SharedMemory(plan.smem_bytes)
    for part in range(plan.parts):
        for z, i, k in itertools.product(range(plan.batch), range(plan.m), range(plan.k)):
            smem.write(mma.a_offset(plan, z, i, k, part), _encode(kind, parts_a[part][z, i, k]))
        for z, k, j in itertools.product(range(plan.batch), range(plan.k), range(plan.n)):
            smem.write(mma.b_offset(plan, z, k, j, part), _encode(kind, parts_b[part][z, k, j]))

    k_inst = plan.instruction.k
    products = mma.SPLIT_PRODUCTS if plan.parts == 2 else ((0, 0),)
    result = np.full(c.shape, np.nan)
    for warp in range(plan.num_warps):
        acc = [[c[at(_held(layout, warp, lane, r))] for r in range(layout.num_regs)] for lane in range(32)]
        for kstep in range(plan.k_steps):
            a_words, b_words = {}, {}
            for group in plan.a_groups():
                for part in range(plan.parts):
                    addresses = [mma.a_address(plan, lane, warp, group, kstep, part) for lane in range(32)]
                    a_words[(group, part)] = ldmatrix(smem, addresses, 4, False)
            for group in plan.b_groups():
                ib, jn, count = group
                for part in range(plan.parts):
                    addresses = [mma.b_address(plan, lane, warp, group, kstep, part) for lane in range(32)]
                    words = ldmatrix(smem, addresses, 2 * count, plan.b_trans)
                    for j in range(count):
                        b_words[((ib, jn + j), part)] = [w[2 * j:2 * j + 2] for w in words]
            for tile in plan.tiles():
                ib, im, jn = tile
                first = plan.c_register(tile)
                for pa, pb in products:
                    tile_a = np.full((16, k_inst), np.nan)
                    tile_b = np.full((k_inst, 8), np.nan)
                    tile_c = np.full((16, 8), np.nan)
                    for lane in range(32):
                        for i, x in enumerate(_elements(kind, a_words[((ib, im), pa)][lane])):
                            assert np.isnan(tile_a[_a_position(kind, lane, i)])
                            tile_a[_a_position(kind, lane, i)] = x
                        for i, x in enumerate(_elements(kind, b_words[((ib, jn), pb)][lane])):
                            assert np.isnan(tile_b[_b_position(kind, lane, i)])
                            tile_b[_b_position(kind, lane, i)] = x
                        for i in range(4):
                            tile_c[_c_position(lane, i)] = acc[lane][first + i]
                    assert not np.isnan(tile_a).any() and not np.isnan(tile_b).any()
                    tile_d = tile_a @ tile_b + tile_c
                    for lane in range(32):
                        for i in range(4):
                            acc[lane][first + i] = tile_d[_c_position(lane, i)]
        for lane in range(32):
            for r in range(layout.num_regs):
                index = at(_held(layout, warp, lane, r))
                if not np.isnan(result[index]):
                    assert result[index] == acc[lane][r], "replicas disagree"
                result[index] = acc[lane][r]
    return result


# the cases -------------------------------------------------------------------------------------------
CASES = [
    # kind, result shape, K, num_warps
    ("fp16", (16, 16), 16, 4), ("fp16", (16, 8), 16, 4), ("fp16", (64, 64), 32, 4), ("fp16", (128, 128), 64, 8),
    ("fp16", (32, 128), 16, 4), ("fp16", (128, 32), 32, 4), ("fp16", (16, 256), 16, 8), ("fp16", (256, 16), 16, 2),
    ("fp16", (64, 64), 16, 1), ("fp16", (2, 32, 32), 16, 4), ("fp16", (4, 16, 16), 32, 8), ("fp16", (2, 16, 64), 16, 1),
    ("bf16", (16, 16), 16, 4), ("bf16", (64, 32), 32, 4), ("bf16", (128, 128), 32, 8), ("bf16", (2, 64, 16), 16, 4),
    ("tf32", (16, 16), 8, 4), ("tf32", (64, 64), 32, 4), ("tf32", (128, 64), 16, 8), ("tf32", (32, 8), 8, 2),
    ("tf32", (2, 16, 32), 8, 4),
    ("int8", (16, 16), 32, 4), ("int8", (64, 64), 64, 4), ("int8", (32, 128), 32, 8), ("int8", (2, 32, 16), 32, 4),
    ("uint8", (32, 32), 32, 4),
]


def _inputs(kind: str, shape_c, k: int, rng):
    batch, m, n = shape_c if len(shape_c) == 3 else (1,) + shape_c
    if kind == "uint8":
        low, high = 0, 16
    elif kind == "int8":
        low, high = -16, 16
    else:
        low, high = -8, 8
    a = rng.integers(low, high, (batch, m, k)).astype(np.float64)
    b = rng.integers(low, high, (batch, k, n)).astype(np.float64)
    c = rng.integers(-100, 100, (batch, m, n)).astype(np.float64)
    return a, b, c


@pytest.mark.parametrize("kind,shape_c,k,num_warps", CASES)
def test_the_modelled_tensor_core_dot_is_a_at_b_plus_c(kind, shape_c, k, num_warps):
    plan = mma.plan_for(shape_c, k, kind, num_warps)
    a, b, c = _inputs(kind, shape_c, k, np.random.default_rng(hash((kind, shape_c, k, num_warps)) % 2**32))
    result = simulate(plan, a, b, c, kind)
    assert not np.isnan(result).any(), "an element of the result no thread holds"
    np.testing.assert_array_equal(result, a @ b + c)  # small integers: every product and sum is exact


@pytest.mark.parametrize("kind,shape_c,k,num_warps", [case for case in CASES if case[0] in ("fp16", "bf16")])
def test_a_16_bit_b_stored_k_major_is_read_without_trans(kind, shape_c, k, num_warps):
    """B stored N x K (a load of K^T with K contiguous copies it so): ldmatrix without .trans hands
    the lanes the same fragments, and the swizzled rows stay conflict-free."""
    plan = mma.plan_for(shape_c, k, kind, num_warps, b_kmajor=True)
    assert plan.b_kmajor and not plan.b_trans and plan.b_rows == plan.n
    a, b, c = _inputs(kind, shape_c, k, np.random.default_rng(hash((kind, shape_c, k, "nk")) % 2**32))
    result = simulate(plan, a, b, c, kind)
    np.testing.assert_array_equal(result, a @ b + c)
    for group in plan.b_groups():
        addresses = [mma.b_address(plan, lane, 0, group, 0) for lane in range(32)]
        for j in range(len(addresses) // 8):
            assert len({(addresses[8 * j + r] // 16) % 8 for r in range(8)}) == 8


@pytest.mark.parametrize("kind,shape_c,k,num_warps", [("fp16", (128, 64), 64, 8), ("bf16", (64, 128), 32, 4),
                                                     ("fp16", (128, 128), 128, 8), ("fp16", (32, 64), 16, 2)])
def test_a_in_the_operand_layout_is_the_fragments_ldmatrix_would_load(kind, shape_c, k, num_warps):
    """With the warps along M alone (a chain of dots), the registers ``packed_a`` pairs for M tile im
    and K step s of ``operand_layout`` hold, lane by lane, the elements the PTX ISA's A fragment
    names (a0..a7 at row g + 8h, column 2t + e + 8q of the tile), so mma.sync reads them as ldmatrix
    would have loaded them; and the result of a dot of K = this K, cast, is in that layout."""
    plan = mma.plan_for(shape_c, k, kind, num_warps, rows_only=True)
    assert plan.warps_along(2) == 1
    layout = mma.operand_layout(plan)
    assert layout.shape == (plan.m, plan.k)
    assert mma.plan_for((plan.m, plan.k), 16, kind, num_warps, rows_only=True).layout == layout
    for warp, lane in itertools.product(range(num_warps), range(32)):
        for group, kstep in itertools.product(plan.a_groups(), range(plan.k_steps)):
            first = group[1] * (plan.k // 2) + 8 * kstep
            _, row0, _ = mma.tile_origin(plan, warp, *group, 0)
            for i in range(8):
                row, col = _a_position(kind, lane, i)
                assert _held(layout, warp, lane, first + i) == (row0 + row, 16 * kstep + col)
    assert mma.a_in_registers(plan, layout)
    assert not mma.a_in_registers(mma.plan_for(shape_c, k, kind, num_warps), layout)  # warps along N too


def test_tf32x3_sums_the_three_products_of_the_parts():
    shape_c, k = (32, 32), 16
    plan = mma.plan_for(shape_c, k, "tf32", 4, split=True)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((1, 32, k)).astype(np.float32).astype(np.float64)
    b = rng.standard_normal((1, k, 32)).astype(np.float32).astype(np.float64)
    c = np.zeros((1, 32, 32))
    result = simulate(plan, a, b, c, "tf32")
    ha, hb = _truncate_tf32(a).astype(np.float64), _truncate_tf32(b).astype(np.float64)
    la, lb = _truncate_tf32(a - ha).astype(np.float64), _truncate_tf32(b - hb).astype(np.float64)
    np.testing.assert_allclose(result, ha @ hb + ha @ lb + la @ hb, rtol=1e-12, atol=1e-12)
    assert np.abs(result - a @ b).max() < 1e-5 * np.abs(a).max() * np.abs(b).max() * k


@pytest.mark.parametrize("kind,shape_c,k,num_warps", CASES)
def test_the_result_layout_holds_every_element_equally_often_and_the_tiles_are_the_fragments(kind, shape_c, k,
                                                                                             num_warps):
    plan = mma.plan_for(shape_c, k, kind, num_warps)
    layout = plan.layout
    counts = {}
    for warp, lane in itertools.product(range(num_warps), range(32)):
        held = [_held(layout, warp, lane, r) for r in range(layout.num_regs)]
        assert len(set(held)) == len(held)
        for index in held:
            assert all(0 <= i < s for i, s in zip(index, layout.shape))
            counts[index] = counts.get(index, 0) + 1
        # register c_register(tile) + i holds the tile's element c_i of the PTX table
        for tile in plan.tiles():
            origin = mma.tile_origin(plan, warp, *tile)
            for i in range(4):
                row, col = _c_position(lane, i)
                expected = (origin[0], origin[1] + row, origin[2] + col)
                got = held[plan.c_register(tile) + i]
                assert (got if plan.batched else (0,) + got) == expected
    assert len(counts) == int(np.prod(layout.shape))
    _, warps = layout.replica_masks()
    assert set(counts.values()) == {1 << warps.bit_count()}
    assert not any(bit is None for bit in layout.lane_bits)


def test_warps_split_m_first_on_a_tie_and_replicate_past_the_tiles():
    assert mma.plan_for((128, 128), 64, "fp16", 4).warp_bits == ((2, 8), (1, 16))
    assert mma.plan_for((128, 128), 64, "fp16", 4).repeats == (1, 4, 8)
    assert mma.plan_for((16, 16), 16, "fp16", 4).warp_bits == ((2, 8), None)
    assert mma.plan_for((4, 16, 16), 16, "fp16", 4).warp_bits == ((0, 1), (0, 2))
    assert mma.plan_for((8, 16), 16, "fp16", 4) is None  # smaller than one tile: the FMA path
    assert mma.plan_for((16, 4), 16, "fp16", 4) is None


def test_ldmatrix_rows_of_one_block_fall_in_distinct_banks():
    """The 16-byte row padding: the eight rows one block of an ldmatrix reads cover all 32 banks."""
    for kind, shape_c, k, num_warps in CASES:
        plan = mma.plan_for(shape_c, k, kind, num_warps)
        for group in plan.a_groups()[:1]:
            addresses = [mma.a_address(plan, lane, 0, group, 0) for lane in range(32)]
            for j in range(4):
                banks = {(addresses[8 * j + r] // 16) % 8 for r in range(8)}
                assert len(banks) == 8, (kind, shape_c, k)
        for group in plan.b_groups()[:1]:
            addresses = [mma.b_address(plan, lane, 0, group, 0) for lane in range(32)]
            for j in range(2 * group[2]):
                banks = {(addresses[8 * j + r] // 16) % 8 for r in range(8)}
                assert len(banks) == 8, (kind, shape_c, k)


# the same index functions as code: Lowered values emit them as LLVM IR, run here on the host --------------
def _host_index_function(plan: mma.Plan, build):
    """``build(lane, warp, kstep)`` emitted through Lowered values as in the code generator (lane and
    warp arithmetic in the entry block, what involves the k-step in the block after it, as in a loop),
    compiled for this machine: a function (lane, warp, kstep) -> the i32 it computes."""
    import ctypes

    import llvmlite.binding as llvm
    from llvmlite import ir

    from tritium.backends.llvm import host

    i32 = ir.IntType(32)
    module = ir.Module(name="index")
    module.triple = host.host_cpu()[0]
    fn = ir.Function(module, ir.FunctionType(i32, [i32] * 3), "index")
    entry = ir.IRBuilder(fn.append_basic_block("entry"))
    body = ir.IRBuilder(fn.append_basic_block("body"))
    kstep = body.add(fn.args[2], ir.Constant(i32, 0))  # defined in the body: the entry block cannot use it
    result = build(Lowered(entry, fn.args[0]), Lowered(entry, fn.args[1]), Lowered(body, kstep, late=True))
    body.ret(as_ir(result))
    entry.branch(body.block)
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, host._new_target_machine(jit=True))
    engine.finalize_object()
    compiled = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)(
        engine.get_function_address("index"))
    return lambda lane, warp, k: compiled(lane, warp, k), engine


@pytest.mark.parametrize("kind,shape_c,k,num_warps", [
    ("fp16", (64, 64), 32, 4), ("bf16", (128, 128), 64, 8), ("fp16", (16, 8), 16, 4), ("tf32", (2, 16, 32), 16, 4),
    ("int8", (32, 128), 64, 8)])
def test_the_emitted_index_arithmetic_computes_what_the_model_does(kind, shape_c, k, num_warps):
    pytest.importorskip("llvmlite")
    plan = mma.plan_for(shape_c, k, kind, num_warps, split=kind == "tf32")
    checks = []
    for part in range(plan.parts):
        for group in plan.a_groups():
            checks.append((lambda lane, warp, ks, group=group, part=part:
                           mma.a_address(plan, lane, warp, group, ks, part)))
        for group in plan.b_groups():
            checks.append((lambda lane, warp, ks, group=group, part=part:
                           mma.b_address(plan, lane, warp, group, ks, part)))
    # the element offsets the stores use, on (lane, warp, k) standing for (batch, row, col) indices
    last = plan.parts - 1
    checks.append(lambda x, y, z: mma.a_offset(plan, x & (plan.batch - 1), y & (plan.m - 1), z & (plan.k - 1), last))
    checks.append(lambda x, y, z: mma.b_offset(plan, x & (plan.batch - 1), z & (plan.k - 1), y & (plan.n - 1), last))
    for check in checks:
        compiled, engine = _host_index_function(plan, check)
        for lane, warp, ks in itertools.product(range(32), range(num_warps), range(plan.k_steps)):
            assert compiled(lane, warp, ks) == check(lane, warp, ks)
        del engine


@pytest.mark.parametrize("rows, cols, item, width", [
    (128, 64, 2, 128), (64, 32, 2, 64), (64, 16, 2, 32), (64, 256, 2, 128), (32, 32, 4, 128), (16, 8, 2, 0),
    (24, 64, 2, 128), (20, 64, 2, 0), (64, 64, 1, 64)])
def test_swizzled_tiles_are_a_permutation_of_16_byte_units(rows, cols, item, width):
    """``swizzle_width`` picks W from the contiguous bytes (docs/tensor-cores.md's table: 128 for a
    BLOCK_K of 64 fp16, 64 for 32, 32 for 16; none under 32 bytes or for rows not a multiple of 8);
    ``nvmma_offset`` places every element of the tile once, inside the tile, keeps each 16-byte unit
    whole and in order, and gives the eight rows of any 8-row, 16-byte block eight distinct bank
    groups (oracle: the PTX ISA's swizzle written out below on the row-major byte offset)."""
    assert mma.swizzle_width(cols * item, rows) == width
    if not width:
        return
    offsets = np.array([[mma.nvmma_offset(r, c, rows, width, item) for c in range(cols)] for r in range(rows)])
    assert sorted(offsets.reshape(-1)) == list(range(0, rows * cols * item, item))
    per_unit = 16 // item
    units = offsets.reshape(rows, cols // per_unit, per_unit)
    assert (np.diff(units, axis=2) == item).all() and (units[:, :, 0] % 16 == 0).all()
    for r0 in range(0, rows, 8):
        for u in range(cols // per_unit):
            assert len({(offsets[r, u * per_unit] // 16) % 8 for r in range(r0, r0 + 8)}) == 8
    # the ISA's form: element (r, c) of column block c // E at linear byte L, unit bits XOR bits 7..
    elements = width // item
    for r, c in itertools.product(range(rows), range(cols)):
        linear = (c // elements) * rows * width + r * width + (c % elements) * item
        assert offsets[r, c] == linear ^ (((linear >> 7) % (width // 16)) << 4)
