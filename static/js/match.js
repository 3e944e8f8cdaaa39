// The match page, driven only by the WebSocket protocol (docs/protocol.md): players and
// spectators alike. The server's state message is the whole truth; this file draws it, ticks the
// clocks locally between messages, and sends commands.
import { key, placeKey, renderBoard, tileSvg, tileText } from "./board.js";
import { countedSum, describeEvent, describeLayout, placeText } from "./describe.js";
import { t } from "./i18n.js";
import { renderExamples } from "./rules.js";
import { Connection } from "./connection.js";

const cfg = JSON.parse(document.getElementById("sb-config").textContent);
const $ = (id) => document.getElementById(id);
const names = cfg.players;
const LOW_BANK_MS = 10_000;

const ui = {
  msg: null, // the last state message
  selected: null, // key of the selected hand tile
  confirmResign: false,
  error: "",
  ratings: null, // the finished match's players with rating_before/after
  ratingsAsked: false,
};

// --- the connection -----------------------------------------------------------------------

const conn = new Connection(cfg.matchId, {
  onState: (msg, events) => onState(msg, events),
  onError: (msg) => {
    ui.error = msg.reason || msg.code;
    render();
  },
  onStatus: (status) => {
    const node = $("conn");
    node.dataset.state = status;
    node.textContent = t(status);
  },
});

