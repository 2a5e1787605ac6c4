"""The PEP 517 backend of gpuwhy (pyproject.toml): runs make, then packs the
gpuwhy binary, the CUPTI injection libraries and the man page into a wheel.
Standard library only, so `pip wheel .` needs nothing from an index.

The wheel's layout mirrors `make install` under the package folder, so the
binary finds its injection libraries the same way (../lib/gpuwhy):
    gpuwhy/__init__.py, gpuwhy/__main__.py   report(path), python -m gpuwhy
    gpuwhy/bin/gpuwhy                        the binary
    gpuwhy/lib/gpuwhy/libgpuwhy-inject-cuN.so
    gpuwhy-V.data/data/share/man/man1/gpuwhy.1   -> <venv>/share/man/man1
and a console script `gpuwhy` that execs the binary.
The tag is py3-none-linux_<arch>; `make wheel` has auditwheel turn it into
the manylinux tag the binary qualifies for.
"""
import base64
import hashlib
import io
import os
import platform
import re
import subprocess
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "gpuwhy"
SUMMARY = ("Why is the GPU idle? Records an unmodified GPU program and ranks the "
           "causes of its idle time, with evidence, a predicted speed-up and a fix.")


def _version():
    with open(os.path.join(ROOT, "Makefile")) as f:
        m = re.search(r"^VERSION\s*:=\s*(\S+)", f.read(), re.M)
    if not m:
        raise RuntimeError("no VERSION in Makefile")
    return m.group(1)


def _tag():
    return "py3-none-linux_" + (platform.machine() or "x86_64")


def _make(*targets):
    jobs = os.environ.get("GPUWHY_MAKE_JOBS", "2")
    subprocess.run(["make", "-C", ROOT, "-j" + jobs, *targets], check=True)


def _built_files():
    """The binary and the injection libraries: as make wheel names them
    (GPUWHY_WHEEL_FILES, built already), else as make's defaults name them."""
    out = os.environ.get("GPUWHY_WHEEL_FILES", "").split()
    if not out:
        out = subprocess.run(["make", "-C", ROOT, "-s", "--no-print-directory", "print-bins"],
                             check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    files = [os.path.join(ROOT, p) for p in out]
    missing = [p for p in files if not os.path.isfile(p)]
    if missing:
        raise RuntimeError("make did not build: " + ", ".join(missing))
    return files


def _metadata(version):
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: >=3.8\nClassifier: Operating System :: POSIX :: Linux\n"
            "Classifier: Environment :: GPU :: NVIDIA CUDA\n"
            "Description-Content-Type: text/markdown\n\n%s" % (NAME, version, SUMMARY, readme))


def _dist_info_files(version, tag):
    return {
        "METADATA": _metadata(version),
        "WHEEL": "Wheel-Version: 1.0\nGenerator: gpuwhy build_meta\nRoot-Is-Purelib: false\n"
                 "Tag: %s\n" % tag,
        "entry_points.txt": "[console_scripts]\ngpuwhy = gpuwhy.__main__:main\n",
        "top_level.txt": "gpuwhy\n",
    }


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


class _Wheel:
    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        self.record.append("%s,%s,%d" % (arcname, _digest(data), len(data)))

    def add_file(self, arcname, path):
        with open(path, "rb") as f:
            data = f.read()
        self.add(arcname, data, 0o755 if os.access(path, os.X_OK) else 0o644)

    def close(self, record_name):
        self.record.append(record_name + ",,")
        self.zip.writestr(zipfile.ZipInfo(record_name, date_time=(2020, 1, 1, 0, 0, 0)),
                          "\n".join(self.record) + "\n")
        self.zip.close()


# ---- PEP 517 hooks ------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    dist_info = "%s-%s.dist-info" % (NAME, version)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for name, text in _dist_info_files(version, _tag()).items():
        with open(os.path.join(metadata_directory, dist_info, name), "w") as f:
            f.write(text)
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version, tag = _version(), _tag()
    if not os.environ.get("GPUWHY_WHEEL_FILES"):  # else make wheel has built them
        _make("all")
    files = _built_files()
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    os.makedirs(wheel_directory, exist_ok=True)
    whl = _Wheel(os.path.join(wheel_directory, name))
    pkg = os.path.join(ROOT, "python", "gpuwhy")
    for py in sorted(os.listdir(pkg)):
        if py.endswith(".py"):
            with open(os.path.join(pkg, py)) as f:
                whl.add("gpuwhy/" + py, f.read().replace("@VERSION@", version).encode())
    for path in files:
        base = os.path.basename(path)
        whl.add_file("gpuwhy/lib/gpuwhy/" + base if base.endswith(".so") else "gpuwhy/bin/" + base,
                     path)
    man = os.path.join(ROOT, "docs", "gpuwhy.1")
    whl.add_file("gpuwhy/share/man/man1/gpuwhy.1", man)
    whl.add_file("%s-%s.data/data/share/man/man1/gpuwhy.1" % (NAME, version), man)
    dist_info = "%s-%s.dist-info" % (NAME, version)
    for fname, text in _dist_info_files(version, tag).items():
        whl.add("%s/%s" % (dist_info, fname), text.encode())
    whl.close(dist_info + "/RECORD")
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The tracked source files (git ls-files), plus PKG-INFO."""
    version = _version()
    base = "%s-%s" % (NAME, version)
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                           stdout=subprocess.PIPE).stdout.decode().split("\0")
    os.makedirs(sdist_directory, exist_ok=True)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in filter(None, files):
            if os.path.isfile(os.path.join(ROOT, rel)):
                tar.add(os.path.join(ROOT, rel), arcname=base + "/" + rel, recursive=False)
        data = _metadata(version).encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return name
