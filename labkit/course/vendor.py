"""The browser libraries the slide decks use, fetched once from the npm registry and kept beside
the decks, so a deck opens offline (in a classroom without a network, and in the browser check).

Each package is pinned to one version and checked against the registry's sha512 integrity before
anything is unpacked; only the files a deck loads are kept (about 8 MB in all).
"""
from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REGISTRY = "https://registry.npmjs.org"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    integrity: str          # the registry's dist.integrity: "sha512-<base64>"
    keep: tuple             # path prefixes inside the package to unpack

    @property
    def url(self) -> str:
        return f"{REGISTRY}/{self.name}/-/{self.name}-{self.version}.tgz"


PACKAGES = (
    Package("reveal.js", "4.0.2", "sha512-LWZSUenufF1gpD7npxJ7KfoQQFKgc1D6XrLTFgKlwWNP1BQ74hT48KONFWMAw+8R/QUeaSc"
            "CLCLrBVHDfFIEiw==", ("dist/reveal.js", "dist/reveal.css", "dist/reset.css", "dist/theme/", "plugin/notes/")),
    Package("requirejs", "2.3.6", "sha512-ipEzlWQe6RK3jkzikgCupiTbTvm4S0/CAU5GlgptkN5SO6F3u0UD0K18wy6ErDqiCyP4J4YYe1"
            "HuAShvsxePLg==", ("require.js",)),
    Package("mathjax", "3.2.2", "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1v"
            "O+geW0OhGw==", ("es5/tex-chtml-full.js", "es5/output/chtml/fonts/woff-v2/")),
)


def check_integrity(data: bytes, integrity: str) -> None:
    algo, _, want = integrity.partition("-")
    if algo != "sha512":
        raise ValueError(f"integrity must be sha512-..., got {integrity[:20]!r}")
    got = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if got != want:
        raise ValueError(f"the downloaded tarball's sha512 {got[:16]}... is not the pinned {want[:16]}...")


def unpack(data: bytes, package: Package, dest: Path) -> int:
    """The kept files of an npm tarball (its paths start with 'package/') into dest; returns how many."""
    n = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            path = member.name.split("/", 1)[-1]
            if not member.isfile() or ".." in Path(path).parts or not path.startswith(package.keep):
                continue
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
            n += 1
    return n


def fetch(folder: str | Path, log=print, timeout: float = 60.0) -> Path:
    """Every package under folder/<name>/ (skipped where its pinned version is already there)."""
    folder = Path(folder)
    for p in PACKAGES:
        dest = folder / p.name
        stamp = dest / ".version"
        if stamp.is_file() and stamp.read_text() == p.version:
            continue
        log(f"fetching {p.name} {p.version} from {REGISTRY}")
        with urllib.request.urlopen(p.url, timeout=timeout) as r:
            data = r.read()
        check_integrity(data, p.integrity)
        unpack(data, p, dest)
        stamp.write_text(p.version)
    return folder
