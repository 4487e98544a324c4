"""The bounds checks of the CPU backend: before an access touches memory, every active lane of its
pointer block is checked against its tensor's byte range (runs checked by their end lanes, box masks
by their corners), and a bad lane is reported with the interpreter's message.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ...compiler.analysis.masks import classify_mask
from ...compiler.ir.ops import Value
from ...compiler.ir.spec import PURE, SPEC
from ..llvm.types import I1, I32, I64, PTR, item_size
from ..reports import OUT_OF_BOUNDS as ERROR_OUT_OF_BOUNDS
from .values import _shape, expect, row_major_strides


class Checks:
    def _run_length(self, pointer: Value) -> int:
        shape = _shape(pointer.type)
        if not shape:
            return 1
        info = self.axis.get(pointer)
        if info is None:
            return 1
        run = info.contiguity[-1]
        return run if run > 1 and shape[-1] % run == 0 else 1

    def _one_tensor(self, pointer: Value) -> bool:
        """Whether the tensor ``pointer`` points into is known (provenance), so its valid bytes are
        one range."""
        source = self.provenance.get(pointer.id)
        return source is not None and source >= 0

    def _in_bounds(self, pointer_value: Value, address, size: int):
        """i1: the access of ``size`` bytes at ``address`` (i64) lies inside the tensor the pointer
        came from (any pointer argument when that is not known) and is aligned."""
        b = self.b
        one = self._one_tensor(pointer_value)
        ranges = [self.bounds[self.provenance[pointer_value.id]]] if one else self.bounds
        inside = ir.Constant(I1, 0)
        for low, high in ranges:
            ok = b.and_(b.icmp_unsigned(">=", address, low),
                        b.icmp_unsigned("<=", b.add(address, ir.Constant(I64, size)), high))
            inside = b.or_(inside, ok)
        if self.raw_pointers and not one:  # the pointer may come from an integer: any live tensor will do
            inside = b.or_(inside, self._in_live_tensor(address, size))
        if size > 1:
            aligned = b.icmp_unsigned("==", b.and_(address, ir.Constant(I64, size - 1)), ir.Constant(I64, 0))
            inside = b.and_(inside, aligned)
        return inside

    def _in_live_tensor(self, address, size: int):
        """i1: the ``size`` bytes at ``address`` lie inside one range of the process's table of live
        tensors (sorted [low, high) pairs): a binary search, bit_length(count) steps."""
        b = self.b
        cell = self.live_tensors()
        table = b.inttoptr(b.load(b.gep(cell, [ir.Constant(I32, 0), ir.Constant(I32, 0)]), typ=I64), PTR)
        count = b.load(b.gep(cell, [ir.Constant(I32, 0), ir.Constant(I32, 1)]), typ=I64)
        end = b.add(address, ir.Constant(I64, size))
        found = self.scalar_slot(I1)
        b.store(ir.Constant(I1, 0), found)

        def word(i, half: int):
            index = b.add(b.mul(i, ir.Constant(I64, 2)), ir.Constant(I64, half))
            return b.load(b.gep(table, [index], source_etype=I64), typ=I64)

        def search():
            lo, hi = self.scalar_slot(I64), self.scalar_slot(I64)
            b.store(ir.Constant(I64, 0), lo)
            b.store(count, hi)
            steps = b.sub(ir.Constant(I64, 64), b.ctlz(count, ir.Constant(I1, 0)))

            def step(_):
                low_i, high_i = b.load(lo), b.load(hi)
                mid = b.lshr(b.add(low_i, high_i), ir.Constant(I64, 1))
                below = b.icmp_unsigned("<=", word(b.select(b.icmp_unsigned("<", mid, count), mid,
                                                             ir.Constant(I64, 0)), 1), address)
                going = b.icmp_unsigned("<", low_i, high_i)
                b.store(b.select(b.and_(going, below), b.add(mid, ir.Constant(I64, 1)), low_i), lo)
                b.store(b.select(b.and_(going, b.not_(below)), mid, high_i), hi)

            self.counted_loop(steps, step)
            at = b.load(lo)
            within = b.icmp_unsigned("<", at, count)
            safe = b.select(within, at, ir.Constant(I64, 0))
            hit = b.and_(within, b.and_(b.icmp_unsigned("<=", word(safe, 0), address),
                                        b.icmp_unsigned("<=", end, word(safe, 1))))
            b.store(hit, found)

        self.if_then(b.icmp_unsigned(">", count, ir.Constant(I64, 0)), search)
        return b.load(found)

    def check_access(self, pointer: Value, mask: Optional[Value], dtype, extent=None) -> Optional[ir.Value]:
        """The check before an access; returns an i1 pointer-flag 'every lane is active' (None: no
        mask). A contiguous run whose first and last lanes are inside the tensor is inside it whatever
        its mask; only a run that is not is checked lane by lane (its active lanes). A bad lane fails
        the program with its record. ``extent``: two i64 slots that receive the lowest address and
        the end of the bytes the access may touch (whole runs, masked lanes included)."""
        b = self.b
        shape = _shape(pointer.type)
        size = item_size(dtype)
        run = self._run_length(pointer)
        bad = self.flag(False)

        def widen(first, end):
            if extent is None:
                return
            low, high = extent
            current_low, current_high = b.load(low), b.load(high)
            b.store(b.select(b.icmp_unsigned("<", first, current_low), first, current_low), low)
            b.store(b.select(b.icmp_unsigned(">", end, current_high), end, current_high), high)

        def lane_is_bad(idx):
            address = b.ptrtoint(self.value_at(pointer, idx), I64)
            wrong = b.not_(self._in_bounds(pointer, address, size))
            return b.and_(wrong, self.value_at(mask, idx)) if mask is not None else wrong

        def in_run(idx, j):
            """The index of lane ``j`` of the run that starts at ``idx``."""
            return idx[:-1] + (b.add(idx[-1], j),)

        def run_is_inside(idx):
            first = b.ptrtoint(self.value_at(pointer, idx), I64)
            last = b.add(first, ir.Constant(I64, (run - 1) * size))
            return first, last, b.and_(self._in_bounds(pointer, first, size), self._in_bounds(pointer, last, size))

        # Every run's ends are checked in a loop without branches (which LLVM vectorizes); only
        # when some run is not wholly inside are such runs' active lanes checked one by one.
        outside = self.flag(False)

        def at_run(idx):
            first, last, ok = run_is_inside(idx)
            widen(first, b.add(last, ir.Constant(I64, size)))
            if self.checks:
                b.store(b.or_(b.load(outside), b.not_(ok)), outside)

        def lanes_of_outside_run(idx):
            def lanes_of_run():
                def lane(j):
                    b.store(b.or_(b.load(bad), lane_is_bad(in_run(idx, j))), bad)

                self.counted_loop(run, lane)

            self.if_then(b.not_(run_is_inside(idx)[2]), lanes_of_run)

        def ends_of_active_lanes(idx):
            # The active lanes of a run lie between its first and its last active lane, whose
            # addresses bound all of theirs: when both are inside the tensor (one byte range) and
            # aligned, so is every active lane (same alignment: they are size bytes apart). A loop
            # of minimum and maximum, which LLVM vectorizes, instead of a check per lane.
            # (lane numbers as i32: 16 to a vector register, not 8)
            first_slot, last_slot = self.scalar_slot(I32), self.scalar_slot(I32)
            b.store(ir.Constant(I32, run), first_slot)
            b.store(ir.Constant(I32, -1), last_slot)

            def lane(j):
                active = self.value_at(mask, in_run(idx, j))
                j32 = b.trunc(j, I32)
                low, high = b.select(active, j32, ir.Constant(I32, run)), b.select(active, j32, ir.Constant(I32, -1))
                first, last = b.load(first_slot), b.load(last_slot)  # min and max reductions
                b.store(b.select(b.icmp_signed("<", low, first), low, first), first_slot)
                b.store(b.select(b.icmp_signed(">", high, last), high, last), last_slot)

            self.counted_loop(run, lane)
            first, last = b.sext(b.load(first_slot), I64), b.sext(b.load(last_slot), I64)
            some = b.icmp_signed(">=", last, ir.Constant(I64, 0))
            ends_inside = ir.Constant(I1, 1)
            for j in (b.select(some, first, ir.Constant(I64, 0)), b.select(some, last, ir.Constant(I64, 0))):
                address = b.ptrtoint(self.value_at(pointer, in_run(idx, j)), I64)
                ends_inside = b.and_(ends_inside, self._in_bounds(pointer, address, size))
            b.store(b.or_(b.load(bad), b.and_(some, b.not_(ends_inside))), bad)

        def lane(idx):
            if self.checks:
                b.store(b.or_(b.load(bad), lane_is_bad(idx)), bad)
            if extent is not None:
                address = b.ptrtoint(self.value_at(pointer, idx), I64)
                widen(address, b.add(address, ir.Constant(I64, size)))

        if extent is not None:
            b.store(ir.Constant(I64, -1), extent[0])
            b.store(ir.Constant(I64, 0), extent[1])
        if run > 1 and (self.checks or extent is not None):
            self._runs_only(shape, run, at_run)
            if self.checks and mask is None:
                b.store(b.load(outside), bad)
            elif self.checks and self._one_tensor(pointer):
                # not rare: a row narrower than its block (a weight of 768 under a block of 1024)
                # has its last lanes outside in every program
                self.if_then(b.load(outside), lambda: self._runs_only(shape, run, ends_of_active_lanes), rare=False)
            elif self.checks:
                with self.cold():
                    self.if_then(b.load(outside), lambda: self._runs_only(shape, run, lanes_of_outside_run))
        elif run == 1 and (self.checks or extent is not None):
            self.loop_nest(shape, lane)
        every = None
        if mask is not None:
            every = self.flag(True)
            full = self._box_is_full(mask)
            if full is not None:
                b.store(full, every)
            else:
                self.loop_nest(_shape(mask.type),
                               lambda idx: b.store(b.and_(b.load(every), self.value_at(mask, idx)), every))
        if self.checks:
            with self.cold():
                self.if_then(b.load(bad), lambda: self._report_bad_lane(pointer, mask, size, shape))
        return every

    def _box_extents(self, mask: Value, shape) -> tuple:
        """(i1: some lane is on, per dimension of ``shape`` the i64 ``[start, end)`` of its active lanes
        or None for all of them) of the box ``mask``: along a bound's dimension its comparison holds on
        a prefix (upper bounds) or a suffix (lower bounds) of the lanes, whose length is counted."""
        b = self.b
        some = ir.Constant(I1, 1)
        extents: list = [None] * len(shape)
        for bound in self._box(mask).bounds:
            test_shape = _shape(bound.test.type)
            if bound.dim is None:
                some = b.and_(some, self.value_at(bound.test, tuple(ir.Constant(I64, 0) for _ in test_shape)))
                continue
            n = test_shape[bound.index_dim]
            # index runs through consecutive values: index[j] = index[0] + j, so the comparison
            # turns at lane bound - index[0] (one further for <= and >), clamped to the block; compared
            # in the index's signedness (a uint64 bound may exceed every signed value)
            kind = bound.index.type.scalar
            signed = kind.is_int_signed() and not kind.is_bool()
            zeros = tuple(ir.Constant(I64, 0) for _ in _shape(bound.index.type))
            widen = b.sext if signed else b.zext
            first = self.value_at(bound.index, zeros)
            limit = self.value_at(bound.bound, tuple(ir.Constant(I64, 0) for _ in _shape(bound.bound.type)))
            first, limit = (x if x.type == I64 else widen(x, I64) for x in (first, limit))
            reaches = b.icmp_signed(">=", limit, first) if signed else b.icmp_unsigned(">=", limit, first)
            block = ir.Constant(I64, n)
            gap = b.sub(limit, first)  # >= 0 as an unsigned number where ``reaches``
            below = b.select(reaches, b.select(b.icmp_unsigned("<", gap, block), gap, block), ir.Constant(I64, 0))
            if bound.inclusive == (bound.side == "upper"):  # <= and >: the lane at the bound counts
                one_more = b.add(below, ir.Constant(I64, 1))
                below = b.select(reaches, b.select(b.icmp_signed("<", one_more, block), one_more, block),
                                 ir.Constant(I64, 0))
            if bound.side == "upper":
                start, end = ir.Constant(I64, 0), below
            else:
                start, end = below, block
            if extents[bound.dim] is not None:
                low, high = extents[bound.dim]
                start = b.select(b.icmp_signed(">", start, low), start, low)
                end = b.select(b.icmp_signed("<", end, high), end, high)
            extents[bound.dim] = (start, end)
        for start, end in (e for e in extents if e is not None):
            some = b.and_(some, b.icmp_signed("<", start, end))
        return some, extents

    def _box_nest(self, pointer: Value, mask: Value, shape, run: int, body) -> None:
        """``body(idx, address, False)`` for each lane of the active part of the box ``mask``, lanes
        along the last dimension at consecutive addresses where a row is one contiguous run."""
        b = self.b
        some, extents = self._box_extents(mask, shape)

        def ranged(d, prefix, base):
            if d == len(shape):
                address = (b.gep(base, [prefix[-1]], source_etype=self._element_type) if base is not None
                           else self.value_at(pointer, prefix))
                body(prefix, address, False)
                return
            start, end = extents[d] if extents[d] is not None else (ir.Constant(I64, 0), ir.Constant(I64, shape[d]))
            if d == len(shape) - 1 and run == shape[-1] and shape[-1] > 1:
                base = self.value_at(pointer, prefix + (ir.Constant(I64, 0),))  # the row: one run
            self.counted_loop(b.sub(end, start), lambda i: ranged(d + 1, prefix + (b.add(start, i),), base))

        def active_part():
            unmasked, self.unmasked_reads = self.unmasked_reads, self.unmasked_reads or self._box_reads_unmasked
            ranged(0, (), None)
            self.unmasked_reads = unmasked

        self.if_then(some, active_part, rare=False)

    def _box_is_full(self, mask: Value) -> Optional[ir.Value]:
        """i1: every lane of ``mask`` is on, computed from its ends when the mask is a box
        (``compiler/analysis/masks.py``): a comparison of an index that runs through consecutive
        values along one dimension holds on a prefix or a suffix of it, so it holds everywhere when it
        holds at both ends. None when the mask is not a recognised box."""
        box = self._box(mask)
        if box is None:
            return None
        b = self.b
        full = ir.Constant(I1, 1)
        for bound in box.bounds:
            shape = _shape(bound.test.type)
            ends = [0] if bound.index_dim is None else [0, shape[bound.index_dim] - 1]
            for end in ends:
                idx = tuple(ir.Constant(I64, end if d == bound.index_dim else 0) for d in range(len(shape)))
                full = b.and_(full, self.value_at(bound.test, idx))
        return full

    def _runs_only(self, shape, run, at_run) -> None:
        outer = shape[:-1]
        count = shape[-1] // run

        def per_outer(prefix):
            self.counted_loop(count, lambda k: at_run(prefix + (self.b.mul(k, ir.Constant(I64, run)),)))

        self.loop_nest(outer, per_outer)

    def _report_bad_lane(self, pointer: Value, mask, size: int, shape) -> None:
        """Counts the bad lanes, then finds the first in order and fails with it and the count (the
        slow path of the check)."""
        b = self.b
        strides = row_major_strides(shape)
        count = self.scalar_slot(I64)
        b.store(ir.Constant(I64, 0), count)

        def is_bad(idx):
            address = b.ptrtoint(self.value_at(pointer, idx), I64)
            wrong = b.not_(self._in_bounds(pointer, address, size))
            return address, (b.and_(wrong, self.value_at(mask, idx)) if mask is not None else wrong)

        def tally(idx):
            b.store(b.add(b.load(count), b.zext(is_bad(idx)[1], I64)), count)

        def lane(idx):
            address, wrong = is_bad(idx)
            self.if_then(wrong, lambda: self.fail(ERROR_OUT_OF_BOUNDS, self.linear(idx, strides), address,
                                                  b.load(count)))

        self.loop_nest(shape, tally)
        self.loop_nest(shape, lane)
        b.ret(ir.Constant(I32, 1))  # not reached: some lane was bad

    def access_nest(self, pointer: Value, every, mask: Optional[Value], body) -> None:
        """Runs ``body(idx, address)`` for each active lane: versioned on ``every`` (all lanes active:
        no mask), the contiguous runs of the pointer at consecutive addresses. Where the mask is a box
        (``compiler/analysis/masks.py``), a block that is not full runs the box's active part without
        a test per lane (a row of 1000 under a block of 1024: every block of the launch)."""
        b = self.b
        shape = _shape(pointer.type)
        run = self._run_length(pointer)

        def emit(masked: bool):
            if masked and self._box(mask) is not None and shape:
                self._box_nest(pointer, mask, shape, run, body)
                return

            def at_run(idx):
                return self.value_at(pointer, idx) if run > 1 else None

            def lane(idx, base, j):
                if run > 1:
                    address = b.gep(base, [b.mul(j, ir.Constant(I64, 1))], source_etype=self._element_type)
                else:
                    address = self.value_at(pointer, idx)
                if masked:
                    self.if_then(self.value_at(mask, idx), lambda: body(idx, address, True), rare=False)
                else:
                    body(idx, address, False)

            self.run_nest(shape, run, at_run, lane)

        if mask is None:
            emit(False)
            return
        full = self.function.append_basic_block("full")
        partial = self.function.append_basic_block("partial")
        after = self.function.append_basic_block("accessed")
        branch = b.cbranch(b.load(every), full, partial)
        if self._is_tail(mask):
            expect(branch, True)
        for block, masked in ((full, False), (partial, True)):
            b.position_at_end(block)
            saved = dict(self.memo)
            # (a box's active part is the common case where its blocks are never full: not cold)
            with self.cold(masked and self._is_tail(mask) and (self._box(mask) is None or not shape)):
                emit(masked)
            self.memo = saved
            b.branch(after)
        b.position_at_end(after)

    def _all_tails(self, masks) -> bool:
        return all(m is None or self._is_tail(m) for m in masks)

    def _is_tail(self, mask: Value) -> bool:
        """True when ``mask`` is a box that leaves lanes out only at the edge of the launch or of a
        loop (``offs < n`` with ``offs`` from the program id): a block whose mask is not full is then
        rare. A box with a bound whose index is the same in every program and loop iteration
        (``cols < n_cols`` over a row) is partial in every block or in none: where it is partial (a
        row width that is not the block size) its masked path is the common one."""
        box = self._box(mask)
        return box is not None and not any(self._same_everywhere(bound.index) for bound in box.bounds)

    def _same_everywhere(self, value: Value) -> bool:
        """Whether ``value`` is computed by pure operations from constants, aranges and the kernel's
        arguments only: the same in every program and every loop iteration."""
        known = self._everywhere.get(value.id)
        if known is None:
            op = value.owner
            if op is None:
                known = any(value is argument for argument in self.fn.args)
            else:
                known = (op.opcode != "program_id" and PURE in SPEC[op.opcode].traits
                         and all(self._same_everywhere(operand) for operand in op.operands))
            self._everywhere[value.id] = known
        return known

    def _box(self, mask: Value):
        """``mask`` as a box (``classify_mask``) whose comparisons are all known, else None; worked
        out once per mask."""
        if mask.id not in self._boxes:
            box = classify_mask(mask, self.axis)
            self._boxes[mask.id] = box if box is not None and all(b.test is not None for b in box.bounds) else None
        return self._boxes[mask.id]
