// The translation page: calls the server's HTTP/JSON API (same origin) and draws the
// alignment of the chosen translation as word links and an attention heatmap.
// Plain JavaScript, no build step, nothing loaded from elsewhere.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const form = $("form");
  const source = $("source");
  const target = $("target");
  const documentBox = $("document");
  const documentFormat = $("document-format");
  const documentOutput = $("document-output");
  const glossaryBox = $("glossary");
  const glossaryId = $("glossary-id");
  const beamSize = $("beam-size");
  const nBest = $("n-best");
  const tokenInput = $("token");
  const submit = $("submit");
  const statusLine = $("status");
  const errorBox = $("error");
  const sentenceList = $("sentences");
  const links = $("links");
  const svg = links.querySelector("svg");
  const linkStatus = $("link-status");
  const heatmap = $("heatmap");
  const fileForm = $("file-form");
  const fileInput = $("file");
  const fileStatus = $("file-status");
  const fileLink = $("file-link");
  const SVG_NS = "http://www.w3.org/2000/svg";
  // ColorBrewer "Blues": weight 0 is the lightest, weight 1 the darkest.
  const SCALE = [[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];

  let results = [];  // [{source, translation}] of the last answer (a document's sentences)
  let view = null;   // the alignment being shown: words, links and their elements

  // --- helpers ---------------------------------------------------------------------------

  function el(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    node.append(...children);
    return node;
  }

  function colour(weight) {
    const x = Math.min(Math.max(weight, 0), 1) * (SCALE.length - 1);
    const i = Math.min(Math.floor(x), SCALE.length - 2);
    const t = x - i;
    const rgb = SCALE[i].map((c, k) => Math.round(c + t * (SCALE[i + 1][k] - c)));
    return `rgb(${rgb.join(", ")})`;
  }

  function mode() {
    return form.elements.mode.value;
  }

  function setState(state) {
    document.body.dataset.state = state;
  }

  function showError(message, field) {
    errorBox.textContent = message;
    if (field) field.focus();
  }

  // The bearer token, if one was entered, as request headers.
  function authorization() {
    const token = tokenInput.value.trim();
    return token ? { Authorization: `Bearer ${token}` } : {};
  }

  // The error of an answer that is not OK: the server's JSON error, else the HTTP status.
  function failure(response, answer) {
    const error = new Error(answer && answer.message
      ? `${answer.code}: ${answer.message}` : `HTTP ${response.status} ${response.statusText}`);
    error.status = response.status;
    return error;
  }

  async function call(method, path, body) {
    const headers = { Accept: "application/json", ...authorization() };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    let answer = null;
    try {
      answer = await response.json();
    } catch (ignored) {
      // Not JSON (e.g. a proxy's error page): reported by status below.
    }
    if (!response.ok) throw failure(response, answer);
    return answer;
  }

  // `text` with each applied term's [start, end) (code points, as the server counts) in a
  // <mark class="term">; `offset` is where `text` starts in what the spans count.
  function marked(text, terms, startKey, endKey, offset = 0) {
    const chars = Array.from(text);
    const nodes = [];
    let at = 0;
    for (const term of [...terms].sort((a, b) => a[startKey] - b[startKey])) {
      const [start, end] = [term[startKey] - offset, term[endKey] - offset];
      if (start < at || start >= end || end > chars.length) continue;
      nodes.push(chars.slice(at, start).join(""));
      nodes.push(el("mark", { class: "term", title: `glossary: ${term.source} → ${term.target}` },
                    chars.slice(start, end).join("")));
      at = end;
    }
    nodes.push(chars.slice(at).join(""));
    return nodes;
  }

  function needToken() {
    $("token-field").hidden = false;
    tokenInput.required = true;
  }

  // --- the model and the form ------------------------------------------------------------

  async function loadModel() {
    const info = $("model-info");
    try {
      const model = await call("GET", "/v1/model");
      const attention = model.attention ? `, ${model.attention} attention` : "";
      info.textContent = `Model ${model.name}, version ${model.version}${attention}.`;
      beamSize.max = model.limits.maxBeamSize;
      // The model's default decoding (e.g. greedy for a distilled model) starts the form.
      const preferred = model.defaultOptions && model.defaultOptions.beamSize;
      if (preferred) beamSize.value = preferred;
      syncNBest();
      loadGlossaries();
      if (document.body.dataset.state === "loading") setState("ready");
    } catch (error) {
      if (error.status === 401) {
        needToken();
        info.textContent = "This server needs an access token: enter it below.";
      } else if (error.status === 503) {
        info.textContent = "The model is still loading; this page asks again in a moment.";
        setTimeout(loadModel, 2000);
      } else {
        info.textContent = `Could not ask the server about its model (${error.message}).`;
      }
      if (document.body.dataset.state === "loading") setState("ready");
    }
  }

  // The server's named glossaries, if it has any, in a select beside the glossary box.
  async function loadGlossaries() {
    try {
      const { glossaries } = await call("GET", "/v1/glossaries");
      glossaryId.replaceChildren(el("option", { value: "" }, "none"), ...glossaries.map(
        (g) => el("option", { value: g.name }, `${g.name} (${plural(g.entries, "term")})`)));
      $("glossary-id-field").hidden = !glossaries.length;
    } catch (ignored) {
      // An older server without glossaries: the box alone.
    }
  }

  // The request's `glossary` from the box and the select: undefined for none, null (and
  // the error shown) for a line that is not `English<TAB>French`.
  function glossaryRequest() {
    const entries = [];
    const lines = glossaryBox.value.split("\n");
    for (let i = 0; i < lines.length; i += 1) {
      if (!lines[i].trim() || lines[i].trim().startsWith("#")) continue;
      const cut = lines[i].includes("\t") ? lines[i].indexOf("\t") : lines[i].indexOf("=");
      const [english, french] = cut < 0 ? [lines[i].trim(), ""]
        : [lines[i].slice(0, cut).trim(), lines[i].slice(cut + 1).trim()];
      if (!english || !french) {
        showError(`Glossary line ${i + 1}: write the English term, a tab (or =), then the ` +
                  "French term.", glossaryBox);
        return null;
      }
      entries.push({ source: english, target: french });
    }
    const name = glossaryId.value;
    if (!entries.length && !name) return undefined;
    return name ? { entries, glossaryId: name } : { entries };
  }

  function syncNBest() {
    const beam = Number(beamSize.value);
    nBest.max = Number.isInteger(beam) && beam >= 1 ? beam : 1;
    if (Number(nBest.value) > Number(nBest.max)) nBest.value = nBest.max;
  }

  function syncMode() {
    const align = mode() === "align";
    const documentMode = mode() === "document";
    $("target-field").hidden = !align;
    target.required = align;
    $("source").parentElement.hidden = documentMode;
    source.required = !documentMode;
    $("document-field").hidden = !documentMode;
    documentBox.required = documentMode;
    $("decode-options").hidden = align;
    $("glossary-field").hidden = align;
    submit.textContent = align ? "Align" : "Translate";
  }

  function decodeOptions() {
    const beam = integerIn(beamSize, "Beam size");
    const best = beam === null ? null : integerIn(nBest, "N-best");
    return best === null ? null : { beamSize: beam, nBest: best };
  }

  function integerIn(input, label) {
    const value = Number(input.value);
    const min = Number(input.min);
    const max = Number(input.max);
    if (!Number.isInteger(value) || value < min || value > max) {
      showError(`${label} must be a whole number from ${min} to ${max}.`, input);
      return null;
    }
    return value;
  }

  function buildRequest() {
    const lines = source.value.split("\n").map((line) => line.trim());
    if (mode() === "document") {
      const text = documentBox.value;
      if (!text.trim()) return showError("Type an English document first.", documentBox);
      const options = decodeOptions();
      if (options === null) return null;
      const glossary = glossaryRequest();
      if (glossary === null) return null;
      const format = `TEXT_FORMAT_${documentFormat.value.toUpperCase()}`;
      return { path: "/v1/translate", document: text,
               body: { sentences: [text], format, options, glossary } };
    }
    if (mode() === "translate") {
      const sentences = lines.filter(Boolean);
      if (!sentences.length) return showError("Type an English sentence first.", source);
      const options = decodeOptions();
      if (options === null) return null;
      const glossary = glossaryRequest();
      if (glossary === null) return null;
      return { path: "/v1/translate", sources: sentences, body: { sentences, options, glossary } };
    }
    const targets = target.value.split("\n").map((line) => line.trim());
    const sources = [];
    const given = [];
    for (let i = 0; i < Math.max(lines.length, targets.length); i += 1) {
      const [english, french] = [lines[i] || "", targets[i] || ""];
      if (!english && !french) continue;
      if (!english || !french) {
        return showError(`Line ${i + 1}: give both the English sentence and its French ` +
                         "translation, one pair per line.", english ? target : source);
      }
      sources.push(english);
      given.push(french);
    }
    if (!sources.length) return showError("Type an English sentence and its translation.", source);
    return { path: "/v1/align", sources, body: { sources, targets: given } };
  }

  async function onSubmit(event) {
    event.preventDefault();
    errorBox.textContent = "";
    const request = buildRequest();
    if (!request) return;
    const align = mode() === "align";
    submit.disabled = true;
    setState("busy");
    statusLine.textContent = align ? "Aligning…" : "Translating…";
    const started = performance.now();
    try {
      const answer = await call("POST", request.path, request.body);
      let count;
      if (request.document !== undefined) {
        const translated = answer.documents[0];
        results = translated.sentences.map((s) => ({ source: s.sentence,
                                                     translation: s.translation }));
        showDocument(translated);
        count = `1 document of ${plural(results.length, "sentence")}`;
      } else {
        const translations = align ? answer.alignments : answer.translations;
        results = translations.map((translation, i) => ({ source: request.sources[i],
                                                          translation }));
        $("document-result").hidden = true;
        count = plural(results.length, "sentence");
      }
      const ms = Math.round(performance.now() - started);
      statusLine.textContent = `${align ? "Aligned" : "Translated"} ${count} in ${ms} ms ` +
                               `(model version ${answer.modelVersion}).`;
      showResults(align);
      if (results.length) {
        choose(0, 0);
      } else {
        $("alignment").hidden = true;
      }
      setState("done");
      if (!$("model-info").textContent.startsWith("Model")) loadModel();
    } catch (error) {
      if (error.status === 401) needToken();
      statusLine.textContent = "";
      showError(error.message, error.status === 401 ? tokenInput : null);
      setState("error");
    } finally {
      submit.disabled = false;
    }
  }

  // --- results ---------------------------------------------------------------------------

  function plural(count, noun) {
    return `${count} ${noun}${count === 1 ? "" : "s"}`;
  }

  // The translated document as text, each sentence's translation a span that chooses it.
  // Offsets count code points (the server's), so the text is sliced as an array of them.
  function showDocument(translated) {
    const chars = Array.from(translated.text);
    const terms = translated.appliedTerms || [];
    const pieces = [];
    let at = 0;
    translated.sentences.forEach((sentence, i) => {
      const [start, end] = [sentence.targetStart, sentence.targetEnd];
      pieces.push(chars.slice(at, start).join(""));
      const inside = terms.filter((t) => t.targetStart >= start && t.targetEnd <= end);
      const span = el("span", { class: "sentence", "data-sentence": i,
                                title: `Sentence ${i + 1}: show its alignment` },
                      ...marked(chars.slice(start, end).join(""), inside, "targetStart",
                                "targetEnd", start));
      span.addEventListener("click", () => choose(i, 0));
      pieces.push(span);
      at = end;
    });
    pieces.push(chars.slice(at).join(""));
    documentOutput.replaceChildren(...pieces);
    $("document-result").hidden = false;
  }

  function showResults(align) {
    $("results-heading").textContent = align ? "Alignments" : "Translations";
    sentenceList.replaceChildren(...results.map((result, i) => {
      const hypotheses = result.translation.hypotheses.map((hypothesis, k) => {
        const text = hypothesis.text
          ? marked(hypothesis.text, hypothesis.appliedTerms || [], "targetStart", "targetEnd")
          : ["(empty)"];
        const button = el("button", { type: "button", class: "hyp", "aria-pressed": "false",
                                      "data-sentence": i, "data-hypothesis": k },
          el("span", { class: "text", lang: "fr" }, ...text),
          el("span", { class: "score" }, `score ${hypothesis.score.toFixed(3)}`));
        button.addEventListener("click", () => choose(i, k));
        return el("li", {}, button);
      });
      const best = result.translation.hypotheses[0];
      const terms = (best && best.appliedTerms) || [];
      return el("li", {}, el("p", { class: "source-text", lang: "en" },
                             ...marked(result.source, terms, "sourceStart", "sourceEnd")),
                el("ol", { class: "nbest" }, ...hypotheses));
    }));
    $("results").hidden = false;
  }

  function choose(i, k) {
    for (const button of sentenceList.querySelectorAll(".hyp")) {
      const chosen = Number(button.dataset.sentence) === i && Number(button.dataset.hypothesis) === k;
      button.setAttribute("aria-pressed", String(chosen));
    }
    for (const span of documentOutput.querySelectorAll(".sentence")) {
      span.classList.toggle("chosen", Number(span.dataset.sentence) === i);
    }
    const { source: text, translation } = results[i];
    showAlignment(text, translation.sourceTokens, translation.hypotheses[k]);
  }

  function showAlignment(text, sourceTokens, hypothesis) {
    $("alignment").hidden = false;
    $("alignment-caption").textContent = `“${text}” → “${hypothesis.text}”`;
    showLinks(text, hypothesis);
    showHeatmap(sourceTokens, hypothesis);
  }

  // --- word links ------------------------------------------------------------------------

  function showLinks(text, hypothesis) {
    const words = { source: text.split(/\s+/).filter(Boolean),
                    target: hypothesis.text.split(/\s+/).filter(Boolean) };
    const pairs = hypothesis.wordAlignment.split(/\s+/).filter(Boolean)
      .map((link) => link.split("-").map(Number))
      .filter(([s, t]) => s < words.source.length && t < words.target.length);
    const partners = { source: words.source.map(() => []), target: words.target.map(() => []) };
    for (const [s, t] of pairs) {
      partners.source[s].push(t);
      partners.target[t].push(s);
    }
    const buttons = {};
    for (const side of ["source", "target"]) {
      buttons[side] = words[side].map((word, index) => {
        const button = el("button", { type: "button", class: "word", lang: side === "source" ? "en" : "fr",
                                      "data-side": side, "data-index": index }, word);
        if (!partners[side][index].length) button.classList.add("unlinked");
        for (const on of ["mouseenter", "focus"]) button.addEventListener(on, () => highlight(side, index, true));
        for (const off of ["mouseleave", "blur"]) button.addEventListener(off, () => highlight(side, index, false));
        return button;
      });
      links.querySelector(`.words.${side}`).replaceChildren(...buttons[side]);
    }
    view = { words, pairs, partners, buttons };
    linkStatus.textContent = pairs.length ? "" : "No word links for this pair.";
    requestAnimationFrame(drawLines);
  }

  function drawLines() {
    if (!view) return;
    const box = links.getBoundingClientRect();
    svg.setAttribute("width", links.scrollWidth);
    svg.setAttribute("height", links.scrollHeight);
    svg.replaceChildren(...view.pairs.map(([s, t]) => {
      const a = view.buttons.source[s].getBoundingClientRect();
      const b = view.buttons.target[t].getBoundingClientRect();
      const line = document.createElementNS(SVG_NS, "line");
      line.setAttribute("x1", a.left + a.width / 2 - box.left);
      line.setAttribute("y1", a.bottom - box.top);
      line.setAttribute("x2", b.left + b.width / 2 - box.left);
      line.setAttribute("y2", b.top - box.top);
      line.dataset.source = s;
      line.dataset.target = t;
      return line;
    }));
  }

  function highlight(side, index, on) {
    if (!view) return;
    const other = side === "source" ? "target" : "source";
    const partners = view.partners[side][index];
    view.buttons[side][index].classList.toggle("active", on);
    for (const p of partners) view.buttons[other][p].classList.toggle("linked", on);
    for (const line of svg.querySelectorAll(`line[data-${side}="${index}"]`)) {
      line.classList.toggle("on", on);
    }
    if (!on) {
      linkStatus.textContent = "";
      return;
    }
    const word = view.words[side][index];
    const language = other === "source" ? "English" : "French";
    linkStatus.textContent = partners.length
      ? `“${word}” is linked to ${partners.map((p) => `“${view.words[other][p]}”`).join(", ")}.`
      : `“${word}” is linked to no ${language} word.`;
  }

  // --- the heatmap -----------------------------------------------------------------------

  function showHeatmap(sourceTokens, hypothesis) {
    const head = el("tr", {}, el("td"));
    sourceTokens.forEach((token, s) => head.append(el("th", { scope: "col", "data-column": s }, token)));
    const rows = hypothesis.alignment.map((row, t) => {
      const targetToken = hypothesis.targetTokens[t];
      const tr = el("tr", {}, el("th", { scope: "row" }, targetToken));
      row.weights.forEach((weight, s) => {
        const cell = el("td", { "data-weight": weight.toFixed(4), "data-column": s,
                                title: `${targetToken} ← ${sourceTokens[s]}: ${weight.toFixed(2)}` });
        cell.style.backgroundColor = colour(weight);
        tr.append(cell);
      });
      return tr;
    });
    heatmap.tHead.replaceChildren(head);
    heatmap.tBodies[0].replaceChildren(...rows);
  }

  function onHeatmapHover(event) {
    for (const node of heatmap.querySelectorAll(".on")) node.classList.remove("on");
    const cell = event.target.closest("td[data-column]");
    if (!cell) return;
    cell.classList.add("on");
    cell.parentElement.firstElementChild.classList.add("on");
    heatmap.tHead.querySelector(`th[data-column="${cell.dataset.column}"]`).classList.add("on");
  }

  function drawScale() {
    const swatches = $("scale");
    for (let i = 0; i <= 10; i += 1) {
      const swatch = el("span");
      swatch.style.backgroundColor = colour(i / 10);
      swatches.append(swatch);
    }
  }

  // --- a whole file ----------------------------------------------------------------------

  // The form of POST /v1/files:translate, or null (and the error shown).
  function fileRequest() {
    const file = fileInput.files[0];
    if (!file) return showError("Choose a file to translate.", fileInput);
    const beam = integerIn(beamSize, "Beam size");
    const glossary = beam === null ? null : glossaryRequest();
    if (glossary === null) return null;
    const body = new FormData();
    body.append("file", file, file.name);
    body.append("overwrite", String($("file-overwrite").checked));
    body.append("review", String($("file-review").checked));
    body.append("options", JSON.stringify({ beamSize: beam }));
    if (glossary) body.append("glossary", JSON.stringify(glossary));
    return body;
  }

  async function onFileSubmit(event) {
    event.preventDefault();
    errorBox.textContent = "";
    const body = fileRequest();
    if (!body) return;
    $("file-submit").disabled = true;
    $("file-download").hidden = true;
    fileStatus.textContent = `Translating ${fileInput.files[0].name}…`;
    try {
      const response = await fetch("/v1/files:translate",
                                   { method: "POST", headers: authorization(), body });
      if (!response.ok) throw failure(response, await response.json().catch(() => null));
      const summary = JSON.parse(response.headers.get("X-Nmt-Summary") || "{}");
      offerDownload(await response.blob(), summary);
    } catch (error) {
      if (error.status === 401) needToken();
      fileStatus.textContent = "";
      showError(error.message, error.status === 401 ? tokenInput : fileInput);
    } finally {
      $("file-submit").disabled = false;
    }
  }

  function offerDownload(blob, summary) {
    const name = summary.name || "translation";
    if (fileLink.href.startsWith("blob:")) URL.revokeObjectURL(fileLink.href);
    fileLink.href = URL.createObjectURL(blob);
    fileLink.download = name;
    fileLink.textContent = `Download ${name}`;
    $("file-download").hidden = false;
    fileStatus.textContent = `${name}: ${summary.text || "translated"}.`;
    fileLink.focus();
  }

  // --- wiring ----------------------------------------------------------------------------

  form.addEventListener("submit", onSubmit);
  fileForm.addEventListener("submit", onFileSubmit);
  for (const radio of form.elements.mode) radio.addEventListener("change", syncMode);
  beamSize.addEventListener("input", syncNBest);
  for (const box of [source, target, documentBox, glossaryBox]) {
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
  }
  heatmap.addEventListener("mouseover", onHeatmapHover);
  heatmap.addEventListener("mouseleave", () => {
    for (const node of heatmap.querySelectorAll(".on")) node.classList.remove("on");
  });
  new ResizeObserver(() => requestAnimationFrame(drawLines)).observe(links);
  drawScale();
  syncMode();
  loadModel();
})();
