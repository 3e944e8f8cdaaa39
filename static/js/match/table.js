// The table: both seats (names, balances as chips, the opponent's tiles as backs), the board
// with its open places and the points each would score, your hand, and the moments when
// points move (the counted ends light up, "+15" at the board, chips fly to the scorer).
// At a round's end the board keeps the final layout and both hands lie face up.
import { key, placeKey, renderBoard, tileSvg, tileText } from "../board.js";
import { countedSum, describeLayout, placeText } from "../describe.js";
import { t } from "../i18n.js";

const $ = (id) => document.getElementById(id);
const CHIP = 5; // points per chip, as the balances are shown
const FLASH_MS = 2600;
const FLIGHT_MS = 700;
const MAX_FLYING_CHIPS = 8;

// The table as the last round ended (the settlement's final hands and layout), while the next
// round is being dealt or waits for Continue; else null.
export function roundEndTable(view) {
  const s = view.settlement;
  const waiting = (view.phase === "ready" || view.phase === "dealing") && view.round > 1;
  return s && waiting && s.hands && s.layout ? s : null;
}

// --- seats --------------------------------------------------------------------------------

export function renderSeats(view, page, roundEnd) {
  const bottom = page.bottomSeat();
  for (const [slot, seat] of [["seat-bottom", bottom], ["seat-top", 1 - bottom]]) {
    const panel = $(slot);
    panel.dataset.seat = seat;
    panel.classList.toggle("to-act", view.to_act === seat);
    const you = seat === page.me() && !page.hotseat;
    panel.querySelector(".name").textContent = page.names[seat] + (you ? ` (${t("you")})` : "");
    const computer = panel.querySelector(".pill-computer");
    computer.hidden = !page.computers[seat];
    computer.textContent = page.computers[seat] ? t("computer_level", { level: page.computers[seat] }) : "";
    panel.querySelector(".jockey").hidden = view.jockey !== seat;
    const held = roundEnd ? roundEnd.hands[seat].length : view.hand_counts[seat];
    panel.querySelector(".count").textContent = t("tiles_in_hand_n", { n: held });
    const balance = view.balances[seat];
    panel.querySelector(".balance").textContent = String(balance);
    renderChips(panel.querySelector(".chips"), balance);
    renderSeatTiles(panel.querySelector(".seat-tiles"), view, page, seat, roundEnd);
  }
  $("boneyard").textContent = String(view.boneyard_count);
}

// Beside a seat: its final hand face up at a round's end; otherwise the backs of tiles you
// cannot see (the opponent's; both hands for spectators).
function renderSeatTiles(node, view, page, seat, roundEnd) {
  let tiles;
  let faceUp = false;
  if (roundEnd) {
    tiles = roundEnd.hands[seat];
    faceUp = true;
  } else if (seat !== page.me() || !view.hand) {
    tiles = Array.from({ length: view.hand_counts[seat] }, () => null);
  } else {
    tiles = [];
  }
  const signature = `${faceUp}:${JSON.stringify(tiles)}`;
  if (node.dataset.shown === signature) return;
  node.dataset.shown = signature;
  node.classList.toggle("face-up", faceUp);
  node.setAttribute("aria-hidden", String(!faceUp));
  node.setAttribute("aria-label", faceUp ? t("final_hand_of", { name: page.names[seat] }) : "");
  node.replaceChildren(...tiles.map((tile) => {
    const svg = tileSvg(tile, { hidden: tile === null });
    if (tile) svg.dataset.tile = key(tile);
    return svg;
  }));
  if (faceUp && !tiles.length) {
    const none = document.createElement("span");
    none.className = "note";
    none.textContent = t("no_tiles_left");
    node.append(none);
  }
}

