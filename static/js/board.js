// The board renderer: a layout (engine/view.py layout_view) drawn as SVG dominoes with pips,
// laid out like a real table: the spinner crosswise and outlined in orange, its arms opening off
// it, long lines turning (clockwise) before they leave the board. Each counted end carries its
// counted contribution as a filled number; `dots` (open places) are drawn as empty dots.
// Also the hand tiles (`tileSvg`). No rules here: the server's view says what is open and what
// counts; this file only places things.

const NS = "http://www.w3.org/2000/svg";
const S = 40; // one half of a tile (a pip square), in SVG units
const GAP = 3;
// Distances from the centre at which a line turns, by how many turns it has made already.
const LIMIT_X = [11 * S, 15 * S, 19 * S, 23 * S];
const LIMIT_Y = [5 * S, 9 * S, 13 * S, 17 * S];

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

// A domino whose first half is centred at p1 and second at p2 (adjacent, S apart).
function domino(group, tile, values, p1, p2, extraClass = "") {
  const g = el("g", { class: `domino ${extraClass}`.trim(), "data-tile": key(tile) }, group);
  const horizontal = p1[1] === p2[1];
  const cx = (p1[0] + p2[0]) / 2;
  const cy = (p1[1] + p2[1]) / 2;
  const w = horizontal ? 2 * S - GAP : S - GAP;
  const h = horizontal ? S - GAP : 2 * S - GAP;
  el("rect", { x: cx - w / 2, y: cy - h / 2, width: w, height: h, rx: S * 0.12, class: "tile-face" }, g);
  if (horizontal) {
    el("line", { x1: cx, y1: cy - h / 2 + 5, x2: cx, y2: cy + h / 2 - 5, class: "tile-bar" }, g);
  } else {
    el("line", { x1: cx - w / 2 + 5, y1: cy, x2: cx + w / 2 - 5, y2: cy, class: "tile-bar" }, g);
  }
  pips(g, values[0], p1[0], p1[1], !horizontal);
  pips(g, values[1], p2[0], p2[1], !horizontal);
  const title = el("title", {}, g);
  title.textContent = tileText(tile);
  return { cx, cy, w, h };
}

// Where every placed tile sits, and for each open side the attachment point and direction.
function geometry(layout) {
  const tiles = layout.tiles;
  const drawn = [];
  const ends = new Map(); // "a-b:side" -> {at, dir, tip}
  if (!tiles.length) return { drawn, ends };
  const spinner = layout.spinner ? key(layout.spinner) : null;
  const children = new Map();
  for (const t of tiles) {
    if (!t.place) continue;
    const k = placeKey(t.place);
    children.set(k, t);
  }

  // Lay a tile from attachment point `at` heading `dir`; `turns` counts the line's turns.
  function lay(t, at, dir, turns) {
    const [lo, hi] = t.tile;
    const k = key(t.tile);
    const isDouble = lo === hi;
    if (isDouble && k === spinner) {
      // Crosswise: S deep along the line, 2S across.
      const c = add(at, dir, S / 2);
      const n = turn(dir);
      const p1 = add(c, n, -S / 2);
      const p2 = add(c, n, S / 2);
      drawn.push({ t, p1, p2, values: [lo, lo], spinner: true, centre: c });
      const chainB = add(at, dir, S);
      ends.set(`${k}:chain_b`, { at: chainB, dir, turns, tip: add(at, dir, S / 2) });
      ends.set(`${k}:arm_a`, { at: add(c, n, -S), dir: n.map((v) => -v), turns: 0, tip: add(c, n, -S / 2) });
      ends.set(`${k}:arm_b`, { at: add(c, n, S), dir: n, turns: 0, tip: add(c, n, S / 2) });
      follow(`${k}:chain_b`);
      follow(`${k}:arm_a`);
      follow(`${k}:arm_b`);
      return;
    }
    // Turn before the far end would pass the limit for this line.
    const far = add(at, dir, 2 * S);
    const limit = dir[0] !== 0 ? LIMIT_X[Math.min(turns, 3)] : LIMIT_Y[Math.min(turns, 3)];
    const coord = dir[0] !== 0 ? far[0] * dir[0] : far[1] * dir[1];
    if (coord > limit) {
      const nd = turn(dir);
      // The turned tile sits beside the last half of the previous tile, its near half touching it.
      at = add(add(at, dir, -S / 2), nd, S / 2);
      dir = nd;
      turns += 1;
    }
    const near = add(at, dir, S / 2);
    const farHalf = add(at, dir, 1.5 * S);
    const joinedValue = t.joined === "high" ? hi : lo;
    const freeValue = t.joined === "high" ? lo : hi;
    const freeSide = isDouble ? "chain_b" : t.joined === "high" ? "low" : "high";
    drawn.push({ t, p1: near, p2: farHalf, values: [joinedValue, freeValue] });
    const next = add(at, dir, 2 * S);
    ends.set(`${k}:${freeSide}`, { at: next, dir, turns, tip: add(at, dir, 1.5 * S) });
    follow(`${k}:${freeSide}`);
  }

  function follow(endKey) {
    const child = children.get(endKey);
    if (!child) return;
    const e = ends.get(endKey);
    lay(child, e.at, e.dir, e.turns);
  }

  const root = tiles[0];
  const [lo, hi] = root.tile;
  const k = key(root.tile);
  if (lo === hi && k === spinner) {
    // The opening spinner: crosswise at the centre, chain A to the left, chain B to the right.
    const c = [0, 0];
    drawn.push({ t: root, p1: [0, -S / 2], p2: [0, S / 2], values: [lo, lo], spinner: true, centre: c });
    ends.set(`${k}:chain_a`, { at: [-S / 2, 0], dir: [-1, 0], turns: 0, tip: [-S / 4, 0] });
    ends.set(`${k}:chain_b`, { at: [S / 2, 0], dir: [1, 0], turns: 0, tip: [S / 4, 0] });
    ends.set(`${k}:arm_a`, { at: [0, -S], dir: [0, -1], turns: 0, tip: [0, -S / 2] });
    ends.set(`${k}:arm_b`, { at: [0, S], dir: [0, 1], turns: 0, tip: [0, S / 2] });
    for (const side of ["chain_a", "chain_b", "arm_a", "arm_b"]) follow(`${k}:${side}`);
  } else {
    // A non-double opening: the low half to the left, the high half to the right.
    const sides = lo === hi ? ["chain_a", "chain_b"] : ["low", "high"];
    drawn.push({ t: root, p1: [-S / 2, 0], p2: [S / 2, 0], values: [lo, hi] });
    ends.set(`${k}:${sides[0]}`, { at: [-S, 0], dir: [-1, 0], turns: 0, tip: [-S / 2, 0] });
    ends.set(`${k}:${sides[1]}`, { at: [S, 0], dir: [1, 0], turns: 0, tip: [S / 2, 0] });
    follow(`${k}:${sides[0]}`);
    follow(`${k}:${sides[1]}`);
  }
  return { drawn, ends };
}

