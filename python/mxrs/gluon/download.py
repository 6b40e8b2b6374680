"""Downloading files: ``download``, ``check_sha1`` and ``replace_file`` of ``gluon.utils``.

``download`` fetches a URL with ``requests`` (imported when a download is made, so
``import mxrs`` does not need it), writes the body to a temporary file beside the target and
renames it into place, so a reader never sees a half-written file and several processes
downloading to the same path leave exactly one complete file behind.

Examples
--------
>>> fname = download("https://example.com/data/train.csv", path="data/", sha1_hash=None)
>>> fname
'data/train.csv'
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
import warnings
from typing import Any

_log = logging.getLogger(__name__)

__all__ = ["download", "check_sha1", "replace_file"]

_CHUNK = 1 << 20


def check_sha1(filename: str, sha1_hash: str) -> bool:
    """Tell whether a file's SHA-1 digest equals the expected one.

    Parameters
    ----------
    filename : str
        The file to hash (read in 1 MiB chunks).
    sha1_hash : str
        The expected digest as 40 hexadecimal digits (upper or lower case).

    Returns
    -------
    bool
        True when the digests match.

    Examples
    --------
    >>> check_sha1("empty.txt", "da39a3ee5e6b4b0d3255bfef95601890afd80709")
    True
    """
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        while chunk := f.read(_CHUNK):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash.lower()


def replace_file(src: str, dst: str) -> None:
    """Move ``src`` to ``dst`` in one step, replacing ``dst`` if it exists.

    The rename is atomic when both are on the same file system: another process sees either
    the old ``dst`` or the complete new one.

    Parameters
    ----------
    src : str
        The file to move.
    dst : str
        Its new name.
    """
    os.replace(src, dst)


def _target_name(url: str, path: str | None) -> str:
    """The file name ``download`` writes: ``path`` itself, or the URL's last component."""
    url_name = url.split("?")[0].split("#")[0].split("/")[-1]
    if path is not None:
        path = os.path.expanduser(path)
        if not os.path.isdir(path):
            return path
    if not url_name:
        raise ValueError(f"cannot derive a file name from the URL {url!r}; pass a file `path`")
    return url_name if path is None else os.path.join(path, url_name)


def _needs_download(fname: str, sha1_hash: str | None) -> bool:
    """Whether ``fname`` is missing or (with ``sha1_hash``) has other content."""
    if not os.path.exists(fname):
        return True
    return bool(sha1_hash) and not check_sha1(fname, sha1_hash or "")


def _fetch_once(
    url: str, fname: str, sha1_hash: str | None, overwrite: bool, verify_ssl: bool
) -> None:
    """One download attempt: fetch into a temporary file beside ``fname``, then rename."""
    import requests  # imported here so that `import mxrs` does not need requests

    tmp = f"{fname}.{uuid.uuid4().hex}.part"
    response: Any = requests.get(url, stream=True, verify=verify_ssl)
    try:
        status = int(response.status_code)
        if not 200 <= status < 300:
            raise RuntimeError(f"failed downloading {url}: HTTP status {status}")
        with open(tmp, "wb") as f:
            for chunk in response.iter_content(chunk_size=_CHUNK):
                if chunk:
                    f.write(chunk)
        # Without `overwrite`, a good copy that another process completed meanwhile is kept
        # and this one dropped; either way the target only ever holds a complete file.
        if overwrite or _needs_download(fname, sha1_hash):
            replace_file(tmp, fname)
    finally:
        response.close()
        if os.path.exists(tmp):
            os.remove(tmp)
    if sha1_hash and not check_sha1(fname, sha1_hash):
        raise UserWarning(
            f"File {fname} is downloaded but the content hash does not match "
            f"(expected sha1 {sha1_hash}). The source may be outdated or the download "
            "incomplete."
        )


def download(
    url: str,
    path: str | None = None,
    overwrite: bool = False,
    sha1_hash: str | None = None,
    retries: int = 5,
    verify_ssl: bool = True,
) -> str:
    """Download a URL to a file, unless a good copy is already there.

    Parameters
    ----------
    url : str
        The URL to fetch.
    path : str, optional
        Where to store the file: an existing directory (the file keeps the URL's last path
        component as its name) or a file name. By default the URL's last path component in the
        current directory. ``~`` is expanded.
    overwrite : bool, default False
        Download even if the file exists.
    sha1_hash : str, optional
        The expected SHA-1 digest. An existing file with another digest is downloaded again,
        and a download with another digest is an error.
    retries : int, default 5
        How many times to try the download before giving up (an attempt fails on a network
        error, an HTTP status outside 2xx or a digest mismatch); 0 still makes one attempt.
    verify_ssl : bool, default True
        Verify the server's TLS certificate. ``False`` warns that the request is unverified.

    Returns
    -------
    str
        The file name of the downloaded (or already present) file.

    Raises
    ------
    AssertionError
        If ``retries`` is negative.
    ValueError
        If no file name can be derived from ``url`` and ``path`` is not given.
    RuntimeError
        If the last attempt got an HTTP status outside 2xx (the message names URL and status).
    UserWarning
        If the last attempt's file does not have the digest ``sha1_hash``.
    Exception
        Whatever ``requests`` raised on the last attempt (e.g. ``ConnectionError``).

    Notes
    -----
    The body goes to a temporary file ``<fname>.<random>.part`` in the target's directory,
    which is then renamed over ``<fname>``; the temporary file is removed on failure. When
    another process completes a good copy of the same file first (and ``overwrite`` is off),
    that copy is kept and this download is dropped.
    Progress is reported on stdout, one line per attempt.

    Examples
    --------
    >>> download("https://example.com/README.md", path="/tmp/")
    '/tmp/README.md'
    """
    if not retries >= 0:
        raise AssertionError(f"Number of retries should be at least 0, currently it's {retries}")
    fname = _target_name(url, path)
    if not verify_ssl:
        warnings.warn(
            "Unverified HTTPS request is being made (verify_ssl=False). "
            "Adding certificate verification is strongly advised.",
            stacklevel=2,
        )
    if not overwrite and not _needs_download(fname, sha1_hash):
        return fname
    directory = os.path.dirname(os.path.abspath(fname))
    os.makedirs(directory, exist_ok=True)
    attempts = max(1, int(retries))
    for attempt in range(1, attempts + 1):
        try:
            _log.info("downloading %s from %s", fname, url)
            _fetch_once(url, fname, sha1_hash, overwrite, verify_ssl)
            break
        except Exception as err:
            left = attempts - attempt
            if left == 0:
                raise
            plural = "s" if left > 1 else ""
            _log.warning(
                "download of %s failed (%r); retrying, %d attempt%s left", url, err, left, plural
            )
    return fname