function send(command) {
  ui.error = "";
  if (cfg.mode === "hotseat" && ui.msg) {
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
  if (!before || before.view.seq !== msg.view.seq || before.you !== msg.you) {
    ui.selected = null;
  }
  const view = msg.view;
  // A tile that must be played (drawn and fits) is selected for you.
  if (view.must_play && view.legal && view.legal.plays.length) ui.selected = key(view.must_play);
  if (events.length) {
    const lines = events.map((e) => describeEvent(e, names));
    appendLog(lines);
    const played = events.some((e) => e.type === "play");
    announce(lines.join(". ") + (played ? `. ${describeLayout(view.layout)}` : ""));
  }
  if (view.result && !ui.ratingsAsked) fetchRatings();
  render();
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

const me = () => (ui.msg ? ui.msg.you : null);
const bottomSeat = () => (me() === 0 || me() === 1 ? me() : 0);

function render() {
  const msg = ui.msg;
  if (!msg) return;
  const view = msg.view;
  document.body.dataset.phase = view.phase;
  document.body.dataset.seq = String(view.seq);
  $("round-no").textContent = t("round", { round: view.round });
  renderSeats(view);
  renderBoardArea(view);
  renderHand(view);
  renderAuction(view);
  renderOverlay(msg);
  renderStatus(msg);
  $("error").textContent = ui.error ? t("error", { reason: ui.error }) : "";
  $("resign").hidden = !(view.legal && view.legal.resign);
  $("resign-confirm").hidden = !ui.confirmResign;
  tick();
}

function renderSeats(view) {
  const bottom = bottomSeat();
  for (const [slot, seat] of [["seat-bottom", bottom], ["seat-top", 1 - bottom]]) {
    const panel = $(slot);
    panel.dataset.seat = seat;
    panel.classList.toggle("to-act", view.to_act === seat);
    panel.querySelector(".name").textContent = names[seat] + (seat === me() && cfg.mode !== "hotseat" ? ` (${t("you")})` : "");
    panel.querySelector(".jockey").hidden = view.jockey !== seat;
    panel.querySelector(".count").textContent = `${view.hand_counts[seat]} ${t("tiles_in_hand")}`;
    const balance = view.balances[seat];
    panel.querySelector(".balance").textContent = String(balance);
    renderChips(panel.querySelector(".chips"), balance);
  }
  $("boneyard").textContent = String(view.boneyard_count);
}

function renderChips(node, balance) {
  const chips = Math.floor(balance / 5);
  if (node.dataset.chips === String(chips)) return;
  node.dataset.chips = String(chips);
  node.setAttribute("aria-label", t("chips", { n: chips }));
  node.replaceChildren();
  for (let start = 0; start < chips; start += 10) {
    const stack = document.createElement("span");
    stack.className = "chip-stack";
    for (let i = start; i < Math.min(chips, start + 10); i++) {
      const chip = document.createElement("span");
      chip.className = "chip";
      stack.append(chip);
    }
    node.append(stack);
  }
}

function selectedPlay(view) {
  if (!ui.selected || !view.legal) return null;
  return view.legal.plays.find((p) => key(p.tile) === ui.selected) || null;
}

function renderBoardArea(view) {
  const play = selectedPlay(view);
  const options = {};
  if (play) {
    const places = play.places.filter(Boolean);
    options.dots = places;
    options.onPlace = (place) => playTile(play.tile, place);
    options.placeLabel = (place) => t("play_on", { tile: tileText(play.tile), place: placeText(place) });
    if (play.places.includes(null)) {
      options.onOpen = () => playTile(play.tile, null);
      options.openLabel = t("opening_play", { tile: tileText(play.tile) });
    }
  }
  const last = [...view.layout.tiles].pop();
  options.highlight = last ? [key(last.tile)] : [];
  renderBoard($("board"), view.layout, options);
  $("end-total").textContent = String(view.layout.end_total);
  $("board-text").textContent = `${describeLayout(view.layout)} ${view.layout.tiles.length ? countedSum(view.layout) : ""}`;
  // The same choices as buttons, for keyboards and screen readers.
  const list = $("places");
  list.replaceChildren();
  if (play && play.places.length > 1) {
    const title = document.createElement("p");
    title.className = "places-title";
    title.textContent = t("choose_place", { tile: tileText(play.tile) });
    list.append(title);
    for (const place of play.places) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "place-button";
      button.dataset.place = placeKey(place);
      button.textContent = place ? t("play_on", { tile: tileText(play.tile), place: placeText(place) }) : t("opening_play", { tile: tileText(play.tile) });
      button.addEventListener("click", () => playTile(play.tile, place));
      list.append(button);
    }
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.className = "link-button";
    cancel.textContent = t("cancel");
    cancel.addEventListener("click", () => select(null));
    list.append(cancel);
  }
}

function renderHand(view) {
  const hand = $("hand");
  const area = $("hand-area");
  area.hidden = !view.hand;
  $("spectating").hidden = me() !== null;
  const drawButton = $("draw");
  drawButton.hidden = !(view.legal && view.legal.draw);
  if (!view.hand) {
    hand.replaceChildren();
    return;
  }
  const playable = new Map((view.legal ? view.legal.plays : []).map((p) => [key(p.tile), p]));
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.tile : null;
  hand.replaceChildren();
  for (const tile of view.hand) {
    const k = key(tile);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "hand-tile";
    button.dataset.tile = k;
    const play = playable.get(k);
    button.setAttribute("aria-label", tileText(tile));
    button.setAttribute("aria-pressed", String(ui.selected === k));
    if (!play) {
      button.setAttribute("aria-disabled", "true");
      button.classList.add("cannot");
    } else {
      button.classList.add("can");
      button.draggable = true;
      button.addEventListener("dragstart", (event) => {
        event.dataTransfer.setData("text/plain", k);
        event.dataTransfer.effectAllowed = "move";
        if (ui.selected !== k) select(k, { keepHand: true });
      });
    }
    if (view.must_play && key(view.must_play) === k) button.classList.add("must");
    button.append(tileSvg(tile));
    button.addEventListener("click", () => chooseTile(k));
    button.addEventListener("keydown", handKeys);
    hand.append(button);
  }
  if (focused) {
    const again = hand.querySelector(`[data-tile="${focused}"]`);
    if (again) again.focus();
  }
  const yourTurn = view.legal && (view.legal.plays.length || view.legal.draw);
  $("hand-hint").textContent = !yourTurn ? "" : view.must_play ? t("must_play") : view.legal.draw ? t("draw_hint") : t("select_tile");
}

function handKeys(event) {
  const buttons = [...$("hand").querySelectorAll(".hand-tile")];
  const index = buttons.indexOf(event.currentTarget);
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    event.preventDefault();
    const next = buttons[(index + (event.key === "ArrowRight" ? 1 : buttons.length - 1)) % buttons.length];
    next.focus();
  } else if (event.key === "Escape") {
    select(null);
  }
}

