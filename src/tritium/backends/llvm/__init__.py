"""LLVM lowering shared by the compiled backends (the native CPU backend now, the CUDA one next).

``types`` maps IR dtypes to LLVM types; ``scalar`` holds the table of ``lower_<opcode>``
functions that compute one lane of an elementwise op (a CPU evaluates them inside loops over a
block, a GPU thread over the lanes it owns); ``casts`` holds the conversions with the IR spec's
rounding and saturation; ``math`` the elementwise math functions (our own fp32 polynomials).
Nothing here decides where a block lives: that is each backend's placement.
"""