/**
 * Draw `layout` into `svg`.
 * options.dots: places to mark with an empty dot ([{tile, side}]), or "open" for every open place.
 * options.onPlace(place): makes each dot a button that calls it (keyboard too).
 * options.placeLabel(place): the accessible name of a dot.
 * options.highlight: keys of tiles to emphasise (the last play).
 */
export function renderBoard(svg, layout, options = {}) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const { drawn, ends } = geometry(layout);
  const root = el("g", { class: "board-root" }, svg);
  let minX = -2 * S, minY = -1.5 * S, maxX = 2 * S, maxY = 1.5 * S;
  const grow = (x, y, m = 0) => {
    minX = Math.min(minX, x - m); maxX = Math.max(maxX, x + m);
    minY = Math.min(minY, y - m); maxY = Math.max(maxY, y + m);
  };
  const highlight = new Set(options.highlight || []);
  for (const d of drawn) {
    const cls = [d.spinner ? "spinner" : "", highlight.has(key(d.t.tile)) ? "last-played" : ""].join(" ");
    const box = domino(root, d.t.tile, d.values, d.p1, d.p2, cls);
    grow(box.cx - box.w / 2, box.cy - box.h / 2, S * 0.6);
    grow(box.cx + box.w / 2, box.cy + box.h / 2, S * 0.6);
  }
  // Counted ends: a filled number on the end that counts (the spinner: on its middle).
  const marks = el("g", { class: "counted-marks" }, root);
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
    const e = ends.get(`${key(place.tile)}:${place.side}`);
    if (!e) continue;
    const pos = add(e.at, e.dir, S * 1.1); // beyond the counted number, where the tile would go
    grow(pos[0], pos[1], S * 0.6);
    const g = el("g", { class: "place-dot", "data-place": placeKey(place) }, dots);
    el("circle", { cx: pos[0], cy: pos[1], r: S * 0.3 }, g);
    if (options.onPlace) {
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "button");
      g.classList.add("active");
      if (options.placeLabel) g.setAttribute("aria-label", options.placeLabel(place));
      const hit = el("circle", { cx: pos[0], cy: pos[1], r: S * 0.6, class: "hit" }, g);
      hit.setAttribute("fill", "transparent");
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
