"""Interactive decoding: t2t-repro-decoder without --decode_from_file answers each line of standard input on
standard output as soon as it is read (tensor2tensor's --decode_interactive), with either engine."""

import os
import queue
import subprocess
import sys
import threading

import pytest

from t2t_repro.cli import decoder
from t2t_repro.cli.common import run_main

EXTRA_LENGTH = 3
_ANSWER_TIMEOUT_S = 240


def _line_reader(stream):
    """A queue that a thread fills with the lines of `stream` as they come (then None at its end)."""
    lines = queue.Queue()

    def read():
        for line in iter(stream.readline, b""):
            lines.put(line.decode("utf-8").rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


@pytest.fixture(scope="module")
def ct2_export_dir(serving_run, tmp_path_factory):
    from t2t_repro.run import ctranslate2_jobs

    return ctranslate2_jobs.export(str(serving_run), str(tmp_path_factory.mktemp("ct2")), extra_length=EXTRA_LENGTH)


@pytest.mark.parametrize("engine", ["tensorflow", "ctranslate2"])
def test_each_line_is_answered_before_the_next_is_sent(engine, serving_run, ct2_export_dir, parallel_text_dir,
                                                        tmp_path):
    lines = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:3]
    lines = [lines[0], "", "  " + lines[1], lines[2]]
    flags = ([f"--output_dir={serving_run}", f"--extra_length={EXTRA_LENGTH}"] if engine == "tensorflow"
             else ["--engine=ctranslate2", f"--model_dir={ct2_export_dir}"])
    # What the same decoder writes for these lines as a file.
    source, target = tmp_path / "source.en", tmp_path / "target.de"
    source.write_bytes(b"\n".join(line.encode("utf-8") for line in lines) + b"\n")
    assert run_main(decoder._main, [*flags, f"--decode_from_file={source}", f"--decode_to_file={target}",
                                    "--nbest=2", "--quiet"]) == 0
    expected = target.read_text(encoding="utf-8").splitlines()
    assert len(expected) == 2 * len(lines) and expected[2:4] == ["0.000000\t", "0.000000\t"]

    process = subprocess.Popen(
        [sys.executable, "-m", "t2t_repro.cli.decoder", *flags, "--nbest=2"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    try:
        answered = _line_reader(process.stdout)
        answers = []
        for line in lines:
            # The pipe stays open: an answer that came only at the end of input would never arrive in time.
            process.stdin.write(line.encode("utf-8") + b"\n")
            process.stdin.flush()
            answers += [answered.get(timeout=_ANSWER_TIMEOUT_S) for _ in range(2)]
        # The same n-best lists; scores to float32 rounding (a file's lines are decoded in batches).
        split = [[line.split("\t", 1) for line in lines] for lines in (answers, expected)]
        assert [text for _, text in split[0]] == [text for _, text in split[1]]
        assert all(abs(float(a) - float(b)) < 1e-4 for (a, _), (b, _) in zip(*split))
        process.stdin.close()
        assert process.wait(timeout=60) == 0
        assert answered.get(timeout=10) is None
        stderr = process.stderr.read().decode("utf-8")
        assert "standard input" in stderr and "Traceback" not in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
