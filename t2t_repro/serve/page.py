"""The page at `/` of t2t-repro-serve: its files, shipped in the package (`t2t_repro/serve/static/`), and the
routes that serve them.

    GET /                     the page (static/index.html)
    GET /static/<file>        its style sheet and script
    GET /page/models          the served models' cards (`t2t_repro.serve.model_card`), for the page's picker

The page translates through the REST API itself (`POST /v1/models/<name>:predict`, the `attention` signature
when the heat map is shown); it fetches nothing from anywhere else, which its Content-Security-Policy enforces.
"""

import collections
import importlib.resources
import re

from t2t_repro.serve.model_card import model_card

PAGE_PATHS = ("/", "/index.html")
MODELS_PATH = "/page/models"
_STATIC = re.compile(r"^/static/(?P<file>[a-z][a-z0-9_-]*\.(?P<kind>css|js|html|svg))$")
_CONTENT_TYPES = {"html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
                  "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"}
# Everything from this server only: no CDN, no inline script, nothing sent elsewhere.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


StaticFile = collections.namedtuple("StaticFile", "content_type data")


def _read(file_name):
    return importlib.resources.files("t2t_repro.serve").joinpath("static", file_name).read_bytes()


def static_file(path):
    """(content type, bytes) of the page's file at URL path `path`, or None when `path` names none."""
    if path in PAGE_PATHS:
        path = "/static/index.html"
    match = _STATIC.match(path)
    if not match:
        return None
    try:
        return _CONTENT_TYPES[match["kind"]], _read(match["file"])
    except (FileNotFoundError, IsADirectoryError):
        return None


def model_cards(models):
    """GET /page/models: {"models": [card, ...]} in the order the models were given."""
    return {"models": [model_card(name, served) for name, served in models.items()]}