function renderChips(node, balance) {
  const chips = Math.floor(balance / CHIP);
  if (node.dataset.chips === String(chips)) return;
  node.dataset.chips = String(chips);
  node.setAttribute("aria-label", t("chips", { n: chips }));
  node.replaceChildren();
  if (!chips) {
    const none = document.createElement("span");
    none.className = "no-chips";
    none.textContent = t("no_chips");
    node.append(none);
    return;
  }
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

// --- the board ----------------------------------------------------------------------------

function selectedPlay(view, page) {
  if (!page.ui.selected || !view.legal) return null;
  return view.legal.plays.find((p) => key(p.tile) === page.ui.selected) || null;
}

// Points a play of `play.tile` at `place` would score, as the server says (0 if it does not).
function scoreAt(play, place) {
  const index = play.places.findIndex((p) => placeKey(p) === placeKey(place));
  return play.scores && index >= 0 ? play.scores[index] : 0;
}

export function renderTable(view, page, roundEnd) {
  const layout = roundEnd ? roundEnd.layout : view.layout;
  const play = roundEnd ? null : selectedPlay(view, page);
  const options = { steady: true, scoring: page.ui.scoringSeq === view.seq };
  if (play) {
    options.dots = play.places.filter(Boolean);
    options.onPlace = (place) => playTile(page, play.tile, place);
    options.placeScore = (place) => scoreAt(play, place);
    options.placeLabel = (place) => placeLabel(play, place);
    if (play.places.includes(null)) {
      options.onOpen = () => playTile(page, play.tile, null);
      options.openLabel = placeLabel(play, null);
    }
  }
  options.highlight = page.ui.markedTile ? [page.ui.markedTile] : [];
  const table = $("table");
  table.classList.toggle("round-end", Boolean(roundEnd));
  renderBoard($("board"), layout, options);
  $("end-total").textContent = String(layout.end_total);
  $("board-text").textContent = `${describeLayout(layout)} ${layout.tiles.length ? countedSum(layout) : ""}`;
  renderPlaceButtons(play, page);
}

function placeLabel(play, place) {
  const text = place ? t("play_on", { tile: tileText(play.tile), place: placeText(place) }) : t("opening_play", { tile: tileText(play.tile) });
  const score = scoreAt(play, place);
  return score ? `${text} (+${score})` : text;
}

// The same choices as the dots, as buttons: for keyboards and screen readers.
function renderPlaceButtons(play, page) {
  const list = $("places");
  list.replaceChildren();
  if (!play || play.places.length < 2) return;
  const title = document.createElement("p");
  title.className = "places-title";
  title.textContent = t("choose_place", { tile: tileText(play.tile) });
  list.append(title);
  for (const place of play.places) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "place-button";
    button.dataset.place = placeKey(place);
    button.textContent = placeLabel(play, place);
    button.addEventListener("click", () => playTile(page, play.tile, place));
    list.append(button);
  }
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.className = "link-button";
  cancel.textContent = t("cancel");
  cancel.addEventListener("click", () => select(page, null));
  list.append(cancel);
}

// --- your hand ----------------------------------------------------------------------------

export function renderHand(view, page, roundEnd) {
  const hand = $("hand");
  const area = $("hand-area");
  area.hidden = !view.hand || Boolean(roundEnd);
  $("spectating").hidden = page.me() !== null;
  $("draw").hidden = !(view.legal && view.legal.draw);
  if (area.hidden) {
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
    button.setAttribute("aria-label", tileText(tile));
    button.setAttribute("aria-pressed", String(page.ui.selected === k));
    if (!playable.has(k)) {
      button.setAttribute("aria-disabled", "true");
      button.classList.add("cannot");
    } else {
      button.classList.add("can");
      button.draggable = true;
      button.addEventListener("dragstart", (event) => {
        event.dataTransfer.setData("text/plain", k);
        event.dataTransfer.effectAllowed = "move";
        if (page.ui.selected !== k) select(page, k, { keepHand: true });
      });
    }
    if (view.must_play && key(view.must_play) === k) button.classList.add("must");
    button.append(tileSvg(tile));
    button.addEventListener("click", () => chooseTile(page, k));
    button.addEventListener("keydown", (event) => handKeys(page, event));
    hand.append(button);
  }
  if (focused) {
    const again = hand.querySelector(`[data-tile="${focused}"]`);
    if (again) again.focus();
  }
  const yourTurn = view.legal && (view.legal.plays.length || view.legal.draw);
  $("hand-hint").textContent = !yourTurn ? "" : view.must_play ? t("must_play") : view.legal.draw ? t("draw_hint") : t("select_tile");
}

