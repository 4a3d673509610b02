"""t2t-repro-serve: serves the newest exported SavedModel version over TensorFlow Serving's REST API.

    t2t-repro-serve --model_dir=runs/wmt_ende/export --model_name=wmt_ende
    curl -d '{"instances": ["A sentence."]}' http://127.0.0.1:8501/v1/models/wmt_ende:predict

Binds 127.0.0.1 unless --host says otherwise; --port=0 picks a free port (printed at start). Concurrent
requests are batched together (up to --max_batch_size examples, waiting at most --batch_timeout_ms).
Ctrl-C or SIGTERM stops it.
"""

import argparse
import logging
import signal
import sys

from t2t_repro.cli.common import ArgumentParser, quiet_tensorflow, run_main


def build_parser():
    from t2t_repro.serve.served_model import ServingLimits

    defaults = ServingLimits()
    parser = ArgumentParser(
        prog="t2t-repro-serve",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--model_dir", help="the export directory holding version directories 1/, 2/, ... (the newest is served)")
    add("--model_name", default="model", help="the name in the URLs /v1/models/<name> (TF Serving's image default)")
    add("--host", default="127.0.0.1", help="address to bind; 0.0.0.0 exposes the server to the network")
    add("--port", type=int, default=8501, help="port to listen on (TF Serving's REST port); 0 picks a free one")
    add("--max_batch_size", type=int, default=defaults.max_batch_size, help="examples per model call and per request")
    add("--batch_timeout_ms", type=float, default=defaults.batch_timeout_ms,
        help="how long a batch waits for more requests to join it")
    add("--max_body_bytes", type=int, default=defaults.max_body_bytes, help="largest request body accepted")
    add("--max_input_chars", type=int, default=defaults.max_input_chars, help="characters per text example")
    add("--max_input_tokens", type=int, default=defaults.max_input_tokens,
        help="source tokens per example, EOS included (0: the export's max_input_length)")
    add("--verbose", action="store_true", help="log every request")
    return parser


def _stop_on_sigterm(signum, frame):
    raise KeyboardInterrupt


def _main(argv):
    quiet_tensorflow()
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from t2t_repro.errors import UserError

    if not args.model_dir:
        raise UserError("missing --model_dir")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port={args.port}: must be between 0 and 65535")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from t2t_repro.serve.served_model import ServedModel, ServingLimits
    from t2t_repro.serve.server import ModelServer

    limits = ServingLimits(
        max_batch_size=args.max_batch_size, batch_timeout_ms=args.batch_timeout_ms,
        max_body_bytes=args.max_body_bytes, max_input_chars=args.max_input_chars,
        max_input_tokens=args.max_input_tokens,
    )
    served = ServedModel(args.model_dir, limits)
    try:
        server = ModelServer(served, model_name=args.model_name, host=args.host, port=args.port)
    except OSError as error:
        served.close()
        raise UserError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    print(f"serving {served.version_dir} (version {served.version}) as {args.model_name!r} at "
          f"{server.url}/v1/models/{args.model_name}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr, flush=True)
    finally:
        server.server_close()
        served.close()
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
