"""t2t-repro-serve: serves the newest exported model version over TensorFlow Serving's REST API.

    t2t-repro-serve --model_dir=runs/wmt_ende/export --model_name=wmt_ende
    t2t-repro-serve --engine=ctranslate2 --model_dir=runs/wmt_ende/export_ctranslate2 --model_name=wmt_ende
    t2t-repro-serve --model_dir=A/export --model_name=ende --model_dir=A/export_ctranslate2 --model_name=ende_ct2 \
        --engine=tensorflow --engine=ctranslate2              # several models: one name (and engine) each
    curl -d '{"instances": ["A sentence."]}' http://127.0.0.1:8501/v1/models/wmt_ende:predict

The tensorflow engine serves SavedModel exports, the ctranslate2 engine CTranslate2 exports
(t2t-repro-exporter --format=ctranslate2; `pip install "t2t-repro[ctranslate2]"`), both with the same
signatures and answers. For a parsing model, "outputs" are Penn Treebank trees with the source words in
place and "raw_outputs" the decoded linearised trees. An export made with --nbest=N answers, per example,
lists of N outputs (and raw_outputs) and N scores, best first.

The same port serves a page to try the models in a browser at http://127.0.0.1:8501/ (translate as you type,
the n-best alternatives, the encoder-decoder attention, parse trees drawn).

Binds 127.0.0.1 unless --host says otherwise; --port=0 picks a free port (printed at start). Concurrent
requests are batched together (up to --max_batch_size examples, waiting at most --batch_timeout_ms).
Ctrl-C or SIGTERM stops it.
"""

import logging
import signal
import sys

from t2t_repro.cli.common import (
    ArgumentParser, add_settings_flags, add_usr_dir_flag, ctranslate2_jobs, import_usr_dir, quiet_tensorflow,
    run_main,
)
from t2t_repro.serve.options import CTRANSLATE2, TENSORFLOW, EngineSettings


def build_parser():
    from t2t_repro.serve.served_model import ServingLimits

    defaults = ServingLimits()
    parser = ArgumentParser(prog="t2t-repro-serve", description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--model_dir", action="append", default=[],
        help="the export directory holding version directories 1/, 2/, ... (the newest is served); repeat it to "
        "serve several models, each with its --model_name")
    add("--model_name", action="append", default=[],
        help="the name in the URLs /v1/models/<name> (default: model, TF Serving's image default); one per "
        "--model_dir when there are several")
    add("--engine", action="append", default=[], choices=(TENSORFLOW, CTRANSLATE2),
        help="tensorflow: a SavedModel export; ctranslate2: a CTranslate2 export (t2t-repro-exporter "
        "--format=ctranslate2) (default tensorflow); once for every model, or once per --model_dir")
    add("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1); 0.0.0.0 exposes the server to "
        "the network")
    add("--port", type=int, default=8501, help="port to listen on (default 8501, TF Serving's REST port); 0 picks a "
        "free one")
    add_settings_flags(parser, EngineSettings, exclude=("engine", "serving_precision"))  # precision: fixed at export
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


def _models(args):
    """[(name, model_dir, EngineSettings)] of the flags: --model_dir, --model_name and --engine paired in order."""
    from t2t_repro.errors import UserError

    dirs, names, engines = args.model_dir, args.model_name, args.engine
    if not dirs:
        raise UserError("missing --model_dir")
    if not names and len(dirs) == 1:
        names = ["model"]
    if len(names) != len(dirs):
        raise UserError(f"{len(dirs)} --model_dir and {len(names)} --model_name: give one name per model directory")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise UserError(f"--model_name={duplicates[0]} is given twice: each model needs its own name")
    if len(engines) not in (0, 1, len(dirs)):
        raise UserError(f"{len(engines)} --engine for {len(dirs)} models: give one for all, or one per --model_dir")
    engines = engines * len(dirs) if len(engines) == 1 else engines or [TENSORFLOW] * len(dirs)
    if args.threads and CTRANSLATE2 not in engines:
        raise UserError(f"--threads={args.threads} applies to --engine={CTRANSLATE2} only")
    return [(name, directory, EngineSettings(engine=engine, threads=args.threads or 0 if engine == CTRANSLATE2 else 0))
            for name, directory, engine in zip(names, dirs, engines)]


def _problem_languages(metadata):
    """{"source": ..., "target": ...}: the language codes of the export's problem, where it names them."""
    from t2t_repro import catalog
    from t2t_repro.errors import UserError

    try:
        problem = catalog.get_problem(metadata["problem"], metadata.get("problem_overrides", ""))
    except (KeyError, UserError):
        return {}
    sides = {side: ", ".join(problem.vocabulary_languages(side)) for side in ("source", "target")}
    return {side: languages for side, languages in sides.items() if languages}


def _load(models, limits, usr_dir):
    """{name: ServedModel} of the models; those loaded already are closed if a later one fails."""
    served = {}
    try:
        for name, model_dir, engine in models:
            if engine.engine == CTRANSLATE2:
                model = ctranslate2_jobs().served_model(model_dir, limits, engine.threads, usr_dir)
            else:
                quiet_tensorflow()
                from t2t_repro.run import jobs

                model = jobs.served_model(model_dir, limits, usr_dir)
            model.languages = _problem_languages(model.export_metadata)
            served[name] = model
    except BaseException:
        for model in served.values():
            model.close()
        raise
    return served


def _main(argv):
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from t2t_repro.errors import UserError

    models = _models(args)
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port={args.port}: must be between 0 and 65535")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_tensorflow()
    import_usr_dir(args.t2t_usr_dir)
    from t2t_repro.serve.served_model import ServingLimits
    from t2t_repro.serve.server import ModelServer

    limits = ServingLimits(
        max_batch_size=args.max_batch_size, batch_timeout_ms=args.batch_timeout_ms,
        max_body_bytes=args.max_body_bytes, max_input_chars=args.max_input_chars,
        max_input_tokens=args.max_input_tokens,
    )
    limits.check()
    served = _load(models, limits, args.t2t_usr_dir)
    try:
        server = ModelServer(served, host=args.host, port=args.port)
    except OSError as error:
        for model in served.values():
            model.close()
        raise UserError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    for (name, _, engine), model in zip(models, served.values()):
        print(f"serving {model.version_dir} (version {model.version}, {engine.engine}) as {name!r} at "
              f"{server.url}/v1/models/{name}", flush=True)
    print(f"the page to try {'them' if len(served) > 1 else 'it'}: {server.url}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr, flush=True)
    finally:
        server.server_close()
        for model in served.values():
            model.close()
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
