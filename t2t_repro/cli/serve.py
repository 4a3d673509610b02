"""t2t-repro-serve: serves the newest exported model version over TensorFlow Serving's REST API.

    t2t-repro-serve --model_dir=runs/wmt_ende/export --model_name=wmt_ende
    t2t-repro-serve --engine=ctranslate2 --model_dir=runs/wmt_ende/export_ctranslate2 --model_name=wmt_ende
    curl -d '{"instances": ["A sentence."]}' http://127.0.0.1:8501/v1/models/wmt_ende:predict

The tensorflow engine serves SavedModel exports, the ctranslate2 engine CTranslate2 exports
(t2t-repro-exporter --format=ctranslate2; `pip install "t2t-repro[ctranslate2]"`), both with the same
signatures and answers. For a parsing model, "outputs" are Penn Treebank trees with the source words in
place and "raw_outputs" the decoded linearised trees. An export made with --nbest=N answers, per example,
lists of N outputs (and raw_outputs) and N scores, best first.

Binds 127.0.0.1 unless --host says otherwise; --port=0 picks a free port (printed at start). Concurrent
requests are batched together (up to --max_batch_size examples, waiting at most --batch_timeout_ms).
Ctrl-C or SIGTERM stops it.
"""

import logging
import signal
import sys

from t2t_repro.cli.common import (
    ArgumentParser, add_settings_flags, add_usr_dir_flag, ctranslate2_jobs, import_usr_dir, quiet_tensorflow,
    run_main, settings_from_flags,
)
from t2t_repro.serve.options import CTRANSLATE2, EngineSettings


def build_parser():
    from t2t_repro.serve.served_model import ServingLimits

    defaults = ServingLimits()
    parser = ArgumentParser(prog="t2t-repro-serve", description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--model_dir", help="the export directory holding version directories 1/, 2/, ... (the newest is served)")
    add("--model_name", default="model",
        help="the name in the URLs /v1/models/<name> (default: model, TF Serving's image default)")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1); 0.0.0.0 exposes the server to "
        "the network")
    add("--port", type=int, default=8501, help="port to listen on (default 8501, TF Serving's REST port); 0 picks a "
        "free one")
    add_settings_flags(parser, EngineSettings, exclude=("serving_precision",))  # fixed at export
    add("--max_batch_size", type=int, default=defaults.max_batch_size,
        help=f"examples per model call and per request (default {defaults.max_batch_size})")
    add("--batch_timeout_ms", type=float, default=defaults.batch_timeout_ms,
        help=f"how long a batch waits for more requests to join it (default {defaults.batch_timeout_ms:g})")
    add("--max_body_bytes", type=int, default=defaults.max_body_bytes,
        help=f"largest request body accepted (default {defaults.max_body_bytes})")
    add("--max_input_chars", type=int, default=defaults.max_input_chars,
        help=f"characters per text example (default {defaults.max_input_chars})")
    add("--max_input_tokens", type=int, default=defaults.max_input_tokens,
        help="source tokens per example, EOS included (default 0: the export's max_input_length)")
    add("--verbose", action="store_true", help="log every request")
    add_usr_dir_flag(parser)
    return parser


def _stop_on_sigterm(signum, frame):
    raise KeyboardInterrupt


def _main(argv):
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    engine = settings_from_flags(args, EngineSettings)
    from t2t_repro.errors import UserError

    if not args.model_dir:
        raise UserError("missing --model_dir")
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port={args.port}: must be between 0 and 65535")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if engine.engine == CTRANSLATE2:
        jobs = ctranslate2_jobs()
    else:
        quiet_tensorflow()
        from t2t_repro.run import jobs
    import_usr_dir(args.t2t_usr_dir)
    from t2t_repro.serve.served_model import ServingLimits
    from t2t_repro.serve.server import ModelServer

    limits = ServingLimits(
        max_batch_size=args.max_batch_size, batch_timeout_ms=args.batch_timeout_ms,
        max_body_bytes=args.max_body_bytes, max_input_chars=args.max_input_chars,
        max_input_tokens=args.max_input_tokens,
    )
    limits.check()
    if engine.engine == CTRANSLATE2:
        served = jobs.served_model(args.model_dir, limits, engine.threads, args.t2t_usr_dir)
    else:
        served = jobs.served_model(args.model_dir, limits, args.t2t_usr_dir)
    try:
        server = ModelServer(served, model_name=args.model_name, host=args.host, port=args.port)
    except OSError as error:
        served.close()
        raise UserError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    print(f"serving {served.version_dir} (version {served.version}, {engine.engine}) as {args.model_name!r} at "
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
