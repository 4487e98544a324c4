"""Host-side helpers, named as in ``triton.tools`` (``tensor_descriptor.TensorDescriptor``)."""
