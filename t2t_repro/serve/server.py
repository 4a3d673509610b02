"""A REST server speaking TensorFlow Serving's API, so TF Serving clients work unchanged against it.

    server = ModelServer(ServedModel("runs/wmt_ende/export"), model_name="wmt_ende", host="127.0.0.1", port=8501)
    server = ModelServer({"ende": served_a, "ende_ct2": served_b})    # several models, each under its name
    server.serve_forever()          # or start() for a background thread; stop() ends it

Routes (as TensorFlow Serving's; `/versions/<N>` may follow the model name, N being the served version):

    GET  /v1/models/<name>              model status: {"model_version_status": [{"version", "state", ...}]}
    GET  /v1/models/<name>/metadata     model spec and SignatureDefs
    POST /v1/models/<name>:predict      {"instances": [...]} -> {"predictions": [...]},
                                        {"inputs": ...} -> {"outputs": ...}

and the page for people (`t2t_repro.serve.page`): GET / (the page), GET /static/<file>, GET /page/models.

Every error is answered with a JSON object {"error": "..."}, those of the HTTP layer (a malformed request
line, an unsupported method) included: 400 for a bad request (JSON, nesting, types, empty or
over-long inputs, too many examples), 404 for an unknown model, version or path, 405 for a wrong method,
411 without Content-Length, 413 for a body over the limit, 500 when the model fails on a batch, 503 when
overloaded or shutting down. No request can stop the server. Connections are HTTP/1.1 keep-alive; each
is served by its own thread, and the model's batching queues gather concurrent requests into one call.
"""

import http.server
import json
import logging
import re
import threading
import urllib.parse

from t2t_repro.serve import page, rest_api
from t2t_repro.serve.rest_api import RequestError

logger = logging.getLogger(__name__)

_ROUTE = re.compile(
    r"^/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>[^/:]+))?(?P<action>/metadata|:[A-Za-z]+)?/?$"
)
_SOCKET_TIMEOUT_S = 60  # a client that stops sending mid-request is dropped after this
_MAX_DISCARDED_BYTES = 64 << 20  # refused bodies up to this size are read and dropped, larger ones cut off