function chooseTile(k) {
  const view = ui.msg.view;
  const play = view.legal && view.legal.plays.find((p) => key(p.tile) === k);
  if (!play) return;
  if (play.places.length === 1) {
    playTile(play.tile, play.places[0]);
    return;
  }
  // A second click on the chosen tile puts it back (not the drawn tile that must be played).
  select(ui.selected === k && !view.must_play ? null : k);
  const first = $("places").querySelector(".place-button");
  if (ui.selected && first) first.focus();
}

function select(k, { keepHand = false } = {}) {
  ui.selected = k;
  const view = ui.msg.view;
  renderBoardArea(view);
  if (!keepHand) renderHand(view);
  else for (const b of $("hand").querySelectorAll(".hand-tile")) b.setAttribute("aria-pressed", String(b.dataset.tile === k));
}

function playTile(tile, place) {
  ui.selected = null;
  send({ type: "play", tile, place });
}

function renderAuction(view) {
  const panel = $("auction");
  panel.hidden = view.phase !== "auction" && !(view.phase === "handover" && view.auction);
  if (panel.hidden) return;
  const auction = view.auction || { offer: null, offerer: null };
  $("auction-jockey").textContent = view.jockey === null ? "" : `${t("jockey")}: ${names[view.jockey]}`;
  $("auction-offer").textContent = auction.offer === null ? t("no_offer") : t("current_offer", { name: names[auction.offerer], amount: auction.offer });
  const legal = view.legal;
  const controls = $("auction-controls");
  const deciding = legal && (legal.waive || legal.accept || legal.offer);
  controls.hidden = !deciding;
  if (!deciding) return;
  const seat = me();
  const net = (who, amount) => (who === view.jockey ? Math.max(0, amount - 15) : amount);
  $("waive").hidden = !legal.waive;
  const accept = $("accept");
  accept.hidden = !legal.accept;
  if (legal.accept) {
    const gain = Math.min(net(auction.offerer, auction.offer), view.balances[auction.offerer]);
    accept.textContent = t("accept_gain", { amount: gain });
  }
  const form = $("offer-form");
  form.hidden = !legal.offer;
  if (legal.offer) {
    const select = $("offer-amount");
    const previous = select.value;
    select.replaceChildren();
    for (let amount = legal.offer.min; amount <= legal.offer.max; amount += legal.offer.step) {
      const option = document.createElement("option");
      option.value = String(amount);
      option.textContent = t("costs", { amount, cost: net(seat, amount) });
      select.append(option);
    }
    if (previous && select.querySelector(`option[value="${previous}"]`)) select.value = previous;
    $("offer-submit").textContent = auction.offer === null ? t("offer") : t("raise");
    $("discount-note").hidden = seat !== view.jockey;
  }
}

function startTime(msg) {
  if (!msg.deadline || msg.deadline.kind !== "start" || !msg.deadline.at_ms) return "…";
  return new Date(msg.deadline.at_ms - conn.offsetMs).toLocaleTimeString();
}

function renderOverlay(msg) {
  const view = msg.view;
  const overlay = $("overlay");
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
    if (id) b.id = id;
    b.addEventListener("click", onClick);
    return b;
  };
  let show = false;
  overlay.classList.toggle("private", view.phase === "handover");
  if (view.result) {
    show = true;
    overlay.dataset.kind = "result";
    add("h2", t("result"));
    const r = view.result;
    add("p", r.winner === null ? t("no_winner") : `${t("winner", { name: names[r.winner] })} ${t(`reason_${r.reason}`)}`, "result-line");
    add("p", `${names[0]} ${view.balances[0]} – ${view.balances[1]} ${names[1]}`);
    if (ui.ratings && msg.match.rated) {
      for (const p of ui.ratings) {
        if (p.rating_before !== null && p.rating_after !== null) {
          const diff = p.rating_after - p.rating_before;
          add("p", `${p.username}: ${t("rating", { before: p.rating_before, after: p.rating_after })} (${diff >= 0 ? "+" : ""}${diff})`, "rating-change");
        }
      }
    }
    const link = add("a", t("replay"), "button secondary");
    link.href = `/match/${cfg.matchId}/replay/`;
  } else if (view.phase === "handover") {
    show = true;
    overlay.dataset.kind = "handover";
    const next = names[msg.starter ?? view.to_act];
    add("h2", t("handover", { name: next }));
    add("p", t("handover_hint", { name: next }));
    button(t("reveal"), () => send({ type: "start" }), "reveal");
  } else if (view.phase === "ready") {
    show = true;
    const settled = view.settlement && view.round > 1;
    overlay.dataset.kind = settled ? "settlement" : "ready";
    if (settled) renderSettlement(add, view);
    else add("h2", t("round", { round: view.round }));
    const starter = msg.starter;
    const mine = me() !== null && (cfg.mode === "hotseat" || starter === me());
    if (mine && view.legal && view.legal.start) {
      if (!settled) add("p", t("press_start"));
      button(settled ? t("continue") : t("start"), () => send({ type: "start" }), "start");
    } else if (starter !== null && starter !== undefined) {
      add("p", t(settled ? "waiting_continue" : "waiting_start", { name: names[starter], time: startTime(msg) }), "waiting");
    }
  }
  overlay.hidden = !show;
}

