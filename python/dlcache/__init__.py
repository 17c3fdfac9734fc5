# SPDX-License-Identifier: MIT
"""dlcache: shuffled, cached, decoded mini-batches for training.

The PyTorch interface is dlcache.torch.DataLoader (Documentation/python.md).
This package is a ctypes binding of libdlcache.so: no compiled extension,
so one build serves every Python and torch version.
"""

from .errors import DataLoaderError, ForkedLoaderError

__version__ = "0.1.0"
__all__ = ["DataLoaderError", "ForkedLoaderError", "__version__"]
