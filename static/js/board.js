// The board renderer: a layout (engine/view.py layout_view) drawn as SVG dominoes with pips,
// laid out like a real table: every double crosswise (the spinner also outlined in orange), the
// spinner's arms opening off it, long lines turning (clockwise) before they leave the table. Each
// domino is drawn lying along x at the origin and put in place by its group's transform
// (`translate(x y) rotate(angle)`), so a double lies at 90° to its line. Each counted end carries
// its counted contribution as a filled number; `dots` (open places) are drawn as empty dots.
// Also the hand tiles (`tileSvg`). No rules here: the server's view says what is open and what
// counts; this file only places things.

const NS = "http://www.w3.org/2000/svg";
const S = 40; // one half of a tile (a pip square), in SVG units
const GAP = 3;
// The table's steady frame: half its height, in SVG units; its half-width follows the aspect of
// the element it is drawn in. Lines turn before they pass it, so the scale stays put until a
// long round outgrows it.
const FRAME_HALF_HEIGHT = 4.5 * S;
const FRAME_MIN_HALF_WIDTH = 6 * S;
const ARM_ROOM = 2 * S; // kept free beyond each of the spinner's arms until they open
const FRAME_GROWTH = 0.25; // a crowded round's frame grows by this much of itself at a time
const FRAME_MAX_SCALE = 3;
// Without a frame (the rules' figures): distances from the centre at which a line turns.
const FREE_LIMITS = { x: [11 * S, 15 * S, 19 * S, 23 * S], y: [5 * S, 9 * S, 13 * S, 17 * S] };

export const key = (tile) => `${tile[0]}-${tile[1]}`;
export const placeKey = (place) => (place ? `${key(place.tile)}:${place.side}` : "open");
export const tileText = (tile) => `[${tile[0]}|${tile[1]}]`;

