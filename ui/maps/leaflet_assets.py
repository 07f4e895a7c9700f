"""Leaflet's JavaScript and CSS, served by the app itself so that maps work without internet.

Stock folium makes the browser fetch Leaflet (and jQuery, Bootstrap, …) from public CDNs; behind a
firewall the first failed script leaves the map empty, and every visitor's browser would tell a
third party that it opened the page. Leaflet comes instead from the pinned PyPI package
``django-js-lib-leaflet`` (never pasted into this repository): :func:`ensure` copies its files into
``./static/leaflet/`` (git-ignored), which Streamlit serves at ``/app/static/leaflet/`` because
``server.enableStaticServing`` is on in ``.streamlit/config.toml``. Downloaded standalone maps
inline the same files (:func:`inline_js`, :func:`inline_css`).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path

#: Where the package keeps Leaflet's distribution files.
PACKAGE, PACKAGE_DIR = "js_lib_leaflet", "static/js_lib_leaflet"
STATIC_DIR = Path(__file__).resolve().parents[2] / "static" / "leaflet"
#: URL path under which Streamlit serves ``STATIC_DIR``.
URL_PATH = "/app/static/leaflet"
JS_FILE, CSS_FILE = "leaflet.js", "leaflet.css"
FILES = (JS_FILE, CSS_FILE, "images/layers.png", "images/layers-2x.png",
         "images/marker-icon.png", "images/marker-icon-2x.png", "images/marker-shadow.png")

JS_URL = f"{URL_PATH}/{JS_FILE}"
CSS_URL = f"{URL_PATH}/{CSS_FILE}"


class LeafletMissingError(RuntimeError):
    """The Leaflet package is not installed (``pip install -r requirements.txt``)."""


def source(name: str) -> Path:
    """Path of one of Leaflet's files inside the installed package."""
    try:
        root = resources.files(PACKAGE)
    except ModuleNotFoundError:
        raise LeafletMissingError(
            f"the Python package {PACKAGE!r} (PyPI: django-js-lib-leaflet) is not installed, so "
            "maps have no Leaflet to draw with; run `pip install -r requirements.txt`") from None
    path = Path(str(root.joinpath(PACKAGE_DIR, name)))
    if not path.is_file():
        raise LeafletMissingError(f"{path} is missing from the installed {PACKAGE!r} package; "
                                  "reinstall it with `pip install -r requirements.txt`")
    return path


def _same(a: Path, b: Path) -> bool:
    return b.is_file() and a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


def ensure(target: Path = STATIC_DIR) -> list[str]:
    """Copy Leaflet's files into ``target`` unless identical copies are there; returns those copied.

    Idempotent and safe when several server threads or processes start at once: each file is
    written to a temporary name and renamed into place.
    """
    copied = []
    for name in FILES:
        origin, destination = source(name), target / name
        if _same(origin, destination):
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=destination.parent, prefix=f".{destination.name}.")
        os.close(handle)
        shutil.copyfile(origin, temporary)
        os.replace(temporary, destination)
        copied.append(name)
    return copied


@cache
def inline_js() -> str:
    """Leaflet's JavaScript, to embed in a standalone HTML file (``</script`` made inert)."""
    return source(JS_FILE).read_text(encoding="utf-8").replace("</script", "<\\/script")


@cache
def inline_css() -> str:
    """Leaflet's CSS with its images embedded as data URIs, so a saved map needs no other file."""
    css = source(CSS_FILE).read_text(encoding="utf-8")

    def embed(match: re.Match) -> str:
        data = base64.b64encode(source(match.group(1)).read_bytes()).decode("ascii")
        return f"url(data:image/png;base64,{data})"
    return re.sub(r"url\((images/[\w.-]+\.png)\)", embed, css).replace("</style", "<\\/style")
