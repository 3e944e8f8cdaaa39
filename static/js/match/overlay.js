// The cards over or beside the table: Start (the clocks stand), a pass-and-play hand-over, the
// round's end explained (how it ended, the pips, the rounding, who pays whom and the cap of the
// payer's balance, all as the server's settlement says) with Continue, and the match's result.
import { t } from "../i18n.js";
import { showProof } from "./fairness.js";

const $ = (id) => document.getElementById(id);

function card() {
  const body = $("overlay-body");
  body.replaceChildren();
  const add = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (className) node.className = className;
    body.append(node);
    return node;
  };
  const button = (label, onClick, id) => {
    const b = add("button", label, "button");
    b.type = "button";
    b.id = id;
    b.addEventListener("click", onClick);
    return b;
  };
  return { add, button };
}

function startTime(msg, offsetMs) {
  if (!msg.deadline || msg.deadline.kind !== "start" || !msg.deadline.at_ms) return "…";
  return new Date(msg.deadline.at_ms - offsetMs).toLocaleTimeString();
}

export function renderOverlay(msg, page) {
  const view = msg.view;
  const overlay = $("overlay");
  const { add, button } = card();
  overlay.classList.toggle("private", view.phase === "handover");
  let kind = null;
  if (view.result) {
    kind = "result";
    renderResult(add, view, page);
  } else if (view.phase === "handover") {
    kind = "handover";
    const next = page.names[msg.starter ?? view.to_act];
    add("h2", t("handover", { name: next }));
    add("p", t("handover_hint", { name: next }));
    button(t("reveal"), () => page.send({ type: "start" }), "reveal");
  } else if (view.phase === "ready" || view.phase === "dealing") {
    const settled = view.settlement && view.round > 1;
    kind = settled ? "settlement" : "ready";
    if (settled) renderSettlement(add, view, page);
    else add("h2", t("round", { round: view.round }));
    if (view.phase === "dealing") add("p", t("dealing"), "dealing");
    else renderStart(add, button, msg, page, settled);
    // The settled round's deal proof comes after Continue, which stays in view on a phone.
    if (settled) showProof(add("div"), view.round - 1, page);
  }
  overlay.hidden = kind === null;
  if (kind) overlay.dataset.kind = kind;
}

// Start / Continue for the seat that presses it, or who is awaited.
function renderStart(add, button, msg, page, settled) {
  const view = msg.view;
  const starter = msg.starter;
  const mine = page.me() !== null && (page.hotseat || starter === page.me());
  if (mine && view.legal && view.legal.start) {
    if (!settled) add("p", t("press_start"));
    button(settled ? t("continue") : t("start"), () => page.send({ type: "start" }), "start");
  } else if (starter !== null && starter !== undefined) {
    const waiting = settled ? "waiting_continue" : "waiting_start";
    add("p", t(waiting, { name: page.names[starter], time: startTime(msg, page.offsetMs()) }), "waiting");
  }
}

function balancesLine(view, names) {
  return `${names[0]} ${view.balances[0]} – ${view.balances[1]} ${names[1]}`;
}

function renderResult(add, view, page) {
  const names = page.names;
  add("h2", t("result"));
  const r = view.result;
  const line = r.winner === null ? t("no_winner") : `${t("winner", { name: names[r.winner] })} ${t(`reason_${r.reason}`)}`;
  add("p", line, "result-line");
  const balances = add("dl", undefined, "final-balances");
  for (const seat of [0, 1]) {
    const term = document.createElement("dt");
    term.textContent = names[seat];
    const value = document.createElement("dd");
    value.textContent = view.balances[seat] ? t("points_n", { n: view.balances[seat] }) : t("out_of_points");
    balances.append(term, value);
  }
  if (page.ui.ratings && page.rated) {
    for (const p of page.ui.ratings) {
      if (p.rating_before !== null && p.rating_after !== null) {
        const diff = p.rating_after - p.rating_before;
        add("p", `${p.username}: ${t("rating", { before: p.rating_before, after: p.rating_after })} (${diff >= 0 ? "+" : ""}${diff})`, "rating-change");
      }
    }
  }
  showProof(add("div"), view.round, page);
  const link = add("a", t("replay"), "button secondary");
  link.href = `/match/${page.matchId}/replay/`;
}

// How the last round ended, in the server's numbers: `rounded` (the loser's pips to the
// nearest 5), `owed` (before the cap), `points` (what moved).
function renderSettlement(add, view, page) {
  const names = page.names;
  const s = view.settlement;
  add("h2", t("settlement", { round: view.round - 1 }));
  add("p", s.end === "domino" ? t("domino", { name: names[s.winner] }) : t("block_explained"), "settle-end");
  add("p", t("pips", { a: `${names[0]} ${s.pips[0]}`, b: `${s.pips[1]} ${names[1]}` }), "settle-pips");
  if (s.end === "domino") {
    add("p", t("domino_pays_nothing", { name: names[s.winner] }), "settle-rule");
  } else if (s.winner === null) {
    add("p", t("equal_pips"), "settle-rule");
  } else {
    const loser = 1 - s.winner;
    add("p", t("pips_rounded", { name: names[loser], pips: s.pips[loser], rounded: s.rounded }), "settle-rule");
    add("p", t("owes", { payer: names[loser], payee: names[s.winner], owed: s.owed }), "settle-owed");
    if (s.points < s.owed) add("p", t("capped", { payer: names[loser], points: s.points }), "settle-cap");
  }
  add("p", s.points && s.winner !== null ? t("moved", { points: s.points, name: names[s.winner] }) : t("no_transfer"), "settle-points");
  add("p", balancesLine(view, names), "settle-balances");
}
