"""A PEP 517 build backend for the usher package, in the standard library alone.

``pip install ./clients/python`` must work offline and without setuptools (which new virtual environments no
longer carry): the package is a directory of pure Python files, so its wheel is a zip of them plus the metadata files
the wheel format (PEP 427, PEP 376's RECORD) asks for. The metadata comes from pyproject.toml's [project] table,
which this reads with a few regular expressions (tomllib is Python 3.11+, and the table is ours).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(HERE, "src")
# Fixed file times (1980-01-01, the earliest zip allows): the same sources give the same wheel.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _project() -> Dict[str, str]:
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as file:
        text = file.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = {}
    for key in ("name", "version", "description", "requires-python"):
        match = re.search(rf'^{key}\s*=\s*"([^"]*)"', table, re.MULTILINE)
        if match is None:
            raise RuntimeError(f"pyproject.toml: [project] has no {key}")
        fields[key] = match.group(1)
    fields["classifiers"] = "\n".join(re.findall(r'^\s+"([^"]+ :: [^"]+)",?$', table, re.MULTILINE))
    return fields


def _metadata() -> str:
    project = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    lines += [f"Classifier: {classifier}" for classifier in project["classifiers"].splitlines()]
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as file:
        readme = file.read()
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + readme


def _package_files() -> List[Tuple[str, str]]:
    """(path in the wheel, path on disk) of every file of the package, sorted."""
    files = []
    for directory, subdirectories, names in os.walk(os.path.join(SOURCE, "usher")):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".typed")):
                path = os.path.join(directory, name)
                files.append((os.path.relpath(path, SOURCE).replace(os.sep, "/"), path))
    return sorted(files)


def _dist_info() -> str:
    project = _project()
    return f"{project['name']}-{project['version']}.dist-info"


def _wheel_name() -> str:
    project = _project()
    return f"{project['name']}-{project['version']}-py3-none-any.whl"


def _dist_info_files() -> Dict[str, bytes]:
    wheel = "Wheel-Version: 1.0\nGenerator: usher_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return {"METADATA": _metadata().encode("utf-8"), "WHEEL": wheel.encode("ascii")}


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, str]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Optional[Dict[str, str]] = None
) -> str:
    dist_info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(dist_info, exist_ok=True)
    for name, content in _dist_info_files().items():
        with open(os.path.join(dist_info, name), "wb") as file:
            file.write(content)
    return _dist_info()


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Dict[str, str]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    records = []

    def add(archive: zipfile.ZipFile, name: str, content: bytes) -> None:
        info = zipfile.ZipInfo(name, ZIP_TIME)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, content)
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode("ascii")
        records.append(f"{name},sha256={digest},{len(content)}")

    path = os.path.join(wheel_directory, _wheel_name())
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in _package_files():
            with open(source, "rb") as file:
                add(archive, name, file.read())
        for name, content in _dist_info_files().items():
            add(archive, f"{_dist_info()}/{name}", content)
        record_name = f"{_dist_info()}/RECORD"
        records.append(f"{record_name},,")
        info = zipfile.ZipInfo(record_name, ZIP_TIME)
        info.external_attr = 0o644 << 16
        archive.writestr(info, "\n".join(records) + "\n")
    return _wheel_name()


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, str]] = None) -> str:
    project = _project()
    base = f"{project['name']}-{project['version']}"
    name = f"{base}.tar.gz"
    files = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")), ("README.md", os.path.join(HERE, "README.md"))]
    files.append(("build_backend/usher_build.py", os.path.abspath(__file__)))
    files += [("src/" + wheel_path, disk) for wheel_path, disk in _package_files()]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as archive:

        def add(path: str, content: bytes) -> None:
            info = tarfile.TarInfo(f"{base}/{path}")
            info.size = len(content)
            info.mode = 0o644
            info.mtime = 315532800
            archive.addfile(info, io.BytesIO(content))

        add("PKG-INFO", _metadata().encode("utf-8"))
        for path, disk in files:
            with open(disk, "rb") as file:
                add(path, file.read())
    return name
