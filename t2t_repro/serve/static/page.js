// The page of t2t-repro-serve: translates through the server's REST API as the user types, shows the n-best,
// the encoder-decoder attention as a heat map and a parsing model's trees. Plain JavaScript, no dependency.
"use strict";

const DEBOUNCE_MS = 350;
const $ = (id) => document.getElementById(id);
const state = { models: [], model: null, answer: null, chosen: 0, requests: 0, controller: null, timer: null };

function element(tag, attributes = {}, text = null) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  if (text !== null) node.textContent = text;
  return node;
}

function setMessage(text, isError = false) {
  const message = $("message");
  message.textContent = text;
  message.classList.toggle("error", isError);
  message.setAttribute("role", isError ? "alert" : "status");
}

// The model: its card from GET /page/models, shown in the header.

const ENGINES = { tensorflow: "TensorFlow", ctranslate2: "CTranslate2" };

function showModelInfo(model) {
  const info = $("model-info");
  info.replaceChildren();
  const languages = model.languages.source || model.languages.target
    ? `${model.languages.source || "?"} → ${model.languages.target || "?"}` : "not recorded";
  const decode = model.decode;
  const rows = [
    ["Problem", model.problem || "unknown"], ["Languages", languages],
    ["Hparams", model.hparams_set || "unknown"], ["Step", model.step ?? "unknown"],
    ["Engine", `${ENGINES[model.engine] || model.engine} (${model.weights})`],
    ["Beam", `${decode.beam_size ?? "?"}, ${model.nbest} best`], ["Version", model.version],
  ];
  for (const [name, value] of rows) {
    const row = element("div");
    row.append(element("dt", {}, name), element("dd", {}, String(value)));
    if (name === "Hparams" && model.hparams_overrides) row.title = model.hparams_overrides;
    info.append(row);
  }
  info.dataset.engine = model.engine;
}

function selectModel(name) {
  state.model = state.models.find((model) => model.name === name) || state.models[0];
  showModelInfo(state.model);
  const checkbox = $("show-attention");
  checkbox.disabled = !state.model.attention;
  updateCounter();
  clearOutputs();
  showAttentionNote();
  if ($("source").value.trim()) translateNow();
}

async function loadModels() {
  try {
    const response = await fetch("/page/models");
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    state.models = body.models;
  } catch (error) {
    setMessage(`Cannot read the served models: ${error.message}`, true);
    return;
  }
  const picker = $("model-picker");
  for (const model of state.models) picker.append(element("option", { value: model.name }, model.name));
  $("picker-box").hidden = state.models.length < 2;
  picker.addEventListener("change", () => selectModel(picker.value));
  selectModel(state.models[0].name);
  document.body.dataset.ready = "true";
}

// Typing: the counter, the debounced request, a superseded request cancelled.

function updateCounter() {
  const length = $("source").value.length;
  const limit = state.model ? state.model.max_input_chars : 0;
  const counter = $("counter");
  counter.textContent = `${length.toLocaleString("en")} / ${limit.toLocaleString("en")} characters`;
  counter.classList.toggle("over", length > limit);
  $("source").setAttribute("aria-invalid", String(length > limit));
}

function cancelPending() {
  clearTimeout(state.timer);
  if (state.controller) state.controller.abort();
  state.controller = null;
}

function translateSoon() {
  updateCounter();
  clearTimeout(state.timer);
  state.timer = setTimeout(translateNow, DEBOUNCE_MS);
}

async function translateNow() {
  cancelPending();
  const text = $("source").value;
  const model = state.model;
  if (!model) return;
  if (!text.trim()) {
    clearOutputs();
    setMessage("Nothing to translate: type a sentence.");
    return;
  }
  const withAttention = model.attention && $("show-attention").checked;
  const request = ++state.requests;
  const controller = new AbortController();
  state.controller = controller;
  document.body.dataset.busy = "true";
  setMessage("Translating…");
  let status;
  let body;
  try {
    const response = await fetch(`/v1/models/${encodeURIComponent(model.name)}:predict`, {
      method: "POST", headers: { "Content-Type": "application/json" }, signal: controller.signal,
      body: JSON.stringify({ signature_name: withAttention ? "attention" : "serving_default", instances: [text] }),
    });
    status = response.status;
    body = await response.json().catch(() => ({ error: `the server answered ${status} without JSON` }));
  } catch (error) {
    if (error.name === "AbortError" || request !== state.requests) return;
    body = { error: `the server did not answer (${error.message})` };
  }
  if (request !== state.requests) return; // a newer request owns the screen
  state.controller = null;
  document.body.dataset.busy = "false";
  if (status !== 200 || body.error) {
    clearOutputs();
    setMessage(body.error || `HTTP ${status}`, true);
    return;
  }
  setMessage("");
  showAnswer(hypotheses(body.predictions[0]), text, withAttention);
}

