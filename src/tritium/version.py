"""The versions: the Triton release whose language and API tritium follows, and tritium's own.

Libraries read ``triton.__version__`` to choose their code paths (``tl.extra.libdevice`` from 3.0
on, tensor descriptors, knobs), so under ``import triton`` that is what they must see; tritium's
own release is ``__tritium_version__``. A leaf module, so that any layer can name the versions.
"""
__version__ = "3.9.0"
__tritium_version__ = "0.1.0"
