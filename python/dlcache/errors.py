# SPDX-License-Identifier: MIT
"""Exceptions of the dlcache package."""

import errno as _errno
import os


class DataLoaderError(RuntimeError):
    """A sample (or the loader) failed; the C library's error, in Python.

    Attributes: ``sample`` (the sample ID, or None), ``path`` (the sample's
    file, or None), ``kind`` (the C error kind's name: "corrupt",
    "truncated", "missing", "io", ...), ``errno`` (a positive errno) and
    ``message`` (the library's one-line description).
    """

    def __init__(self, message, sample=None, path=None, kind=None, errno=0):
        self.sample = sample
        self.path = path
        self.kind = kind
        self.errno = errno
        self.message = message
        super().__init__(self._text())

    def _text(self):
        parts = []
        if self.path:
            parts.append(self.path)
        if self.sample is not None:
            parts.append("sample %d" % self.sample)
        if self.kind:
            parts.append(self.kind)
        head = ", ".join(parts)
        msg = self.message or (os.strerror(self.errno) if self.errno else "")
        return "%s: %s" % (head, msg) if head else msg


class ForkedLoaderError(RuntimeError):
    """A loader was used in a process forked after it was created."""


def oserror(err, what, path=None):
    """An OSError for a negative errno @err, naming @what and @path."""
    err = -err if err < 0 else err
    msg = "%s: %s" % (what, os.strerror(err))
    cls = {
        _errno.ENOENT: FileNotFoundError,
        _errno.EACCES: PermissionError,
        _errno.EPERM: PermissionError,
        _errno.ENOTDIR: NotADirectoryError,
        _errno.EISDIR: IsADirectoryError,
    }.get(err, OSError)
    if cls is OSError and err == _errno.ENOMEM:
        return MemoryError(msg + (" (%s)" % path if path else ""))
    return cls(err, msg, path) if path else cls(err, msg)
