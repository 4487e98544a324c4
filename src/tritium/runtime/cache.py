"""The on-disk cache: files written atomically, checked when read, and rebuilt when damaged.

Two users share it: the autotuner (one JSON record per tuning question, under ``autotune/``) and
compiled backends (the outputs of a kernel's cached stages, under ``kernels/``). The folder is
``config.cache_dir()``: ``triton.knobs.cache.dir`` once assigned, else ``TRITIUM_CACHE_DIR``, else
``TRITON_CACHE_DIR``, else ``~/.cache/tritium`` (``$XDG_CACHE_HOME/tritium``).

Every file is written to a temporary file in its own folder and renamed into place (``os.replace``
is atomic), so a reader never sees half a file. Every file carries a checksum of its contents: a
JSON record holds a ``checksum`` member (the SHA-256 of the rest, as canonical JSON), a binary
entry a header line with its length and SHA-256. A file that cannot be read, does not parse or
fails its checksum is treated as missing: the caller rebuilds the entry and stores it again.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
import warnings
from typing import Any, Mapping, Optional, Union

from .. import config

FORMAT = 1
_MAGIC = b"tritium-cache"


def digest(*parts: Any) -> str:
    """A SHA-256 (hex) of ``parts`` written as canonical JSON (objects without JSON form by repr)."""
    text = json.dumps(parts, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _record_checksum(record: Mapping) -> str:
    body = {k: v for k, v in record.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class DiskCache:
    """One folder of the cache, ``cache_dir()/<name>``, read at each use (the settings may change),
    or ``<root>/<name>`` for a fixed ``root``."""

    def __init__(self, name: str, root: Optional[str] = None):
        self.name = name
        self.root = root

    @property
    def folder(self) -> str:
        return os.path.join(self.root or config.cache_dir(), self.name)

    def path(self, file_name: str) -> str:
        return os.path.join(self.folder, file_name)

    # writing ----------------------------------------------------------------------------------
    def _write(self, file_name: str, data: bytes) -> str:
        """Writes ``data`` atomically; an OSError (read-only or full disk) goes to the caller."""
        path = self.path(file_name)
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.splitext(path)[1])
        try:
            with os.fdopen(handle, "wb") as f:
                f.write(data)
            os.chmod(temporary, 0o644)  # mkstemp makes it private; the cache is an ordinary file
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        return path

    def store_json(self, file_name: str, record: Mapping) -> str:
        """Stores ``record`` (a JSON object) with its checksum; returns the file's path."""
        record = {k: v for k, v in record.items() if k != "checksum"}
        record["checksum"] = _record_checksum(record)
        return self._write(file_name, json.dumps(record, indent=1, sort_keys=True).encode())

    def store_bytes(self, file_name: str, data: bytes) -> str:
        """Stores ``data`` behind a header holding its length and checksum; returns the path."""
        header = b"%s %d %d %s\n" % (_MAGIC, FORMAT, len(data), hashlib.sha256(data).hexdigest().encode())
        return self._write(file_name, header + bytes(data))

    # reading ----------------------------------------------------------------------------------
    def _read(self, file_name: str) -> Optional[bytes]:
        try:
            with open(self.path(file_name), "rb") as f:
                return f.read()
        except OSError:
            return None

    def load_json(self, file_name: str) -> Optional[dict]:
        """The stored record, or None when it is missing or damaged (not JSON, not an object, or
        its checksum does not match)."""
        data = self._read(file_name)
        if data is None:
            return None
        try:
            record = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(record, dict) or record.get("checksum") != _record_checksum(record):
            return None
        del record["checksum"]
        return record

    def load_bytes(self, file_name: str) -> Optional[bytes]:
        """The stored bytes, or None when the entry is missing or damaged (a bad header, a length
        or checksum that does not match)."""
        data = self._read(file_name)
        if data is None:
            return None
        header, newline, payload = data.partition(b"\n")
        parts = header.split(b" ")
        if not newline or len(parts) != 4 or parts[0] != _MAGIC or parts[1] != b"%d" % FORMAT:
            return None
        if parts[2] != b"%d" % len(payload) or parts[3] != hashlib.sha256(payload).hexdigest().encode():
            return None
        return payload


# compiled kernels -------------------------------------------------------------------------------
KERNELS = DiskCache("kernels")
_warned_about: set[str] = set()


def kernel_key(ir_text: str, backend_name: str, backend_version: str, options: Any, target: Any) -> str:
    """The name of a compiled kernel on disk: a hash of everything its code depends on."""
    from ..version import __tritium_version__

    return digest("kernel", FORMAT, __tritium_version__, ir_text, backend_name, backend_version, repr(options),
                  repr(target))


