"""The page of t2t-repro-serve in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright,
against the real command line serving three models (a SavedModel, a 3-best CTranslate2 export, a parsing
model). What the page shows is checked against the REST API's answers and the visualizer's weights."""

import http.client
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from t2t_repro.model.transformer import ENCODER_DECODER_ATTENTION
from t2t_repro.serve.export_files import SAVED_MODEL_METADATA

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SENTENCE = "the cat sees the dog"
TIMEOUT_MS = 60_000

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed "
                               "(pip install playwright; the browser is Debian's chromium)")
pytest.importorskip("ctranslate2", reason="CTranslate2 is not installed (the [test] extra installs it)")
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's chromium (apt-get install chromium), as .ci/run does",
                allow_module_level=True)


@pytest.fixture(scope="module")
def model_dirs(exported_model, serving_run, tmp_path_factory):
    """{name: (export directory, engine)}: the SavedModel, a CTranslate2 export of the same run giving 3 best,
    and a copy of the SavedModel whose metadata names a parsing problem (its outputs are served as trees)."""
    from t2t_repro.run import ctranslate2_jobs

    base = tmp_path_factory.mktemp("page_models")
    ctranslate2_jobs.export(str(serving_run), str(base / "ct2"), extra_length=6, nbest=3)
    shutil.copytree(exported_model, base / "parse" / "1")
    metadata = base / "parse" / "1" / SAVED_MODEL_METADATA
    metadata.write_text(json.dumps(dict(json.loads(metadata.read_text()), problem="toy_parsing")))
    return {"ende": (exported_model.parent, "tensorflow"), "ende_ct2": (base / "ct2", "ctranslate2"),
            "parse": (base / "parse", "tensorflow")}


@pytest.fixture(scope="module")
def server(model_dirs, tmp_path_factory):
    """t2t-repro-serve serving the three models on a free port: (base URL, path of its stderr)."""
    flags = []
    for name, (directory, engine) in model_dirs.items():
        flags += [f"--model_dir={directory}", f"--model_name={name}", f"--engine={engine}"]
    log = tmp_path_factory.mktemp("page_server") / "stderr.txt"
    with open(log, "w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "t2t_repro.cli.serve", *flags, "--port=0"],
                                   stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="-1"))
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        url = None
        while url is None:
            line = lines.get(timeout=300)  # the models load, then the server says where it listens
            if line.startswith("the page to try them: "):
                url = line.split(": ", 1)[1].strip()
        yield url, log
    finally:
        process.terminate()
        process.wait(timeout=60)


def _predict(url, name, text, signature="serving_default"):
    """The REST API's prediction for one text."""
    host, port = re.match(r"http://([^:/]+):(\d+)/", url).groups()
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("POST", f"/v1/models/{name}:predict",
                           body=json.dumps({"signature_name": signature, "instances": [text]}))
        response = connection.getresponse()
        answer = json.loads(response.read())
    finally:
        connection.close()
    assert response.status == 200, answer
    return answer["predictions"][0]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