class ModelServer(http.server.ThreadingHTTPServer):
    """An HTTP server answering TensorFlow Serving REST requests for one `ServedModel` under `model_name`, or for
    several: `served_model` a {name: ServedModel} dict (`model_name` unused); `served_model` and `model_name`
    are then the first's."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the listen backlog: many clients connecting at once are not refused

    def __init__(self, served_model, model_name="model", host="127.0.0.1", port=8501):
        self.models = dict(served_model) if isinstance(served_model, dict) else {model_name: served_model}
        if not self.models:
            raise ValueError("no model to serve")
        self.model_name, self.served_model = next(iter(self.models.items()))
        self._thread = None
        super().__init__((host, port), _RequestHandler)

    @property
    def port(self):
        return self.server_address[1]

    @property
    def url(self):
        host = self.server_address[0]
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}"

    def start(self):
        """Serves in a background thread; returns self."""
        self._thread = threading.Thread(target=self.serve_forever, name="model-server", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stops serving (from another thread than serve_forever's), closes the socket and the batching queues."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()
        for served in self.models.values():
            served.close()


class _RequestHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "t2t-repro-serve"
    timeout = _SOCKET_TIMEOUT_S

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        logger.debug("%s %s", self.address_string(), format % args)

    def send_error(self, code, message=None, explain=None):
        """Answers the errors the HTTP layer finds itself (a malformed request line or header, an unsupported
        method, a request line or header too long) like every other error: {"error": "..."} JSON, and closes
        the connection, whose stream may be out of step."""
        self.close_connection = True
        text = message or self.responses.get(code, ("error",))[0]
        self._send_json(code, {"error": f"{text}: {explain}" if explain else text},
                        include_body=self.command != "HEAD")

    def _dispatch(self, method):
        self._body_read = False
        try:
            status, body = self._answer(method)
        except RequestError as error:
            status, body = error.status, {"error": error.message}
        except Exception as error:  # noqa: BLE001 - a failing request must never stop the server
            logger.exception("request %s %s failed", method, self.path)
            status, body = 500, {"error": f"internal error: {type(error).__name__}: {error}"}
        if not self._body_read:
            self._discard_body()
        try:
            self._send_json(status, body, include_body=method != "HEAD")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away: nothing to answer to

    def _answer(self, method):
        path = urllib.parse.urlsplit(self.path).path
        match = _ROUTE.match(path)
        if not match:
            return self._page_answer(method, path)
        name, version, action = match["name"], match["version"], match["action"]
        served = self.server.models.get(name)
        if served is None or (version is not None and version != str(served.version)):
            request = f"Specific({name}, {version})" if version is not None else f"Latest({name})"
            raise RequestError(404, f"Servable not found for request: {request}")
        if action in (None, "/metadata"):
            self._require_method(method, ("GET", "HEAD"))
            if action is None:
                return 200, rest_api.model_status(served.version)
            return 200, rest_api.model_metadata(name, served.version, served.signature_defs)
        if action in (":classify", ":regress"):
            self._require_method(method, ("POST",))
            raise RequestError(400, f"{action[1:]} is not supported: this model serves predict only")
        if action != ":predict":
            raise RequestError(404, f"unknown verb {action!r}: use :predict")
        self._require_method(method, ("POST",))
        return 200, served.predict(rest_api.parse_json_body(self._read_body()))

    def _page_answer(self, method, path):
        """The page's routes (`t2t_repro.serve.page`); 404 for any other path."""
        if path == page.MODELS_PATH:
            self._require_method(method, ("GET", "HEAD"))
            return 200, page.model_cards(self.server.models)
        found = page.static_file(path)
        if found is None:
            raise RequestError(404, f"no such path {path!r}: the API is GET /v1/models/<name>[/metadata] and "
                                    "POST /v1/models/<name>:predict; the page is at /")
        self._require_method(method, ("GET", "HEAD"))
        return 200, page.StaticFile(*found)

    def _require_method(self, method, allowed):
        if method not in allowed:
            self._allowed = allowed
            raise RequestError(405, f"method {method} not allowed here: use {' or '.join(allowed)}")

    def _read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() not in ("", "identity"):
            raise RequestError(411, "send the body with a Content-Length (chunked transfer is not supported)")
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            raise RequestError(411, "a predict request needs a Content-Length header")
        try:
            length = int(length_text)
            if length < 0:
                raise ValueError
        except ValueError:
            raise RequestError(400, f"invalid Content-Length {length_text!r}") from None
        limit = self.server.served_model.limits.max_body_bytes
        if length > limit:
            raise RequestError(413, f"request body of {length} bytes: at most {limit}")
        body = self.rfile.read(length)
        self._body_read = True
        if len(body) != length:
            self.close_connection = True
            raise RequestError(400, f"the body ended after {len(body)} of {length} bytes")
        return body

    def _discard_body(self):
        """Reads and drops the body of a request answered without it, so the connection can serve the next
        request (and the client sees the answer rather than a reset); a very large or undelimited one closes
        the connection instead."""
        if "Transfer-Encoding" in self.headers:
            self.close_connection = True
            return
        try:
            remaining = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            remaining = -1
        if not 0 <= remaining <= _MAX_DISCARDED_BYTES:
            self.close_connection = True
            return
        try:
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 1 << 16))
                if not chunk:
                    break
                remaining -= len(chunk)
        except OSError:
            remaining = -1
        if remaining:
            self.close_connection = True

    def _send_json(self, status, body, include_body=True):
        if isinstance(body, page.StaticFile):
            content_type, data, headers = body.content_type, body.data, page.HEADERS
        else:
            content_type, headers = "application/json", {}
            data = (json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for header, value in headers.items():
            self.send_header(header, value)
        if status == 405:
            self.send_header("Allow", ", ".join(getattr(self, "_allowed", ("GET", "POST"))))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if include_body:
            self.wfile.write(data)
        if status >= 500:
            logger.warning("%s %s -> %d: %s", self.command, getattr(self, "path", ""), status, body.get("error"))