def store_stages(key: str, asm: Mapping[str, Union[str, bytes]], root: Optional[str] = None) -> Optional[str]:
    """Stores a kernel's stage outputs (text or bytes) under ``key``; warns once, and returns None,
    when the disk refuses (the next process compiles again, nothing worse). ``root``: the cache
    folder to use instead of the current one (for stages stored later than they were asked for)."""
    kernels = KERNELS if root is None else DiskCache(KERNELS.name, root)
    stages = {}
    for stage, output in asm.items():
        if isinstance(output, (bytes, bytearray)):
            stages[stage] = {"base64": base64.b64encode(bytes(output)).decode("ascii")}
        else:
            stages[stage] = {"text": str(output)}
    try:
        return kernels.store_json(f"{key}.json", {"format": FORMAT, "key": key, "stages": stages})
    except OSError as e:
        if kernels.folder not in _warned_about:
            _warned_about.add(kernels.folder)
            warnings.warn(f"tritium could not save a compiled kernel to {kernels.folder}: {e}", RuntimeWarning,
                          stacklevel=3)
        return None


def load_stages(key: str, stages) -> Optional[dict]:
    """The stage outputs stored under ``key`` when every one of ``stages`` is there and intact."""
    record = KERNELS.load_json(f"{key}.json")
    if record is None or record.get("key") != key or not isinstance(record.get("stages"), dict):
        return None
    found = {}
    for stage in stages:
        entry = record["stages"].get(stage)
        if not isinstance(entry, dict):
            return None
        try:
            found[stage] = base64.b64decode(entry["base64"], validate=True) if "base64" in entry else str(entry["text"])
        except (KeyError, ValueError):
            return None
    return found


# Triton's cache-manager interface --------------------------------------------------------------------
class CacheManager:
    """Triton's interface of a store of a kernel's files, under a key (``triton.runtime.cache``):
    code that assigns ``knobs.cache.manager_class`` subclasses it."""

    def __init__(self, key: str, override: bool = False, dump: bool = False):
        self.key = key

    def get_file(self, filename: str) -> Optional[str]:
        raise NotImplementedError

    def put(self, data: Union[str, bytes], filename: str, binary: bool = True) -> str:
        raise NotImplementedError

    def get_group(self, filename: str) -> Optional[dict]:
        raise NotImplementedError

    def put_group(self, filename: str, group: dict) -> str:
        raise NotImplementedError


class FileCacheManager(CacheManager):
    """Files in a folder per key: under ``config.cache_dir()``'s ``triton/`` (or the knobs' dump and
    override folders with ``dump`` / ``override``), each written atomically. A group is a JSON file
    naming the paths of files stored under the same key."""

    def __init__(self, key: str, override: bool = False, dump: bool = False):
        super().__init__(key, override, dump)
        from .. import knobs

        if dump:
            root = knobs.cache.dump_dir
        elif override:
            root = knobs.cache.override_dir
        else:
            root = os.path.join(config.cache_dir(), "triton")
        self.cache_dir = os.path.join(root, key)
        if not override:
            os.makedirs(self.cache_dir, exist_ok=True)

    def _path(self, filename: str) -> str:
        return os.path.join(self.cache_dir, filename)

    def has_file(self, filename: str) -> bool:
        return os.path.exists(self._path(filename))

    def get_file(self, filename: str) -> Optional[str]:
        return self._path(filename) if self.has_file(filename) else None

    def put(self, data: Union[str, bytes], filename: str, binary: bool = True) -> str:
        os.makedirs(self.cache_dir, exist_ok=True)
        payload = data if isinstance(data, bytes) else str(data).encode()
        handle, temporary = tempfile.mkstemp(dir=self.cache_dir, prefix=".tmp-")
        with os.fdopen(handle, "wb") as f:
            f.write(payload)
        os.replace(temporary, self._path(filename))
        return self._path(filename)

    def get_group(self, filename: str) -> Optional[dict]:
        path = self.get_file(f"__grp__{filename}")
        if path is None:
            return None
        try:
            with open(path) as f:
                children = json.load(f)["child_paths"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return children if all(os.path.exists(p) for p in children.values()) else None

    def put_group(self, filename: str, group: dict) -> str:
        return self.put(json.dumps({"child_paths": {name: self._path(name) for name in group}}),
                        f"__grp__{filename}", binary=False)


def get_cache_manager(key: str) -> CacheManager:
    """A cache manager for ``key``: ``knobs.cache.manager_class`` when assigned (or named by
    ``TRITON_CACHE_MANAGER``), else ``FileCacheManager``."""
    from .. import knobs

    return (knobs.cache.manager_class or FileCacheManager)(key)
