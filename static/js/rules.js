// The worked examples of RULES §3, drawn by the board renderer: a filled number on each counted
// end (its counted contribution), an empty dot on each open place; the caption in the style of
// the rules page. The layouts come from the engine (json_script id "sb-examples").
import { renderBoard, tileText } from "./board.js";
import { countedSum, describeLayout } from "./describe.js";
import { t } from "./i18n.js";

let examples = null;

export function renderExamples(root = document) {
  if (examples === null) {
    const node = document.getElementById("sb-examples");
    examples = node ? JSON.parse(node.textContent) : [];
  }
  for (const figure of root.querySelectorAll("figure[data-example]")) {
    if (figure.dataset.drawn) continue;
    const example = examples.find((e) => e.id === figure.dataset.example);
    if (!example) continue;
    const svg = figure.querySelector("svg");
    renderBoard(svg, example.layout, { dots: "open" });
    svg.setAttribute("role", "img");
    const played = t("played", { tiles: example.played.map(tileText).join(", ") });
    svg.setAttribute("aria-label", played);
    const caption = figure.querySelector("figcaption");
    const title = document.createElement("strong");
    title.textContent = played;
    const sum = document.createElement("span");
    sum.textContent = ` ${countedSum(example.layout)} ${t("points_for_play", { points: example.points })}`;
    const text = document.createElement("span");
    text.className = "figure-text";
    text.textContent = describeLayout(example.layout);
    caption.replaceChildren(title, sum, document.createElement("br"), text);
    figure.dataset.drawn = "1";
  }
}

if (document.body.dataset.page === "rules") renderExamples();
