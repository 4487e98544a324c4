"""Backends consume the tile IR. Each lives in its own folder and has one entry in ``registry``.

``base`` says what a backend is (the ``Backend`` protocol, its ``Options`` record, ``GPUTarget``);
``registry`` lists the backends and picks the one serving a launch's device.

As ``triton.backends``, this package also answers what code written for Triton asks of it:
``backends`` maps the names of Triton's compiler backends (``"nvidia"``, ``"amd"``...) to them,
and is empty here, since tritium compiles through none of them. torch reads it to decide whether
Triton can compile for a device (it cannot, so torch.compile keeps its own C++ CPU codegen).
"""

backends: dict = {}