const PIPS = {
  0: [],
  1: [[0, 0]],
  2: [[-1, -1], [1, 1]],
  3: [[-1, -1], [0, 0], [1, 1]],
  4: [[-1, -1], [1, -1], [-1, 1], [1, 1]],
  5: [[-1, -1], [1, -1], [0, 0], [-1, 1], [1, 1]],
  6: [[-1, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [1, 1]],
};

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

const turn = ([x, y]) => [-y, x]; // clockwise on screen (y grows downwards)
const turnBack = ([x, y]) => [y, -x]; // anticlockwise
const add = (p, d, k = 1) => [p[0] + d[0] * k, p[1] + d[1] * k];

// Draw one half's pips centred at (cx, cy); the 6 is laid along the tile's long axis.
function pips(group, value, cx, cy, alongX) {
  const r = S * 0.09;
  const step = S * 0.25;
  for (const [a, b] of PIPS[value]) {
    const [dx, dy] = alongX ? [b, a] : [a, b];
    el("circle", { cx: cx + dx * step, cy: cy + dy * step, r, class: "pip" }, group);
  }
}

// A domino whose first half is centred at p1 and second at p2 (adjacent, S apart): drawn lying
// along x at the origin, then turned and moved there by the group's transform.
function domino(group, tile, values, p1, p2, extraClass = "") {
  const cx = (p1[0] + p2[0]) / 2;
  const cy = (p1[1] + p2[1]) / 2;
  const angle = Math.round((Math.atan2(p2[1] - p1[1], p2[0] - p1[0]) * 180) / Math.PI);
  const g = el("g", {
    class: `domino ${extraClass}`.trim(),
    "data-tile": key(tile),
    transform: `translate(${cx} ${cy}) rotate(${angle})`,
  }, group);
  const w = 2 * S - GAP;
  const h = S - GAP;
  el("rect", { x: -w / 2, y: -h / 2, width: w, height: h, rx: S * 0.12, class: "tile-face" }, g);
  el("line", { x1: 0, y1: -h / 2 + 5, x2: 0, y2: h / 2 - 5, class: "tile-bar" }, g);
  pips(g, values[0], -S / 2, 0, true);
  pips(g, values[1], S / 2, 0, true);
  const title = el("title", {}, g);
  title.textContent = tileText(tile);
  const horizontal = angle % 180 === 0;
  return { cx, cy, w: horizontal ? w : h, h: horizontal ? h : w };
}

// Where every placed tile sits, and for each open side the attachment point and direction.
// `limits.x[n]` / `limits.y[n]`: how far from the centre a line may reach after n turns.
function geometry(layout, limits) {
  const tiles = layout.tiles;
  const drawn = [];
  const ends = new Map(); // "a-b:side" -> {at, dir, turns, across}
  let crowded = false; // some tile found no free way and lies on another
  if (!tiles.length) return { drawn, ends, spots: new Map(), crowded };
  const spinner = layout.spinner ? key(layout.spinner) : null;
  const children = new Map();
  for (const t of tiles) {
    if (t.place) children.set(placeKey(t.place), t);
  }

  // The boxes of the tiles laid so far ([left, top, right, bottom]), so that none is laid on
  // another: a line turns (clockwise, else anticlockwise) where going on would hit one.
  const occupied = [];
  function box(at, dir, length, halfAcross) {
    const n = turn(dir);
    const a = add(at, n, -halfAcross);
    const b = add(add(at, dir, length), n, halfAcross);
    const inset = 1; // touching is not overlapping
    return [Math.min(a[0], b[0]) + inset, Math.min(a[1], b[1]) + inset, Math.max(a[0], b[0]) - inset, Math.max(a[1], b[1]) - inset];
  }
  const hits = (r) => occupied.some((o) => r[0] < o[2] && r[2] > o[0] && r[1] < o[3] && r[3] > o[1]);
  // The spinner's arms open last (once both chain sides are taken): their first tiles' room is
  // kept free until they are laid, so that the chains go round it.
  const reserved = new Map(); // arm end key -> its box in `occupied`
  function reserveArm(endKey, at, dir) {
    const room = box(at, dir, ARM_ROOM, S / 2);
    reserved.set(endKey, room);
    occupied.push(room);
  }

  // A double lies crosswise: S deep along its line, 2S across, centred at `c`.
  function crosswise(t, c, dir) {
    const n = turn(dir);
    const value = t.tile[0];
    const isSpinner = key(t.tile) === spinner;
    drawn.push({ t, p1: add(c, n, -S / 2), p2: add(c, n, S / 2), values: [value, value], spinner: isSpinner, centre: c });
    occupied.push(box(add(c, dir, -S / 2), dir, S, S));
    return n;
  }

  // The way a tile `length` long and `halfAcross` to each side of its line goes from attachment
  // point `at` heading `dir`; `turns` counts the line's turns; `across` is how far the previous
  // tile reaches to each side of the line. `fits`: the way lies on no other tile.
  function findWay(at, dir, turns, across, length, halfAcross) {
    // Go on unless the far end would pass this line's limit or the tile would land on another;
    // else turn, the turned tile beside the end of the previous one, its near half touching it.
    // Of the two turns, the one heading away from the centre first: the lines snake outwards.
    // A line past every limit (a long round) goes on straight: the board grows instead.
    const within = (w) => {
      const far = add(w.at, w.dir, length);
      const limit = (w.dir[0] !== 0 ? limits.x : limits.y)[Math.min(w.turns, 3)];
      return (w.dir[0] !== 0 ? far[0] * w.dir[0] : far[1] * w.dir[1]) <= limit;
    };
    const straight = { at, dir, turns };
    const turned = (nd) => ({ at: add(add(at, dir, -S / 2), nd, across), dir: nd, turns: turns + 1 });
    const away = (nd) => nd[0] * at[0] + nd[1] * at[1];
    const bends = [turn(dir), turnBack(dir)].sort((a, b) => away(b) - away(a)).map(turned);
    const ways = within(straight)
      ? [straight, ...bends]
      : [...bends.filter(within), straight, ...bends.filter((w) => !within(w))];
    const way = ways.find((w) => !hits(box(w.at, w.dir, length, halfAcross)));
    return way ? { ...way, fits: true } : { ...ways[0], fits: false };
  }

  // Lay a tile from an end (`at`, `dir`, `turns`, `across` as for `findWay`).
  function lay(t, at, dir, turns, across) {
    const [lo, hi] = t.tile;
    const k = key(t.tile);
    const isDouble = lo === hi;
    const length = isDouble ? S : 2 * S;
    const halfAcross = isDouble ? S : S / 2;
    const way = findWay(at, dir, turns, across, length, halfAcross);
    if (!way.fits) crowded = true;
    ({ at, dir, turns } = way);
    if (!isDouble) occupied.push(box(at, dir, length, halfAcross));
    if (isDouble) {
      const c = add(at, dir, S / 2);
      const n = crosswise(t, c, dir);
      ends.set(`${k}:chain_b`, { at: add(at, dir, S), dir, turns, across: S });
      if (k === spinner) {
        ends.set(`${k}:arm_a`, { at: add(c, n, -S), dir: n.map((v) => -v), turns: 0, across: S / 2 });
        ends.set(`${k}:arm_b`, { at: add(c, n, S), dir: n, turns: 0, across: S / 2 });
        reserveArm(`${k}:arm_a`, add(c, n, -S), n.map((v) => -v));
        reserveArm(`${k}:arm_b`, add(c, n, S), n);
      }
      for (const side of ["chain_b", "arm_a", "arm_b"]) follow(`${k}:${side}`);
      return;
    }
    const joinedValue = t.joined === "high" ? hi : lo;
    const freeValue = t.joined === "high" ? lo : hi;
    const freeSide = t.joined === "high" ? "low" : "high";
    drawn.push({ t, p1: add(at, dir, S / 2), p2: add(at, dir, 1.5 * S), values: [joinedValue, freeValue] });
    ends.set(`${k}:${freeSide}`, { at: add(at, dir, 2 * S), dir, turns, across: S / 2 });
    follow(`${k}:${freeSide}`);
  }

  function follow(endKey) {
    if (reserved.has(endKey)) occupied.splice(occupied.indexOf(reserved.get(endKey)), 1);
    reserved.delete(endKey);
    const child = children.get(endKey);
    if (!child) return;
    const e = ends.get(endKey);
    lay(child, e.at, e.dir, e.turns, e.across);
  }

  const root = tiles[0];
  const [lo, hi] = root.tile;
  const k = key(root.tile);
  if (lo === hi) {
    // An opening double: crosswise at the centre, chain A to the left, chain B to the right.
    crosswise(root, [0, 0], [1, 0]);
    ends.set(`${k}:chain_a`, { at: [-S / 2, 0], dir: [-1, 0], turns: 0, across: S });
    ends.set(`${k}:chain_b`, { at: [S / 2, 0], dir: [1, 0], turns: 0, across: S });
    if (k === spinner) {
      ends.set(`${k}:arm_a`, { at: [0, -S], dir: [0, -1], turns: 0, across: S / 2 });
      ends.set(`${k}:arm_b`, { at: [0, S], dir: [0, 1], turns: 0, across: S / 2 });
      reserveArm(`${k}:arm_a`, [0, -S], [0, -1]);
      reserveArm(`${k}:arm_b`, [0, S], [0, 1]);
    }
    for (const side of ["chain_a", "chain_b", "arm_a", "arm_b"]) follow(`${k}:${side}`);
  } else {
    // A non-double opening: the low half to the left, the high half to the right.
    drawn.push({ t: root, p1: [-S / 2, 0], p2: [S / 2, 0], values: [lo, hi] });
    occupied.push(box([-S, 0], [1, 0], 2 * S, S / 2));
    ends.set(`${k}:low`, { at: [-S, 0], dir: [-1, 0], turns: 0, across: S / 2 });
    ends.set(`${k}:high`, { at: [S, 0], dir: [1, 0], turns: 0, across: S / 2 });
    follow(`${k}:low`);
    follow(`${k}:high`);
  }
  // Each open place's dot goes where a tile played there would lie, and that room is kept, so
  // no dot lies on a tile or on another place's dot (two lines may end facing each other).
  const spots = new Map(); // place key -> {at: the dot's centre, room: that tile's box}
  for (const place of layout.places || []) {
    const e = place && ends.get(placeKey(place));
    if (!e) continue;
    const way = findWay(e.at, e.dir, e.turns, e.across, 2 * S, S / 2);
    if (!way.fits) crowded = true;
    const room = box(way.at, way.dir, 2 * S, S / 2);
    occupied.push(room);
    spots.set(placeKey(place), { at: add(way.at, way.dir, S * 1.1), room });
  }
  return { drawn, ends, spots, crowded };
}

// The frame of a table `aspect` times as wide as high, `scale` times the usual size, and the
// turning limits that keep the lines inside it (the same after any number of turns).
function tableFrame(aspect, scale) {
  const halfHeight = FRAME_HALF_HEIGHT * scale;
  const halfWidth = Math.max(FRAME_MIN_HALF_WIDTH * scale, halfHeight * aspect);
  const every = (limit) => [limit, limit, limit, limit];
  const limits = { x: every(halfWidth - 1.5 * S), y: every(halfHeight - 1.5 * S) };
  return { halfWidth, halfHeight, limits };
}

// The table's frame and the tiles laid in it: the usual frame, or (for a round too crowded to
// lie in it without a tile on another) the smallest larger one that has room.
function framedGeometry(layout, aspect) {
  for (let scale = 1; ; scale += FRAME_GROWTH) {
    const frame = tableFrame(aspect, scale);
    const laid = geometry(layout, frame.limits);
    if (!laid.crowded || scale >= FRAME_MAX_SCALE) return { frame, ...laid };
  }
}

/**
 * Draw `layout` into `svg`.
 * options.dots: places to mark with an empty dot ([{tile, side}]), or "open" for every open place.
 * options.onPlace(place): makes each dot a button that calls it (keyboard too).
 * options.placeLabel(place): the accessible name of a dot.
 * options.placeScore(place): the points a play there would score (shown as "+N" on the dot).
 * options.highlight: keys of tiles to emphasise (the last play).
 * options.scoring: mark the counted ends as having just scored.
 * options.steady: draw in the table's steady frame (fitted to the element's shape) instead of
 * fitting the drawing to its tiles.
 */
export function renderBoard(svg, layout, options = {}) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const area = svg.getBoundingClientRect();
  const aspect = area.width && area.height ? area.width / area.height : 2;
  const { frame, drawn, ends, spots } = options.steady
    ? framedGeometry(layout, aspect)
    : { frame: null, ...geometry(layout, FREE_LIMITS) };
  const root = el("g", { class: "board-root" }, svg);
  let minX = -2 * S, minY = -1.5 * S, maxX = 2 * S, maxY = 1.5 * S;
  if (frame) {
    [minX, maxX, minY, maxY] = [-frame.halfWidth, frame.halfWidth, -frame.halfHeight, frame.halfHeight];
  }
  const grow = (x, y, m = 0) => {
    minX = Math.min(minX, x - m); maxX = Math.max(maxX, x + m);
    minY = Math.min(minY, y - m); maxY = Math.max(maxY, y + m);
  };
  const highlight = new Set(options.highlight || []);
  for (const d of drawn) {
    const isDouble = d.t.tile[0] === d.t.tile[1];
    const cls = [isDouble ? "double" : "", d.spinner ? "spinner" : "", highlight.has(key(d.t.tile)) ? "last-played" : ""].join(" ");
    const box = domino(root, d.t.tile, d.values, d.p1, d.p2, cls);
    grow(box.cx - box.w / 2, box.cy - box.h / 2, S * 0.6);
    grow(box.cx + box.w / 2, box.cy + box.h / 2, S * 0.6);
  }
  // Counted ends: a filled number on the end that counts (the spinner: on its middle).
  const marks = el("g", { class: options.scoring ? "counted-marks scoring" : "counted-marks" }, root);
  for (const c of layout.counted || []) {
    let pos;
    if (c.side === null) {
      const sp = drawn.find((d) => d.spinner);
      if (!sp) continue;
      pos = add(sp.centre, [1, -1], S * 0.78); // beside the spinner, off its pips
    } else {
      const e = ends.get(`${key(c.tile)}:${c.side}`);
      if (!e) continue;
      pos = add(e.at, e.dir, S * 0.36); // just off the counted end
    }
    grow(pos[0], pos[1], S * 0.5);
    const g = el("g", { class: "counted", "data-counted": c.side === null ? `${key(c.tile)}:spinner` : `${key(c.tile)}:${c.side}` }, marks);
    el("circle", { cx: pos[0], cy: pos[1], r: S * 0.32 }, g);
    const text = el("text", { x: pos[0], y: pos[1], "text-anchor": "middle", "dominant-baseline": "central" }, g);
    text.textContent = String(c.value);
  }
  // Empty dots on places.
  const dotPlaces = options.dots === "open" ? layout.places || [] : options.dots || [];
  const dots = el("g", { class: "place-dots" }, root);
  for (const place of dotPlaces) {
    const spot = spots.get(placeKey(place));
    if (!spot) continue;
    const pos = spot.at;
    const [left, top, right, bottom] = spot.room.map((v, i) => v + (i < 2 ? GAP / 2 : -GAP / 2));
    grow(left, top);
    grow(right, bottom);
    grow(pos[0], pos[1], S * 0.9);
    const g = el("g", { class: "place-dot", "data-place": placeKey(place) }, dots);
    // The outline of the tile a play here would lay: it shows which end the dot belongs to
    // where a line turns, or two ends lie side by side, and it is the place's touch area (no
    // two overlap).
    const outline = { x: left, y: top, width: right - left, height: bottom - top, rx: S * 0.12 };
    el("rect", { ...outline, class: "place-room" }, g);
    el("circle", { cx: pos[0], cy: pos[1], r: S * 0.3 }, g);
    const score = options.placeScore ? options.placeScore(place) : 0;
    if (score) {
      const label = el("text", { x: pos[0], y: pos[1] + S * 0.62, class: "place-score", "text-anchor": "middle", "dominant-baseline": "central" }, g);
      label.textContent = `+${score}`;
    }
    if (options.onPlace) {
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "button");
      g.classList.add("active");
      if (options.placeLabel) g.setAttribute("aria-label", options.placeLabel(place));
      g.addEventListener("click", () => options.onPlace(place));
      g.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          options.onPlace(place);
        }
      });
      g.addEventListener("dragover", (event) => { event.preventDefault(); g.classList.add("drop"); });
      g.addEventListener("dragleave", () => g.classList.remove("drop"));
      g.addEventListener("drop", (event) => { event.preventDefault(); options.onPlace(place); });
    }
  }
  if (!drawn.length && options.onOpen) {
    // The opening: one dot in the middle.
    const g = el("g", { class: "place-dot active", "data-place": "open", tabindex: "0", role: "button" }, dots);
    if (options.openLabel) g.setAttribute("aria-label", options.openLabel);
    el("circle", { cx: 0, cy: 0, r: S * 0.45 }, g);
    g.addEventListener("click", () => options.onOpen());
    g.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); options.onOpen(); }
    });
    g.addEventListener("dragover", (event) => event.preventDefault());
    g.addEventListener("drop", (event) => { event.preventDefault(); options.onOpen(); });
  }
  const pad = S * 0.3;
  svg.setAttribute("viewBox", `${minX - pad} ${minY - pad} ${maxX - minX + 2 * pad} ${maxY - minY + 2 * pad}`);
  svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
}

// A single domino as a small SVG (for hands), upright or lying.
export function tileSvg(tile, { upright = true, hidden = false } = {}) {
  const svg = el("svg", { class: "tile-svg", "aria-hidden": "true", focusable: "false" });
  const [lo, hi] = tile || [0, 0];
  const g = el("g", {}, svg);
  if (upright) {
    svg.setAttribute("viewBox", `${-S / 2 - 2} ${-S - 2} ${S + 4} ${2 * S + 4}`);
    if (hidden) el("rect", { x: -S / 2 + 1, y: -S + 1, width: S - 2, height: 2 * S - 2, rx: 5, class: "tile-back" }, g);
    else domino(g, tile, [lo, hi], [0, -S / 2], [0, S / 2]);
  } else {
    svg.setAttribute("viewBox", `${-S - 2} ${-S / 2 - 2} ${2 * S + 4} ${S + 4}`);
    domino(g, tile, [lo, hi], [-S / 2, 0], [S / 2, 0]);
  }
  return svg;
}