def _open(browser, url, width=1100, height=900, model=None):
    """A fresh page showing the server's page (and `model` picked)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url.rstrip("/"))
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    if model:
        page.get_by_label("Model", exact=True).select_option(model)
    return page


def _translate(page, text):
    """Types `text` into the box (keyboard only), presses Enter, waits for its answer; returns what is shown."""
    box = page.get_by_role("textbox", name="Text to translate")
    box.fill("")
    box.focus()
    page.keyboard.insert_text(text)
    page.keyboard.press("Enter")
    page.wait_for_function("text => document.getElementById('translation').dataset.source === text", arg=text)
    return page.text_content("#translation")


def test_the_page_shows_the_apis_answer_and_its_alternatives_can_be_chosen_and_copied(browser, server):
    url, _ = server
    page = _open(browser, url, model="ende_ct2")
    expected = _predict(url, "ende_ct2", SENTENCE)
    assert len(expected["outputs"]) == 3  # a 3-best export
    assert _translate(page, SENTENCE) == expected["outputs"][0]
    info = page.text_content("#model-info")
    assert all(part in info for part in ("wmt_ende", "en → de", "transformer_tiny", "CTranslate2", "Step1"))
    alternatives = page.locator("#alternatives label")
    assert alternatives.count() == 3
    assert [alternatives.nth(i).locator(".text").text_content() for i in range(3)] == expected["outputs"]
    alternatives.nth(2).locator("input").check()
    assert page.text_content("#translation") == expected["outputs"][2]
    page.get_by_role("button", name="Copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == expected["outputs"][2]
    # CTranslate2 gives no attention: the page says so, with no empty picture.
    assert "CTranslate2" in page.text_content("#attention-note")
    assert page.locator("#heatmap td").count() == 0 and not page.is_visible("#heatmap")


def test_the_heat_map_cells_are_the_visualizers_weights_for_the_sentence(browser, server, serving_run):
    from t2t_repro.run import jobs

    url, _ = server
    page = _open(browser, url, model="ende")
    assert _translate(page, SENTENCE) == _predict(url, "ende", SENTENCE)["outputs"]
    maps = jobs.attention_maps(str(serving_run), SENTENCE, extra_length=6)  # the export's decode settings
    assert page.text_content("#translation") == maps.translation
    for layer in range(1, maps.num_layers + 1):
        for head in range(1, maps.num_heads + 1):
            page.get_by_label("Layer", exact=True).select_option(str(layer))
            page.get_by_label("Head", exact=True).select_option(str(head))
            page.wait_for_selector(f"#heatmap[data-layer='{layer}'][data-head='{head}']")
            cells = page.eval_on_selector_all(
                "#heatmap tbody tr", "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => +c.dataset.weight))")
            expected = maps.weights[ENCODER_DECODER_ATTENTION][layer - 1][head - 1]
            np.testing.assert_allclose(np.array(cells), expected, atol=2e-5)
    assert page.locator("#heatmap tbody th").all_text_contents() == maps.output_tokens
    assert page.locator("#heatmap thead th").all_text_contents()[1:] == maps.source_tokens


def test_a_long_paste_and_an_empty_box_give_the_pages_message_and_the_server_goes_on(browser, server):
    url, log = server
    page = _open(browser, url, model="ende")
    box = page.get_by_role("textbox", name="Text to translate")
    box.fill("the cat sees the dog " * 476 + "runs")  # 10,000 characters, translated as typed
    page.wait_for_selector("#message.error")
    assert page.text_content("#message") == "example 0 has 10000 characters: at most 4096"  # the API's line
    assert page.text_content("#counter") == "10,000 / 4,096 characters" and box.get_attribute("aria-invalid") == "true"
    assert page.text_content("#translation") == ""
    box.fill("")
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('message').textContent.startsWith('Nothing to translate')")
    assert _translate(page, "a small dog") == _predict(url, "ende", "a small dog")["outputs"]  # still serving
    assert not re.search(r"Traceback|ERROR|-> 5\d\d", log.read_text()), log.read_text()


def test_a_superseded_request_is_never_shown_over_a_newer_one(browser, server):
    url, _ = server
    page = _open(browser, url, model="ende")
    held = []
    page.route("**/v1/models/ende:predict",
               lambda route: held.append(route) if "the old tree" in route.request.post_data else route.continue_())
    box = page.get_by_role("textbox", name="Text to translate")
    box.fill("the old tree")
    page.keyboard.press("Enter")
    page.wait_for_function("() => true")  # the held request is on its way
    newer = _translate(page, SENTENCE)
    assert held, "the first request never reached the server"
    late = _predict(url, "ende", "the old tree", "attention")
    try:  # the first answer arrives after the newer one: the page dropped (or cancelled) it
        held[0].fulfill(status=200, content_type="application/json", body=json.dumps({"predictions": [late]}))
    except Exception:  # noqa: BLE001 - the page cancelled the request: nothing left to answer
        pass
    page.wait_for_timeout(500)
    assert page.text_content("#translation") == newer and newer != late["outputs"]
    assert page.eval_on_selector("#translation", "e => e.dataset.source") == SENTENCE


def test_a_parsing_model_draws_its_tree_beside_the_bracketed_line(browser, server):
    url, _ = server
    page = _open(browser, url, model="parse")
    expected = _predict(url, "parse", SENTENCE)
    assert _translate(page, SENTENCE) == expected["outputs"]
    page.wait_for_selector("#tree svg")
    assert page.text_content("#bracketed") == expected["outputs"]
    assert page.locator("#tree svg text.leaf").all_text_contents() == SENTENCE.split()
    assert page.locator("#tree svg line").count() == page.locator("#tree svg text").count() - 1  # a tree's edges


def test_the_page_fits_a_phone_and_every_control_is_labelled(browser, server):
    url, _ = server
    page = _open(browser, url, width=375, height=740, model="ende")
    _translate(page, SENTENCE)
    assert page.get_by_role("textbox", name="Text to translate").count() == 1
    for label in ("Model", "Show attention", "Layer", "Head"):
        assert page.get_by_label(label, exact=True).count() == 1, label
    for name in ("Translate", "Copy"):
        assert page.get_by_role("button", name=name).is_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
