// The match page, driven only by the WebSocket protocol (docs/protocol.md): players and
// spectators alike. The server's state message is the whole truth; this file keeps the page's
// own state (the selected tile, the last move to mark, the round's scores), routes each message
// to the parts that draw it (match/table.js, auction.js, overlay.js, clock.js, history.js) and
// sends commands. No rules arithmetic here: every number shown is the server's.
import { key } from "./board.js";
import { describeEvent, describeLayout } from "./describe.js";
import { t } from "./i18n.js";
import { renderExamples } from "./rules.js";
import { Connection } from "./connection.js";
import { renderAuction } from "./match/auction.js";
import { tickClocks } from "./match/clock.js";
import { RoundHistory, pointsMoved } from "./match/history.js";
import { contributeIfDue, rememberCommitment } from "./match/fairness.js";
import { renderOverlay } from "./match/overlay.js";
import { sound } from "./match/sound.js";
import { flashScore, moveChips, renderHand, renderSeats, renderTable, roundEndTable, select } from "./match/table.js";

const cfg = JSON.parse(document.getElementById("sb-config").textContent);
const $ = (id) => document.getElementById(id);

const ui = {
  msg: null, // the last state message
  selected: null, // key of the selected hand tile
  markedTile: null, // key of the last tile played, marked until you play
  scoringSeq: null, // the seq whose play scored: its counted ends are lit
  confirmResign: false,
  error: "",
  ratings: null, // the finished match's players with rating_before/after
  ratingsAsked: false,
};
const history = new RoundHistory();

// What the parts of the page share.
const page = {
  ui,
  names: cfg.players,
  computers: cfg.computers,
  hotseat: cfg.mode === "hotseat",
  seats: cfg.seats || [], // the seats this user holds (both in pass-and-play; none: a spectator)
  matchId: cfg.matchId,
  get rated() {
    return Boolean(ui.msg && ui.msg.match.rated);
  },
  me: () => (ui.msg ? ui.msg.you : null),
  bottomSeat: () => (page.me() === 0 || page.me() === 1 ? page.me() : 0),
  offsetMs: () => conn.offsetMs,
  send,
};

// --- the connection -----------------------------------------------------------------------

const conn = new Connection(cfg.matchId, {
  onState: (msg, events) => onState(msg, events),
  onError: (msg) => {
    ui.error = errorText(msg);
    render();
  },
  onStatus: (status) => {
    const node = $("conn");
    node.dataset.state = status;
    node.textContent = t(status);
  },
});

// A refusal in the page's language when its code is known, else the server's words for people
// (`message`; older servers said them in `reason`).
function errorText(msg) {
  const code = msg.code ?? msg.reason;
  const known = t(`code_${code}`);
  return known === `code_${code}` ? msg.message || msg.reason || code : known;
}

function send(command) {
  ui.error = "";
  if (page.hotseat && ui.msg && command.seat === undefined) {
    const seat = command.type === "start" ? ui.msg.starter : ui.msg.you;
    if (seat === 0 || seat === 1) command.seat = seat;
  }
  conn.command(command);
}

// --- state --------------------------------------------------------------------------------

function onState(msg, events) {
  const before = ui.msg;
  ui.msg = msg;
  ui.error = "";
  if (!before || before.view.seq !== msg.view.seq || before.you !== msg.you) ui.selected = null;
  const view = msg.view;
  history.begin(view.round);
  if (!before) catchUp();
  // A tile that must be played (drawn and fits) is selected for you.
  if (view.must_play && view.legal && view.legal.plays.length) ui.selected = key(view.must_play);
  const moves = [];
  for (const event of events) {
    history.add(event);
    if (event.type === "play") {
      // The opponent's last move stays marked until you play; a spectator sees the last one.
      ui.markedTile = event.seat === page.me() && !page.hotseat ? null : key(event.tile);
      sound.click();
    }
    const moved = pointsMoved(event);
    if (moved) moves.push({ moved, event });
  }
  if (view.layout.tiles.length === 0 && view.phase !== "ready" && view.phase !== "dealing") ui.markedTile = null;
  rememberCommitment(view);
  contributeIfDue(view, page);
  if (events.length) {
    const lines = events.map((e) => describeEvent(e, page.names));
    appendLog(lines);
    const played = events.some((e) => e.type === "play");
    announce(lines.join(". ") + (played ? `. ${describeLayout(view.layout)}` : ""));
  }
  const scoringPlay = moves.find(({ event }) => event.type === "play");
  ui.scoringSeq = scoringPlay ? view.seq : null;
  if (view.result && !ui.ratingsAsked) fetchRatings();
  render();
  for (const { moved } of moves) moveChips(moved);
  if (moves.length) flashScore(moves[moves.length - 1].moved, page);
}