// The answer: one entry per hypothesis, best first (a 1-best export answers single values).

function hypotheses(prediction) {
  const list = (value) => (Array.isArray(prediction.outputs) ? value : [value]);
  return {
    outputs: list(prediction.outputs), scores: list(prediction.scores),
    raw: list(prediction.raw_outputs ?? prediction.outputs),
    sourcePieces: prediction.source_pieces || null,
    targetPieces: prediction.target_pieces ? list(prediction.target_pieces) : null,
    attention: prediction.attention ? list(prediction.attention) : null,
  };
}

function clearOutputs() {
  state.answer = null;
  $("translation").textContent = "";
  $("translation").dataset.source = "";
  $("score").textContent = "";
  $("copy").disabled = true;
  $("alternatives-box").hidden = true;
  $("alternatives").replaceChildren();
  $("tree-box").hidden = true;
  $("heatmap").replaceChildren();
  showAttentionNote();
}

function showAnswer(answer, text, withAttention) {
  state.answer = { ...answer, text, withAttention };
  const alternatives = $("alternatives");
  alternatives.replaceChildren();
  answer.outputs.forEach((output, index) => {
    const label = element("label", { class: "alternative" });
    const radio = element("input", { type: "radio", name: "alternative", value: String(index) });
    radio.addEventListener("change", () => choose(index));
    label.append(radio, element("span", { class: "text" }, output || "(empty)"),
                 element("span", { class: "score" }, formatScore(answer.scores[index])));
    alternatives.append(label);
  });
  $("alternatives-box").hidden = answer.outputs.length < 2;
  choose(0);
}

function formatScore(score) {
  return score === null || score === undefined ? "no score" : Number(score).toFixed(3);
}

function choose(index) {
  const answer = state.answer;
  state.chosen = index;
  const radio = document.querySelector(`#alternatives input[value="${index}"]`);
  if (radio) radio.checked = true;
  $("translation").textContent = answer.outputs[index];
  $("translation").dataset.source = answer.text;
  $("translation").dataset.hypothesis = String(index);
  $("score").textContent = `score ${formatScore(answer.scores[index])} (log-probability / length penalty)`;
  $("copy").disabled = false;
  showTree(answer.outputs[index], answer.raw[index]);
  showAttention();
}

async function copyOutput() {
  const text = $("translation").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch (error) {
    const scratch = element("textarea");
    scratch.value = text;
    document.body.append(scratch);
    scratch.select();
    document.execCommand("copy");
    scratch.remove();
  }
  setMessage("Copied.");
}

// A parsing model's output: the Penn Treebank tree drawn, its bracketed line beside it.

function parseTree(text) {
  const tokens = text.match(/\(|\)|[^\s()]+/g) || [];
  let position = 0;
  function node() {
    if (tokens[position] !== "(") return null;
    position += 1;
    const label = tokens[position] !== "(" && tokens[position] !== ")" ? tokens[position++] : "";
    const children = [];
    while (position < tokens.length && tokens[position] !== ")") {
      if (tokens[position] === "(") {
        const child = node();
        if (!child) return null;
        children.push(child);
      } else {
        children.push({ label: tokens[position++], children: [], leaf: true });
      }
    }
    if (tokens[position] !== ")") return null;
    position += 1;
    return { label, children };
  }
  const tree = node();
  return tree && position === tokens.length && tree.children.length ? tree : null;
}

const SVG = "http://www.w3.org/2000/svg";