function handKeys(page, event) {
  const buttons = [...$("hand").querySelectorAll(".hand-tile")];
  const index = buttons.indexOf(event.currentTarget);
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    event.preventDefault();
    const step = event.key === "ArrowRight" ? 1 : buttons.length - 1;
    buttons[(index + step) % buttons.length].focus();
  } else if (event.key === "Escape") {
    select(page, null);
  }
}

function chooseTile(page, k) {
  const view = page.ui.msg.view;
  const play = view.legal && view.legal.plays.find((p) => key(p.tile) === k);
  if (!play) return;
  if (play.places.length === 1) {
    playTile(page, play.tile, play.places[0]);
    return;
  }
  // A second click on the chosen tile puts it back (not the drawn tile that must be played).
  select(page, page.ui.selected === k && !view.must_play ? null : k);
  const first = $("places").querySelector(".place-button");
  if (page.ui.selected && first) first.focus();
}

export function select(page, k, { keepHand = false } = {}) {
  page.ui.selected = k;
  const view = page.ui.msg.view;
  renderTable(view, page, null);
  if (!keepHand) renderHand(view, page, null);
  else for (const b of $("hand").querySelectorAll(".hand-tile")) b.setAttribute("aria-pressed", String(b.dataset.tile === k));
}

function playTile(page, tile, place) {
  page.ui.selected = null;
  page.send({ type: "play", tile, place });
}

// --- points moving ------------------------------------------------------------------------

// "+15 ala" over the board for a while.
export function flashScore(moved, page) {
  const flash = $("score-flash");
  flash.textContent = t("score_flash", { points: moved.points, name: page.names[moved.seat] });
  flash.dataset.seat = String(moved.seat);
  flash.hidden = false;
  flash.classList.remove("show");
  void flash.offsetWidth; // restart the animation
  flash.classList.add("show");
  clearTimeout(flashScore.timer);
  flashScore.timer = setTimeout(() => { flash.hidden = true; }, FLASH_MS);
}

// Chips fly from the payer's stack to the receiver's, and "+N" shows beside the receiver.
export function moveChips(moved) {
  const to = document.querySelector(`.seat-panel[data-seat="${moved.seat}"]`);
  const from = document.querySelector(`.seat-panel[data-seat="${1 - moved.seat}"]`);
  if (!to || !from) return;
  const gain = to.querySelector(".gain");
  gain.textContent = `+${moved.points}`;
  gain.classList.remove("show");
  void gain.offsetWidth;
  gain.classList.add("show");
  if (matchMedia("(prefers-reduced-motion: reduce)").matches) return;
  const start = from.querySelector(".chips").getBoundingClientRect();
  const end = to.querySelector(".chips").getBoundingClientRect();
  const count = Math.min(MAX_FLYING_CHIPS, Math.max(1, Math.round(moved.points / CHIP)));
  for (let i = 0; i < count; i++) {
    const chip = document.createElement("span");
    chip.className = "chip flying-chip";
    chip.style.left = `${start.left + 8}px`;
    chip.style.top = `${start.top + 4}px`;
    document.body.append(chip);
    const dx = end.left - start.left + i * 3;
    const dy = end.top - start.top;
    const flight = chip.animate(
      [{ transform: "translate(0, 0)" }, { transform: `translate(${dx}px, ${dy}px)` }],
      { duration: FLIGHT_MS, delay: i * 60, easing: "ease-in-out", fill: "forwards" },
    );
    flight.onfinish = () => chip.remove();
  }
}