function renderSettlement(add, view) {
  const s = view.settlement;
  add("h2", t("settlement", { round: view.round - 1 }));
  add("p", s.end === "domino" ? t("domino", { name: names[s.winner] }) : t("block"), "settle-end");
  add("p", t("pips", { a: `${names[0]} ${s.pips[0]}`, b: `${s.pips[1]} ${names[1]}` }));
  add("p", s.points && s.winner !== null ? t("moved", { points: s.points, name: names[s.winner] }) : t("no_transfer"), "settle-points");
  add("p", `${names[0]} ${view.balances[0]} – ${view.balances[1]} ${names[1]}`);
}

function renderStatus(msg) {
  const view = msg.view;
  let text = "";
  if (view.to_act !== null && (view.phase === "play" || view.phase === "auction")) {
    text = view.to_act === me() ? t("your_turn") : t("their_turn", { name: names[view.to_act] });
  }
  $("turn").textContent = text;
}

// --- the clocks ---------------------------------------------------------------------------

function formatBank(ms) {
  const tenths = Math.floor(Math.max(0, ms) / 100);
  const minutes = Math.floor(tenths / 600);
  const seconds = Math.floor((tenths % 600) / 10);
  return `${minutes}:${String(seconds).padStart(2, "0")}.${tenths % 10}`;
}

function tick() {
  const msg = ui.msg;
  if (!msg) return;
  const view = msg.view;
  const clock = view.clock;
  const now = Date.now() + conn.offsetMs;
  for (const slot of ["seat-bottom", "seat-top"]) {
    const panel = $(slot);
    const seat = Number(panel.dataset.seat);
    let bank = view.banks_ms[seat];
    let delay = null;
    const running = clock.running && clock.seat === seat;
    if (running) {
      const elapsed = Math.max(0, now - clock.turn_start_ms);
      delay = Math.max(0, clock.delay_ms - elapsed);
      bank = Math.max(0, bank - Math.max(0, elapsed - clock.delay_ms));
    }
    const bankText = formatBank(bank);
    const bankNode = panel.querySelector(".bank");
    if (bankNode.textContent !== bankText) bankNode.textContent = bankText;
    const delayNode = panel.querySelector(".delay");
    const delayText = delay === null ? "" : `+${(delay / 1000).toFixed(1)} s`;
    if (delayNode.textContent !== delayText) delayNode.textContent = delayText;
    const low = bank < LOW_BANK_MS && !view.result;
    panel.classList.toggle("low-bank", low);
    panel.querySelector(".warn").hidden = !low;
    panel.classList.toggle("running", running);
  }
}

function frame() {
  tick();
  requestAnimationFrame(frame);
}

// --- wiring -------------------------------------------------------------------------------

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
$("rules-open").addEventListener("click", () => {
  const panel = $("rules-panel");
  panel.hidden = false;
  renderExamples(panel);
  $("rules-close").focus();
});
$("rules-close").addEventListener("click", () => {
  $("rules-panel").hidden = true;
  $("rules-open").focus();
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") {
    if (!$("rules-panel").hidden) $("rules-panel").hidden = true;
    else if (ui.selected) select(null);
  }
});

conn.open();
requestAnimationFrame(frame);
