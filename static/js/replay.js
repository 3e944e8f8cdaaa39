// The replay viewer: steps through an archived match (forward, back, jump to a round or an
// event). The server replays the record through the rules and sends one public view per event
// (plus both hands, the match being over), so this page draws the same board as the live one.
import { key, renderBoard, tileSvg } from "./board.js";
import { countedSum, describeEvent, describeLayout } from "./describe.js";
import { t } from "./i18n.js";

const cfg = JSON.parse(document.getElementById("sb-config").textContent);
const $ = (id) => document.getElementById(id);
const names = cfg.players;
let frames = [];
let index = 0;
const judged = new Map(); // event seq -> the expert's judgement of that decision
const ANALYSIS_POLL_MS = 2000;
const ANALYSIS_POLLS = 90;

function show(i) {
  if (!frames.length) return;
  index = Math.max(0, Math.min(frames.length - 1, i));
  const frame = frames[index];
  const view = frame.view;
  const last = frame.event && frame.event.type === "play" ? [key(frame.event.tile)] : [];
  renderBoard($("board"), view.layout, { highlight: last });
  $("end-total").textContent = String(view.layout.end_total);
  $("boneyard").textContent = String(view.boneyard_count);
  $("board-text").textContent = `${describeLayout(view.layout)} ${view.layout.tiles.length ? countedSum(view.layout) : ""}`;
  $("rp-event").textContent = frame.event ? describeEvent(frame.event, names) : t("deal", { round: frame.round });
  $("rp-position").textContent = `${t("round", { round: frame.round })} · ${t("event_n", { n: index + 1, total: frames.length })}`;
  $("rp-slider").value = String(index);
  $("rp-round").value = String(frame.round);
  for (const seat of [0, 1]) {
    const panel = $(`rp-seat-${seat}`);
    panel.querySelector(".name").textContent = names[seat] + (view.jockey === seat ? ` (${t("jockey")})` : "");
    panel.querySelector(".balance").textContent = String(view.balances[seat]);
    const hand = panel.querySelector(".rp-hand");
    hand.setAttribute("aria-label", t("hand_of", { name: names[seat] }));
    hand.replaceChildren(...view.hands[seat].map((tile) => tileSvg(tile)));
  }
  showJudgement(frame.event);
  document.body.dataset.frame = String(index);
}

function choiceText(command, seat) {
  return describeEvent({ ...command, seat, points: 0 }, names);
}

function showJudgement(event) {
  const box = $("rp-judgement");
  const judgement = event ? judged.get(event.seq) : undefined;
  box.hidden = !judgement || judgement.expected === null;
  if (box.hidden) return;
  box.dataset.mistake = String(judgement.mistake);
  box.textContent = t(judgement.mistake ? "judged_mistake" : "judged", {
    expected: judgement.expected.toFixed(1),
    best: choiceText(judgement.best, judgement.seat),
    best_expected: judgement.best_expected.toFixed(1),
    loss: judgement.loss.toFixed(1),
  });
}

function frameOf(seq) {
  return frames.findIndex((frame) => frame.event && frame.event.seq === seq);
}

function renderAnalysis(analysis) {
  for (const decision of analysis.decisions) judged.set(decision.seq, decision);
  $("rp-analysis-status").textContent = "";
  $("rp-analysis-summary").replaceChildren(...analysis.summary.map((row) => {
    const item = document.createElement("li");
    item.textContent = t("analysis_summary", {
      name: names[row.seat], choices: row.choices, mistakes: row.mistakes, loss: row.expected_loss.toFixed(1),
    });
    return item;
  }));
  const mistakes = analysis.decisions.filter((decision) => decision.mistake);
  $("rp-mistakes").replaceChildren(...(mistakes.length ? mistakes.map((decision) => {
    const item = document.createElement("li");
    const jump = document.createElement("button");
    jump.type = "button";
    jump.className = "link-button";
    jump.dataset.seq = String(decision.seq);
    jump.textContent = t("mistake_entry", {
      round: decision.round, name: names[decision.seat],
      choice: choiceText(decision.choice, decision.seat), loss: decision.loss.toFixed(1),
    });
    jump.addEventListener("click", () => show(frameOf(decision.seq)));
    item.append(jump);
    return item;
  }) : [Object.assign(document.createElement("li"), { className: "empty", textContent: t("no_mistakes") })]));
  show(index);
}

async function loadAnalysis(polls = 0) {
  const response = await fetch(cfg.analysisUrl, { headers: { Accept: "application/json" } });
  if (response.status === 409 || response.status === 404) return; // live or void: nothing to judge
  $("rp-analysis").hidden = false;
  const body = await response.json();
  if (response.status === 202) {
    $("rp-analysis-status").textContent = t("analysis_pending");
    if (polls < ANALYSIS_POLLS) setTimeout(() => loadAnalysis(polls + 1), ANALYSIS_POLL_MS);
    return;
  }
  if (body.status !== "done") {
    $("rp-analysis-status").textContent = t("analysis_failed");
    return;
  }
  renderAnalysis(body);
}

async function load() {
  $("rp-position").textContent = t("loading");
  const response = await fetch(cfg.framesUrl, { headers: { Accept: "application/json" } });
  const data = await response.json();
  frames = data.frames;
  if (!frames.length) {
    $("rp-position").textContent = t("not_available");
    return;
  }
  $("rp-slider").max = String(frames.length - 1);
  const rounds = [...new Set(frames.map((f) => f.round))];
  $("rp-round").replaceChildren(...rounds.map((r) => {
    const option = document.createElement("option");
    option.value = String(r);
    option.textContent = String(r);
    return option;
  }));
  show(0);
  loadAnalysis();
}

$("rp-first").addEventListener("click", () => show(0));
$("rp-back").addEventListener("click", () => show(index - 1));
$("rp-forward").addEventListener("click", () => show(index + 1));
$("rp-last").addEventListener("click", () => show(frames.length - 1));
$("rp-slider").addEventListener("input", (event) => show(Number(event.target.value)));
$("rp-round").addEventListener("change", (event) => show(frames.findIndex((f) => f.round === Number(event.target.value))));
document.addEventListener("keydown", (event) => {
  if (event.target.closest && event.target.closest("input, select")) return;
  if (event.key === "ArrowRight") show(index + 1);
  else if (event.key === "ArrowLeft") show(index - 1);
  else if (event.key === "Home") show(0);
  else if (event.key === "End") show(frames.length - 1);
});
load();