function svgElement(tag, attributes, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

function drawTree(tree) {
  const rowHeight = 46;
  let cursor = 12;
  let depth = 0;
  function place(node, level) {
    depth = Math.max(depth, level);
    node.level = level;
    if (node.leaf || !node.children.length) {
      const width = Math.max(28, node.label.length * 8);
      node.x = cursor + width / 2;
      cursor += width + 10;
    } else {
      node.children.forEach((child) => place(child, level + 1));
      node.x = (node.children[0].x + node.children[node.children.length - 1].x) / 2;
    }
  }
  place(tree, 0);
  const height = (depth + 1) * rowHeight;
  const svg = svgElement("svg", { width: cursor + 12, height, role: "img", "aria-label": "The parse tree drawn" });
  function draw(node) {
    const y = node.leaf ? height - 14 : node.level * rowHeight + 18;
    for (const child of node.children) {
      const childY = child.leaf ? height - 14 : child.level * rowHeight + 18;
      svg.append(svgElement("line", { x1: node.x, y1: y + 5, x2: child.x, y2: childY - 14 }));
      draw(child);
    }
    svg.append(svgElement("text", { x: node.x, y, "text-anchor": "middle", class: node.leaf ? "leaf" : "label" },
                          node.label || "·"));
  }
  draw(tree);
  return svg;
}

function showTree(output, raw) {
  const tree = output !== raw ? parseTree(output) : null;
  $("tree-box").hidden = !tree;
  $("tree").replaceChildren(...(tree ? [drawTree(tree)] : []));
  $("bracketed").textContent = tree ? output : "";
}

// The heat map of the chosen hypothesis: rows target pieces, columns source pieces, one layer and head.

function showAttentionNote() {
  const model = state.model;
  const box = $("attention-box");
  const available = model && model.attention;
  box.hidden = !model || (available && !(state.answer && state.answer.withAttention));
  $("attention-note").textContent = available ? "" : (model ? model.attention_note : "");
  $("attention-controls").hidden = !available;
  $("heatmap").hidden = !available;
  $("heatmap-caption").hidden = !available;
}

function fillSelect(select, count) {
  const previous = Number(select.value);
  select.replaceChildren();
  for (let number = 1; number <= count; number += 1) {
    select.append(element("option", { value: String(number) }, `${number} of ${count}`));
  }
  select.value = String(previous >= 1 && previous <= count ? previous : select === $("layer") ? count : 1);
}

function showAttention() {
  showAttentionNote();
  const answer = state.answer;
  if (!answer || !answer.attention) return;
  const weights = answer.attention[state.chosen];
  fillSelect($("layer"), weights.length);
  fillSelect($("head"), weights[0].length);
  drawHeatmap();
}

function drawHeatmap() {
  const answer = state.answer;
  if (!answer || !answer.attention) return;
  const layer = Number($("layer").value);
  const head = Number($("head").value);
  const matrix = answer.attention[state.chosen][layer - 1][head - 1];
  const sources = answer.sourcePieces;
  const targets = answer.targetPieces[state.chosen];
  const table = $("heatmap");
  table.dataset.layer = String(layer);
  table.dataset.head = String(head);
  const headRow = element("tr");
  headRow.append(element("th", { scope: "col" }, ""));
  for (const piece of sources) headRow.append(element("th", { scope: "col" }, piece));
  const thead = element("thead");
  thead.append(headRow);
  const tbody = element("tbody");
  targets.forEach((target, row) => {
    const tr = element("tr");
    tr.append(element("th", { scope: "row" }, target));
    sources.forEach((source, column) => {
      const weight = matrix[row][column];
      const description = `${target} → ${source}: ${weight.toFixed(3)}`;
      const cell = element("td", { "data-weight": String(weight), title: description, "aria-label": description });
      cell.style.backgroundColor = `hsl(215, 75%, ${Math.round(98 - 68 * weight)}%)`;
      tr.append(cell);
    });
    tbody.append(tr);
  });
  table.replaceChildren(thead, tbody);
}

// Wiring.

document.addEventListener("DOMContentLoaded", () => {
  const source = $("source");
  source.addEventListener("input", translateSoon);
  source.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      translateNow();
    }
  });
  $("translate").addEventListener("click", translateNow);
  $("copy").addEventListener("click", copyOutput);
  $("show-attention").addEventListener("change", translateNow);
  $("layer").addEventListener("change", drawHeatmap);
  $("head").addEventListener("change", drawHeatmap);
  loadModels();
});