function appendLog(lines) {
  const log = $("event-log");
  for (const line of lines) {
    const li = document.createElement("li");
    li.textContent = line;
    log.prepend(li);
  }
  while (log.children.length > 60) log.lastChild.remove();
}

function announce(text) {
  $("announce").textContent = text;
}

// What happened before this page opened (a reload, a late spectator): the round's scores and
// the opponent's last tile, from the match record.
async function catchUp() {
  try {
    const response = await fetch(cfg.apiUrl, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const record = await response.json();
    history.catchUp(record);
    const events = record.rounds.length ? record.rounds[record.rounds.length - 1].events : [];
    const last = [...events].reverse().find((e) => e.type === "play");
    const onTable = ui.msg.view.layout.tiles.some((p) => last && key(p.tile) === key(last.tile));
    if (ui.markedTile === null && onTable && (last.seat !== page.me() || page.hotseat)) ui.markedTile = key(last.tile);
    render();
  } catch {
    // The page simply starts with what it sees from now on.
  }
}

async function fetchRatings() {
  ui.ratingsAsked = true;
  try {
    const response = await fetch(cfg.apiUrl, { headers: { Accept: "application/json" } });
    if (!response.ok) return;
    const record = await response.json();
    ui.ratings = record.players;
    render();
  } catch {
    // The result screen simply goes without the rating change.
  }
}

// --- drawing ------------------------------------------------------------------------------

function render() {
  const msg = ui.msg;
  if (!msg) return;
  const view = msg.view;
  const roundEnd = roundEndTable(view);
  document.body.dataset.phase = view.phase;
  document.body.dataset.seq = String(view.seq);
  $("match").classList.toggle("round-end", Boolean(roundEnd));
  $("round-no").textContent = t("round", { round: view.round });
  renderSeats(view, page, roundEnd);
  renderTable(view, page, roundEnd);
  renderHand(view, page, roundEnd);
  renderAuction(view, page);
  renderOverlay(msg, page);
  history.render($("round-scores"), $("round-scores-title"), roundEnd ? view.round - 1 : view.round, page.names);
  renderStatus(view);
  $("error").textContent = ui.error ? t("error", { reason: ui.error }) : "";
  $("resign").hidden = !(view.legal && view.legal.resign);
  $("resign-confirm").hidden = !ui.confirmResign;
  tick();
}

function renderStatus(view) {
  let text = "";
  if (view.to_act !== null && (view.phase === "play" || view.phase === "auction")) {
    text = view.to_act === page.me() ? t("your_turn") : t("their_turn", { name: page.names[view.to_act] });
  }
  $("turn").textContent = text;
}

function tick() {
  if (!ui.msg) return;
  tickClocks(ui.msg.view, [$("seat-bottom"), $("seat-top")], Date.now() + conn.offsetMs, page.me());
}

function frame() {
  tick();
  requestAnimationFrame(frame);
}

// --- wiring -------------------------------------------------------------------------------

function renderSoundToggle() {
  const button = $("sound-toggle");
  button.setAttribute("aria-pressed", String(sound.on));
  button.textContent = sound.on ? t("sound_on") : t("sound_off");
}

function setRulesOpen(open) {
  const panel = $("rules-panel");
  panel.hidden = !open;
  $("match").classList.toggle("rules-open", open);
  $("rules-open").setAttribute("aria-expanded", String(open));
  if (open) {
    renderExamples(panel);
    $("rules-close").focus();
  } else {
    $("rules-open").focus();
  }
  if (ui.msg) render(); // the board's frame follows the table's new shape
}

$("draw").addEventListener("click", () => send({ type: "draw" }));
$("waive").addEventListener("click", () => send({ type: "waive" }));
$("accept").addEventListener("click", () => send({ type: "accept" }));
$("offer-form").addEventListener("submit", (event) => {
  event.preventDefault();
  send({ type: "offer", amount: Number($("offer-amount").value) });
});
$("resign").addEventListener("click", () => {
  ui.confirmResign = true;
  render();
  $("resign-yes").focus();
});
$("resign-yes").addEventListener("click", () => {
  ui.confirmResign = false;
  send({ type: "resign" });
});
$("resign-no").addEventListener("click", () => {
  ui.confirmResign = false;
  render();
});
$("sound-toggle").addEventListener("click", () => {
  sound.on = !sound.on;
  renderSoundToggle();
});
$("rules-open").addEventListener("click", () => setRulesOpen($("rules-panel").hidden));
$("rules-close").addEventListener("click", () => setRulesOpen(false));
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  if (!$("rules-panel").hidden) setRulesOpen(false);
  else if (ui.selected) select(page, null);
});
window.addEventListener("resize", () => render());

renderSoundToggle();
conn.open();
requestAnimationFrame(frame);
